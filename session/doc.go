// Package session owns ink's transcripts on disk: the JSONL format (a header
// line, then message, attempt and compaction entries), the single appender
// of a transcript, the reader that tells a torn final line from interior
// corruption and rebuilds the history a model sees from the last
// compaction, byte-exact repair of a torn tail, the order-aware scan of tool
// call/result pairs used before a resume, the child launch record stored in a
// child's header, the TaskRecord stored beside a parent's `task` result (and
// the list of them, taskRecords, beside a message that collects background
// children: a task_wait result), and the lookup and listing of sessions and
// their children under $INK_HOME.
//
// The package takes no locks: whoever appends to or repairs a transcript must
// hold its lease (package lease). Reading never needs one.
package session
