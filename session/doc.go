// Package session owns ink's transcripts on disk: the JSONL format (a header
// line, then message, attempt and compaction entries), the single appender
// of a transcript, the reader that tells a torn final line from interior
// corruption and rebuilds the history a model sees from the last
// compaction, byte-exact repair of a torn tail, the order-aware scan of tool
// call/result pairs used before a resume, the child launch record stored in a
// child's header, the TaskRecord stored beside a parent's `task` result (and
// the list of them, taskRecords, beside a message that collects background
// children: a task_wait result), and the lookup and listing of sessions and
// their children under $INK_HOME (a child's file name, <id>.jsonl, is the
// index a resume finds it by: ChildHolders).
//
// It also owns the closed sets every other package of ink shares, being the
// lowest one they all import: Status (how an attempt or a task ended, the
// same string on disk it always was; an unknown one does not decode), Cap
// (the cap that wrapped an agent up early, likewise) and Code (why ink
// refused to run or continue a transcript, carried beside its message,
// never inside it).
//
// Four readers serve four needs, each reading line by line with memory of
// the order of the longest line: Open parses a whole transcript; OpenLean
// parses it for supervision, keeping long messages that are not about tasks
// as skeletons; ReadForResume reads it in one pass for continuing it,
// decoding only the history the model sees (clipping a message whose line
// passes MaxResumeLine, and of a history past MaxResumeHistory only its
// most recent messages; decode.go decodes its lines in one pass, into
// buffers that may be huge pages), skimming the assistant lines everywhere for the
// call ids a continued run must not reuse (skim.go), and reading of a user
// or toolResult line before that history only its entry prefix, so that
// its cost is one scan of the file plus the reading of that history, and
// its memory follows the history rather than the file (its contract with
// Open is at ReadForResume); ReadTail reads a
// transcript backwards from its end, only as far as its last attempt end
// and message, which is all a resume's validation needs.
//
// A worker that shares no disk with its supervisor writes through its
// supervisor: it encodes its entries itself (EncodeEntries) and sends them
// in numbered batches; the supervisor passes each through the attempt's
// Fence, which writes it (Writer.AppendLines) only for the attempt and
// epoch it fences, in sequence, under the lease, and only entries a worker
// may author (no header, no start, no other attempt's end, no compaction of
// history the model did not see). The first batch it refuses closes it.
//
// The package takes no locks: whoever appends to or repairs a transcript must
// hold its lease (package lease). Reading never needs one.
package session
