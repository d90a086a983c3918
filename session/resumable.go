package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/model"
)

// Resumable is a transcript read for continuing it (ReadForResume), in one
// pass over the file that keeps only what a resume needs: the header; the
// id and name of every tool call of the file, which a continued run must
// not reuse; the attempts' summary; the history the model sees — from the
// last compaction on — decoded in full, and its messages' skeletons (their
// roles and the ids and names of their tool calls and results) for the
// call/result check. Its memory grows with that history and with the
// number of messages since the last compaction and of tool calls, not with
// the size of their contents. It is a snapshot: later appends are not
// seen. It is not safe for concurrent use.
type Resumable struct {
	Path   string
	Header Header
	// Size is the size of the file as read (as repaired, after RepairTail).
	Size int64
	// Torn describes the final line as Transcript.Torn does; nil when the
	// file ends cleanly (or after RepairTail).
	Torn *TornTail

	// Clipped lists the message lines of the history past MaxResumeLine,
	// which the View holds clipped (see ReadForResume).
	Clipped []ClippedLine
	// Omitted, when the history since the last compaction passes
	// MaxResumeHistory, is the part of it the View leaves out.
	Omitted *Omitted

	// skeleton is the skeleton of the history (Skeleton); calls every
	// tool call of the file, in order.
	skeleton []model.Message
	calls    []callRef
	view     *View
	attempts Lifetime
	lastEnd  *AttemptEntry
	// open is the last attempt's start entry while no end followed it.
	open *AttemptEntry
	// lines counts the newlines of the file up to Size, a torn final
	// line's excluded.
	lines int
	// skipped says the quick read was used: lines before the history may
	// have been read from their start alone (false: every line was
	// checked, as Open checks it).
	skipped bool
	// from is the number of the first line the history may hold: every
	// message line before it is outside the history, every one from it on
	// inside.
	from int
	// decoded counts the bytes of the lines decoded in full (the history
	// the View holds); every other line was skimmed or skipped.
	decoded int64
}

// callRef is a tool call as a resume keeps it: its id and name, a third
// of a model.ToolCall, for there is one for every call of the file.
type callRef struct{ id, name string }

// Lifetime sums every attempt recorded in a transcript.
type Lifetime struct {
	// Attempts counts the attempts that started.
	Attempts int `json:"attempts"`
	// Usage sums the usage of every attempt that recorded its end; it is
	// Incomplete when an attempt ended without usage or did not record its
	// end.
	Usage model.Usage `json:"usage"`
	// ended counts the end entries.
	ended int
}

// Ended counts the attempts that recorded their end, which the JSON form
// of a Lifetime leaves out; WithEnded sets it on a Lifetime decoded from
// JSON (a remote worker's, which gets both over the wire).
func (l Lifetime) Ended() int { return l.ended }

// WithEnded returns l counting n ended attempts.
func (l Lifetime) WithEnded(n int) Lifetime {
	l.ended = n
	return l
}

// add counts one attempt entry.
func (l *Lifetime) add(a AttemptEntry) {
	switch a.Phase {
	case PhaseStart:
		l.Attempts++
	case PhaseEnd:
		l.ended++
		if a.Usage == nil {
			l.Usage.Incomplete = true
		} else {
			l.Usage = l.Usage.Add(*a.Usage)
		}
	}
}

// Total is the lifetime as a reader reports it: incomplete when fewer
// attempts ended than started.
func (l Lifetime) Total() Lifetime {
	if l.ended < l.Attempts {
		l.Usage.Incomplete = true
	}
	return l
}

// Started returns the lifetime once one more attempt has started.
func (l Lifetime) Started() Lifetime {
	l.Attempts++
	return l
}

// With returns the lifetime once an attempt that ended with usage u (nil:
// unknown) is added to it; the attempt's start must already be counted.
func (l Lifetime) With(u *model.Usage) Lifetime {
	l.add(AttemptEntry{Phase: PhaseEnd, Usage: u})
	return l.Total()
}

// MaxResumeLine is the resume line bound: a message of the model's history
// whose transcript line is longer than this (a reply from before ink
// bounded replies, a huge prompt) is given to the model with each of its
// pieces cut to its first and last resumeKeep/2 bytes, around a note that
// names the bound. The transcript keeps the line whole. No model could
// read such a message whole, and holding every one of them whole would
// make a resume's memory grow with the history instead of its longest line.
const MaxResumeLine = model.MaxReplyBytes

// resumeKeep is how much of each piece of a clipped message is kept.
const resumeKeep = 256 << 10

// MaxResumeHistory is the resume history bound: of the history since the
// last compaction, a resume decodes and gives the model only the most
// recent messages that fit in it, after a note that says how much was
// left out. A message counts its transcript line, or what the model sees
// of a line past MaxResumeLine. 16 MiB is over 5 million tokens at ink's
// estimate of three bytes to a token, four times the largest window of any
// model ink knows: no model could take more, and a history that was not
// compacted for longer (written before ink compacted, or for a model
// whose window ink did not know) would otherwise make a resume cost what
// the whole file costs. The transcript keeps every line; every assistant
// line is still skimmed, so the reserved call ids cover the whole file,
// while of the prompts and results left out only their start is read.
const MaxResumeHistory = 16 << 20

// Omitted is the part of the history since the last compaction that a
// resume left out (MaxResumeHistory).
type Omitted struct {
	// Messages counts the messages left out; Bytes their transcript lines.
	Messages int
	Bytes    int64
}

// omittedNote is the user message that stands for the messages a resume
// left out, after the last compaction's summary if there is one.
func omittedNote(o Omitted) model.Message {
	return model.UserText(fmt.Sprintf("[ink] When this session was resumed, the %d earliest messages of its history since the last summary (%s of transcript) were left out: more than any model's context window takes. The transcript keeps them. The messages after this one are the most recent ones, kept as they were. Continue the task from there.",
		o.Messages, model.SizeString(o.Bytes)))
}

// ClippedLine is one message line of the history past MaxResumeLine.
type ClippedLine struct {
	Line  int   // its line number
	Bytes int64 // its length
}

// ReadForResume reads the transcript at path in one pass for continuing it.
// It keeps the checks of Open where they decide what a continued run
// sees, and skips the bodies of the lines no run will see again:
//
//   - Every line is found (one sequential scan) and every entry that is not
//     a message (header, attempts, compactions) is decoded and checked.
//   - Every assistant message line is checked and skimmed (skim.go): its
//     tool call ids are the ids a continued run must not reuse (CallIDs).
//   - The final line is always checked in full: a torn or invalid final
//     line is left out and described in Torn.
//   - The messages of the history the model sees — from the last
//     compaction's retained tail on, bounded as below — are checked and
//     decoded, and those that MaxResumeHistory's bound weighs are skimmed.
//   - A user or toolResult message line before that history, whose start
//     reads as this package writes it ({"type":"message","id":"…",
//     "message":{"role":"user" or "toolResult"…), is taken to be that
//     message: only its start is read. Its body is not checked, so damage
//     inside it does not stop a resume (Open refuses such a file; its
//     bytes are left as they are). A line whose start is not of that shape
//     is checked in full.
//
// Any other invalid line, or a compaction whose retained tail does not
// start at a message the model saw, is an error naming the file and line
// (the error Open gives); symlinks, directories, empty files and files
// without a valid header are refused. On any file Open reads, ReadForResume
// gives the same history, call ids, attempts, torn tail, clipping and
// omission, unless a skipped line's body is damaged or redefines what its
// start says (a key written twice, which this package never writes).
//
// A message of the history whose line passes MaxResumeLine is decoded
// alone and clipped at once (Clipped lists them), so memory stays of the
// order of the longest line. Of a history past MaxResumeHistory only its
// most recent messages that fit are decoded, after a note (Omitted says
// what was left out), and the messages it leaves out are skipped as above,
// so that a transcript costs one scan and the reading of what the model
// will see, not the checking of the whole file.
func ReadForResume(path string) (*Resumable, error) {
	r, err := readForResume(path, true)
	if err != nil {
		// Whatever stopped the quick read, the full one gives Open's
		// verdict: the first damaged line, skipped bodies included.
		return readForResume(path, false)
	}
	return r, nil
}

// readForResume is ReadForResume; skip, it skips the lines it may (see
// there), else it checks every line as Open does.
func readForResume(path string, skip bool) (*Resumable, error) {
	f, fi, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	size := fi.Size()
	if size == 0 {
		return nil, notStarted(path)
	}
	r := &Resumable{Path: path, Size: size}
	seg := historySegment{f: f, path: path, from: 2}
	lr := newLineReader(io.LimitReader(f, size), f, size)
	// skippable says whether the line that starts with head and ends at
	// end may be left unread past its start.
	skippable := func(head []byte, end int64) bool {
		if !skip || end == size {
			return false
		}
		_, _, ok := nonAssistantPrefix(head)
		return ok
	}
	for {
		line, n, offset, lineNo, err := lr.next(skippable)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", path, err)
		}
		terminated := line[len(line)-1] == '\n'
		last := offset+int64(n) == size
		if lineNo == 1 {
			h, err := parseHeader(line)
			if err != nil {
				if errors.Is(err, ErrInvalidLaunch) {
					return nil, fmt.Errorf("%s:1: %w", path, err)
				}
				if !terminated {
					return nil, notStarted(path)
				}
				return nil, fmt.Errorf("%s:1: %v; this is not an ink transcript or its first line is damaged", path, err)
			}
			r.Header = h
			if terminated {
				r.lines++
			} else {
				r.Torn = &TornTail{Offset: offset, Line: lineNo, Bytes: n, Reason: "the header line lacks its newline", NeedsNewline: true}
			}
			continue
		}
		if skip && !last {
			if id, role, ok := nonAssistantPrefix(line); ok {
				// Not read further unless the model's history keeps it.
				seg.message(segmentMessage{id: id, role: role, offset: offset, length: n, line: lineNo})
				r.lines++
				continue
			}
		}
		e, skel, err := readEntryLine(line)
		if err != nil {
			if last {
				r.Torn = &TornTail{Offset: offset, Line: lineNo, Bytes: n, Reason: tornReason(err, terminated)}
				break
			}
			return nil, fmt.Errorf("%s:%d: %v; the transcript is damaged before its last line, so ink will not guess what it held (start a new session)", path, lineNo, err)
		}
		switch {
		case skel != nil:
			for _, c := range skel.ToolCalls {
				r.calls = append(r.calls, callRef{id: c.ID, name: c.Name})
			}
			seg.message(segmentMessage{id: e.ID, role: skel.Role, offset: offset, length: n, line: lineNo, skel: skel})
		case e.Attempt != nil:
			r.attempts.add(*e.Attempt)
			a := *e.Attempt
			switch a.Phase {
			case PhaseEnd:
				r.lastEnd = &a
				if r.open != nil && r.open.AttemptID == a.AttemptID {
					r.open = nil
				}
			case PhaseStart:
				r.open = &a
			}
		case e.Compaction != nil:
			if err := seg.compaction(e, lineNo); err != nil {
				return nil, fmt.Errorf("%s:%d: %v; the transcript is damaged, so ink will not guess what the model saw (start a new session)", path, lineNo, err)
			}
		}
		if terminated {
			r.lines++
		} else {
			r.Torn = &TornTail{Offset: offset, Line: lineNo, Bytes: n, Reason: "the final entry lacks its newline", NeedsNewline: true}
		}
	}
	seg.win = lr.release()[:0] // a buffer to reuse, holding nothing yet
	if r.Omitted, err = seg.bound(MaxResumeHistory); err != nil {
		return nil, err
	}
	r.skipped = skip
	r.skeleton = seg.skeleton(r.calls)
	r.from = seg.from
	if len(seg.msgs) > 0 {
		r.from = seg.msgs[0].line
	}
	if r.view, r.Clipped, err = seg.decode(); err != nil {
		return nil, err
	}
	for _, m := range seg.msgs {
		r.decoded += int64(m.length)
	}
	return r, nil
}

// nonAssistantPrefix reads the start of a message line as this package
// writes it, {"type":"message","id":"<id>","message":{"role":"<role>"
// followed by "," or "}", and returns its id and role when the role is user
// or toolResult. ok is false for anything else (an escaped or long id,
// another order, spaces), which is then checked in full.
func nonAssistantPrefix(line []byte) (id string, role model.Role, ok bool) {
	const head, mid = `{"type":"message","id":"`, `","message":{"role":"`
	if !bytes.HasPrefix(line, []byte(head)) {
		return "", "", false
	}
	rest := line[len(head):]
	end := bytes.IndexByte(rest[:min(len(rest), maxPrefixID+1)], '"')
	if end <= 0 {
		return "", "", false
	}
	raw := rest[:end]
	for _, c := range raw {
		if c < 0x20 || c == '\\' {
			return "", "", false
		}
	}
	if !utf8.Valid(raw) {
		return "", "", false
	}
	rest = rest[end:]
	if !bytes.HasPrefix(rest, []byte(mid)) {
		return "", "", false
	}
	rest = rest[len(mid):]
	for _, r := range []model.Role{model.RoleUser, model.RoleToolResult} {
		if len(rest) > len(r)+1 && string(rest[:len(r)]) == string(r) && rest[len(r)] == '"' && (rest[len(r)+1] == ',' || rest[len(r)+1] == '}') {
			return string(raw), r, true
		}
	}
	return "", "", false
}

// maxPrefixID is the longest entry id nonAssistantPrefix reads.
const maxPrefixID = 128

// readEntryLine checks one entry line after the header. A message comes
// back as its skeleton (and e holds only its id); other entries decoded.
func readEntryLine(line []byte) (e Entry, skel *model.Message, err error) {
	if bytes.HasPrefix(line, messagePrefix) {
		if s, err := skimMessageLine(line); err == nil {
			return Entry{Type: EntryMessage, ID: s.id}, &s.msg, nil
		}
	}
	e, err = decodeEntry(line)
	if err != nil {
		return Entry{}, nil, err
	}
	if e.Message != nil {
		sk := skeletonOf(*e.Message)
		return Entry{Type: EntryMessage, ID: e.ID}, &sk, nil
	}
	return e, nil, nil
}

// skeletonOf keeps the role and the ids and names of m's tool calls and
// results.
func skeletonOf(m model.Message) model.Message {
	out := model.Message{Role: m.Role}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name})
	}
	for _, r := range m.Results {
		out.Results = append(out.Results, model.ToolResult{ToolCallID: r.ToolCallID, ToolName: r.ToolName})
	}
	return out
}

// historySegment follows, while a transcript is read, where the history the
// model sees begins (View.Apply's rules, by file offset): every message
// line from start on, after the last compaction's summary.
type historySegment struct {
	f       *os.File
	path    string
	msgs    []segmentMessage // the messages of the current history
	summary *string          // the last compaction's summary
	omitted *Omitted         // the messages bound left out
	// long holds, by offset, the lines past MaxResumeLine that bound
	// decoded, until decode takes them.
	long map[int64]decodedLine
	buf  []byte // check's buffer
	// win holds the file's bytes from winAt on: whole message lines that
	// load reads a few MiB at a time, from the end of the history back.
	win   []byte
	winAt int64
	// arena holds the texts of the messages load decodes, which the View
	// will hold, in buffers of up to arenaChunk.
	arena *arena
	// from is the number of the line after the last compaction's (2
	// before any compaction).
	from int
}

type segmentMessage struct {
	id     string
	role   model.Role
	offset int64
	length int
	line   int
	// skel is its skeleton, once checked (nil before): a message whose
	// start alone was read (nonAssistantPrefix) is checked only when the
	// history needs it.
	skel *model.Message
	// msg is the message decoded, once load has (nil before, and for a
	// line past MaxResumeLine, which decodeLong holds clipped).
	msg *model.Message
}

func (s *historySegment) message(m segmentMessage) {
	s.msgs = append(s.msgs, m)
}

// check reads and checks the message line msgs[i] if its start alone was
// read, keeps its skeleton and returns it. A line that does not check, or
// is not the message its start said, is an error (ReadForResume then reads
// the file again in full, for Open's verdict).
func (s *historySegment) check(i int) (model.Message, error) {
	m := &s.msgs[i]
	if m.skel != nil {
		return *m.skel, nil
	}
	s.buf = slices.Grow(s.buf[:0], m.length)[:m.length]
	if _, err := s.f.ReadAt(s.buf, m.offset); err != nil {
		return model.Message{}, fmt.Errorf("read transcript %s: %w", s.path, err)
	}
	e, skel, err := readEntryLine(s.buf)
	if len(s.buf) > decodeChunk {
		s.buf = nil // a long line's buffer: let it go
	}
	if err != nil {
		return model.Message{}, fmt.Errorf("%s:%d: %v; the transcript is damaged before its last line, so ink will not guess what it held (start a new session)", s.path, m.line, err)
	}
	if skel == nil || e.ID != m.id || skel.Role != m.role {
		return model.Message{}, fmt.Errorf("%s:%d: the line is not the %s message %s its start says", s.path, m.line, m.role, m.id)
	}
	m.skel = skel
	return *skel, nil
}

// skeleton returns the skeletons of the history's messages, after (when
// some of their results answer calls made before the history, as after a
// compaction that kept no message) one assistant skeleton holding those
// calls, found in calls, every call of the file in order.
func (s *historySegment) skeleton(calls []callRef) []model.Message {
	out := make([]model.Message, 0, len(s.msgs)+1)
	made := map[string]bool{}
	for _, m := range s.msgs { // every one checked by bound
		for _, c := range m.skel.ToolCalls {
			made[c.ID] = true
		}
	}
	need := map[string]bool{}
	for _, m := range s.msgs {
		for _, r := range m.skel.Results {
			if !made[r.ToolCallID] {
				need[r.ToolCallID] = true
			}
		}
	}
	if len(need) > 0 {
		before := model.Message{Role: model.RoleAssistant}
		for _, c := range calls {
			if need[c.id] {
				before.ToolCalls = append(before.ToolCalls, model.ToolCall{ID: c.id, Name: c.name})
				delete(need, c.id)
			}
		}
		if len(before.ToolCalls) > 0 {
			out = append(out, before)
		}
	}
	for _, m := range s.msgs {
		out = append(out, *m.skel)
	}
	return out
}

// bound keeps of the history only its most recent messages that fit in
// budget bytes of what the model sees, as a compaction keeps a tail, and
// decodes (load) every message it weighs, the ones it keeps among them: it
// starts at a user or assistant message, and every result in it has its
// call in it. When no such start fits, the latest one is kept, whatever
// its size. A message counts the length of its line, or, for a line past
// MaxResumeLine, the size of its pieces once clipped: such a line is
// decoded here, once, and kept for decode. It returns what it left out
// (nil: nothing).
func (s *historySegment) bound(budget int64) (*Omitted, error) {
	callAt := map[string]int{}
	for i, m := range s.msgs {
		if m.skel != nil { // every assistant line is checked
			for _, c := range m.skel.ToolCalls {
				callAt[c.ID] = i
			}
		}
	}
	start, earliest, over := -1, len(s.msgs), false
	var size int64
	for _, m := range s.msgs {
		size += int64(m.length)
	}
	s.arena = newArena(int(min(size, budget, arenaChunk)))
	size = 0
	for i := len(s.msgs) - 1; i >= 0; i-- {
		m := s.msgs[i]
		skel, err := s.load(i)
		if err != nil {
			return nil, err
		}
		cost := int64(m.length)
		if m.length > MaxResumeLine {
			d, err := s.decodeLong(m)
			if err != nil {
				return nil, err
			}
			cost = int64(pieceBytes(d.msg))
		}
		size += cost
		for _, r := range skel.Results {
			if at, ok := callAt[r.ToolCallID]; ok && at < earliest {
				earliest = at
			}
		}
		over = over || size > budget
		if (m.role == model.RoleUser || m.role == model.RoleAssistant) && earliest >= i && (!over || start < 0) {
			start = i
		}
		if over && start >= 0 {
			break
		}
	}
	if !over || start <= 0 {
		return nil, nil
	}
	o := Omitted{Messages: start}
	for _, m := range s.msgs[:start] {
		o.Bytes += int64(m.length)
		delete(s.long, m.offset)
	}
	s.msgs = s.msgs[start:]
	s.omitted = &o
	return &o, nil
}

// decodedLine is a message line past MaxResumeLine, decoded and clipped.
type decodedLine struct {
	id      string
	msg     model.Message
	clipped bool // some piece was cut
}

// decodeLong reads, decodes and clips the message line m, past
// MaxResumeLine, once: it is kept for decode.
func (s *historySegment) decodeLong(m segmentMessage) (decodedLine, error) {
	if d, ok := s.long[m.offset]; ok {
		return d, nil
	}
	buf := make([]byte, m.length)
	if _, err := s.f.ReadAt(buf, m.offset); err != nil {
		return decodedLine{}, fmt.Errorf("read transcript %s: %w", s.path, err)
	}
	e, err := decodeEntry(buf)
	if err != nil || e.Message == nil || e.ID != m.id {
		return decodedLine{}, fmt.Errorf("%s: the message at byte %d no longer reads (%v); the file changed while it was read, try again", s.path, m.offset, err)
	}
	msg := *e.Message
	whole := pieceBytes(msg)
	msg = model.ClipMessage(msg, resumeKeep, fmt.Sprintf("when this session was resumed: its transcript line (%d, %s) is over ink's resume line bound of %s; the transcript keeps it whole",
		m.line, model.SizeString(int64(m.length)), model.SizeString(MaxResumeLine)))
	d := decodedLine{id: e.ID, msg: msg, clipped: pieceBytes(msg) < whole}
	if s.long == nil {
		s.long = map[int64]decodedLine{}
	}
	s.long[m.offset] = d
	return d, nil
}

// compaction applies compaction entry e, the transcript's line number line.
func (s *historySegment) compaction(e Entry, line int) error {
	c := e.Compaction
	from := len(s.msgs)
	if id := c.FirstKept; id != "" {
		from = slices.IndexFunc(s.msgs, func(m segmentMessage) bool { return m.id == id })
		if from < 0 {
			return fmt.Errorf("compaction %s keeps the history from entry %s, which is not a message the model saw", e.ID, id)
		}
		if _, err := s.check(from); err != nil {
			return err
		}
		if r := s.msgs[from].role; r != model.RoleUser && r != model.RoleAssistant {
			return fmt.Errorf("compaction %s keeps the history from entry %s, a %s message; a retained tail starts at a user or assistant message", e.ID, id, r)
		}
	}
	s.msgs = slices.Clone(s.msgs[from:])
	s.from = line + 1
	summary := c.Summary
	s.summary = &summary
	return nil
}

// decodeChunk bounds how much of the history load reads at once.
const decodeChunk = 4 << 20

// arenaChunk bounds the buffers the history's texts are decoded into: two
// huge pages, and what a message the View keeps may keep alive of them.
const arenaChunk = 4 << 20

// load reads and decodes the message line msgs[i] if it has not been, and
// returns its skeleton; a line past MaxResumeLine is only checked (check;
// decodeLong decodes it). It reads whole message lines a few MiB at a
// time, the one asked for last: bound asks for them from the end of the
// history back. A line that does not decode, or is not the message its
// start said, is an error, as in check.
func (s *historySegment) load(i int) (model.Message, error) {
	m := &s.msgs[i]
	if m.length > MaxResumeLine {
		return s.check(i)
	}
	if m.msg != nil {
		return *m.skel, nil
	}
	end := m.offset + int64(m.length)
	if m.offset < s.winAt || end > s.winAt+int64(len(s.win)) {
		start := m.offset
		for j := i - 1; j >= 0 && s.msgs[j].length <= MaxResumeLine && end-s.msgs[j].offset <= decodeChunk; j-- {
			start = s.msgs[j].offset
		}
		n := int(end - start)
		if cap(s.win) < n {
			s.win = hugeBuffer(max(n, 1<<20))
		}
		s.win = s.win[:n]
		s.winAt = start
		if _, err := s.f.ReadAt(s.win, start); err != nil {
			s.win = s.win[:0]
			return model.Message{}, fmt.Errorf("read transcript %s: %w", s.path, err)
		}
	}
	e, err := decodeEntryIn(s.win[m.offset-s.winAt:end-s.winAt], s.arena)
	switch {
	case m.skel != nil && (err != nil || e.Message == nil || e.ID != m.id):
		// The line checked when the file was scanned.
		return model.Message{}, fmt.Errorf("%s: the message at byte %d no longer reads (%v); the file changed while it was read, try again", s.path, m.offset, err)
	case err != nil:
		return model.Message{}, fmt.Errorf("%s:%d: %v; the transcript is damaged before its last line, so ink will not guess what it held (start a new session)", s.path, m.line, err)
	case e.Message == nil || e.ID != m.id || e.Message.Role != m.role:
		return model.Message{}, fmt.Errorf("%s:%d: the line is not the %s message %s its start says", s.path, m.line, m.role, m.id)
	}
	m.msg = e.Message
	if m.skel == nil {
		skel := skeletonOf(*e.Message)
		m.skel = &skel
	}
	return *m.skel, nil
}

// decode builds the View from the messages of the history, which bound
// decoded (load), clipping the messages whose line passes MaxResumeLine.
func (s *historySegment) decode() (*View, []ClippedLine, error) {
	var clipped []ClippedLine
	v := &View{}
	if s.summary != nil {
		v.msgs = append(v.msgs, model.SummaryMessage(*s.summary))
		v.ids = append(v.ids, "")
	}
	if s.omitted != nil {
		v.msgs = append(v.msgs, omittedNote(*s.omitted))
		v.ids = append(v.ids, "")
	}
	for i := 0; i < len(s.msgs); {
		if m := s.msgs[i]; m.length > MaxResumeLine {
			d, err := s.decodeLong(m)
			if err != nil {
				return nil, nil, err
			}
			delete(s.long, m.offset)
			if d.clipped {
				clipped = append(clipped, ClippedLine{Line: m.line, Bytes: int64(m.length)})
			}
			v.msgs = append(v.msgs, d.msg)
			v.ids = append(v.ids, d.id)
			i++
			continue
		}
		if _, err := s.load(i); err != nil {
			return nil, nil, err
		}
		v.msgs = append(v.msgs, *s.msgs[i].msg)
		v.ids = append(v.ids, s.msgs[i].id)
		i++
	}
	s.win = nil
	return v, clipped, nil
}

// Skeleton returns the messages of the model's history (View, without the
// summary and the omission note), in order, each with only its role and
// its tool calls' and results' ids and names: enough for ScanPairs and to
// find the calls a crash left without results, which are always in that
// history. When results of the history answer calls made before it (after
// a compaction that kept no message), it starts with one assistant
// skeleton holding those calls. Messages before the history are not in
// it: CallIDs has the calls of the whole file.
func (r *Resumable) Skeleton() []model.Message { return r.skeleton }

// CallIDs returns the id of every tool call in the transcript, in order,
// compacted and omitted parts included, so that a continued run never
// reuses one; an id written twice is listed twice (ReusedCallID).
func (r *Resumable) CallIDs() []string {
	var out []string
	for _, c := range r.calls {
		out = append(out, c.id)
	}
	return out
}

// ReusedCallID returns the first tool call id that ids holds twice.
func ReusedCallID(ids []string) (string, bool) {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return id, true
		}
		seen[id] = true
	}
	return "", false
}

// View returns the model's history with the entry id of each message
// (Transcript.View); the caller owns it and applies later entries to it.
func (r *Resumable) View() *View {
	return &View{msgs: slices.Clone(r.view.msgs), ids: slices.Clone(r.view.ids)}
}

// Lifetime sums the attempts recorded in the transcript (Total not yet
// applied: the attempt that continues it adds its own end).
func (r *Resumable) Lifetime() Lifetime { return r.attempts }

// Unfinished returns the start entry of the last attempt when no end entry
// of it follows: an attempt whose worker died without recording how it
// ended (or one still running, which a reader under the lease rules out).
func (r *Resumable) Unfinished() (AttemptEntry, bool) {
	if r.open == nil {
		return AttemptEntry{}, false
	}
	return *r.open, true
}

// LostEnd is the end entry a continuing worker writes for an attempt that
// never recorded its own (Unfinished) because its host was lost with it:
// every process killed at once, or the machine stopped. Status is
// "interrupted" and reason says which; usage is unknown. lifetime is the
// lifetime that counts the lost attempt's start, as the transcript holds
// it.
func LostEnd(start AttemptEntry, reason string, lifetime Lifetime) AttemptEntry {
	life := lifetime.With(nil)
	return AttemptEntry{
		Phase: PhaseEnd, AttemptID: start.AttemptID, Epoch: start.Epoch, Pid: start.Pid,
		Status: StatusInterrupted, Reason: reason, Lifetime: &life,
	}
}

// LastAttemptEnd returns the last attempt end entry, if there is one.
func (r *Resumable) LastAttemptEnd() (AttemptEntry, bool) {
	if r.lastEnd == nil {
		return AttemptEntry{}, false
	}
	return *r.lastEnd, true
}

// RepairTail repairs the torn tail the read found (see RepairTail) through
// fsys (nil: the real filesystem) and brings Size and Torn up to date. The
// caller must hold the lease.
func (r *Resumable) RepairTail(fsys durable.FS) (TailRepair, error) {
	rep, err := repairTail(durable.Or(fsys), r.Path)
	if err != nil {
		return rep, err
	}
	switch rep.Action {
	case RepairTruncated:
		r.Size = rep.Offset // the cut line was never counted
	case RepairTerminated:
		r.Size++
		r.lines++
	}
	r.Torn = nil
	return rep, nil
}

// OpenWriter opens the transcript for appending after the entries read,
// without reading it again. It refuses when the file is not as it was read
// (its size changed, or it does not end in "\n": repair its tail first).
// It writes through fsys (nil: the real filesystem). The caller must hold
// the lease and close the Writer.
func (r *Resumable) OpenWriter(fsys durable.FS) (*Writer, error) {
	f, fi, err := openForWrite(durable.Or(fsys), r.Path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("open transcript for append: %w", err)
	}
	fail := func(format string, a ...any) (*Writer, error) {
		f.Close()
		return nil, fmt.Errorf("open transcript for append: %s: "+format, append([]any{r.Path}, a...)...)
	}
	if fi.Size() != r.Size {
		return fail("its size changed since it was read (%d bytes, now %d); read it again", r.Size, fi.Size())
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], r.Size-1); err != nil {
		return fail("%v", err)
	}
	if last[0] != '\n' {
		return fail("it ends in a partial line; repair its tail before appending")
	}
	return &Writer{fsys: durable.Or(fsys), f: f, path: r.Path, header: r.Header, lines: r.lines, size: r.Size}, nil
}

// lineReader yields the lines of a reader with their offsets and numbers,
// "\n" included. A line longer than its buffer is measured first and then
// read whole, at its offset, into a buffer of its exact size (kept for
// the next long line, or handed on by release), so a line of tens of
// megabytes costs its size once — unless the caller's skip says, from the
// line's start, that it needs no more of it. A returned line is valid
// until the next call.
type lineReader struct {
	r       *lineBuf
	ra      io.ReaderAt // the same bytes as r, by offset from r's start
	offset  int64
	lineNo  int
	scratch []byte
	head    []byte // the start of a long line, for skip
}

// lineBuffer is the lineReader's buffer: lines up to this size are read
// through it.
const lineBuffer = 4 << 20

// lineHead is how much of a long line's start skip is given.
const lineHead = 512

// newLineReader returns a lineReader of r, which holds size bytes (-1:
// unknown); its buffer is the smaller of lineBuffer and what r holds.
func newLineReader(r io.Reader, ra io.ReaderAt, size int64) *lineReader {
	n := lineBuffer
	if size >= 0 && size < lineBuffer {
		n = int(size) + 1 // room for all of it: no line is long
	}
	return &lineReader{r: &lineBuf{rd: r, buf: hugeBuffer(n)[:n]}, ra: ra}
}

// lineBuf is bufio.Reader's ReadSlice over a buffer from hugeBuffer: the
// buffer a long transcript is scanned through costs a fresh process a
// few page faults, not one every 4 KiB.
type lineBuf struct {
	rd   io.Reader
	buf  []byte
	r, w int // read and write positions in buf
	err  error
}

// readSlice is bufio.Reader.ReadSlice: the bytes up to and including the
// next delim, valid until the next call; bufio.ErrBufferFull with the
// whole buffer when it holds no delim; else what is left and the read's
// error.
func (b *lineBuf) readSlice(delim byte) ([]byte, error) {
	searched := 0
	for {
		if i := bytes.IndexByte(b.buf[b.r+searched:b.w], delim); i >= 0 {
			line := b.buf[b.r : b.r+searched+i+1]
			b.r += searched + i + 1
			return line, nil
		}
		if b.err != nil {
			line, err := b.buf[b.r:b.w], b.err
			b.r, b.err = b.w, nil
			return line, err
		}
		if b.w-b.r == len(b.buf) {
			b.r = b.w
			return b.buf, bufio.ErrBufferFull
		}
		searched = b.w - b.r
		b.fill()
	}
}

// fill moves what is unread to the buffer's start and reads once more.
func (b *lineBuf) fill() {
	if b.r > 0 {
		copy(b.buf, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
	}
	for range 100 {
		n, err := b.rd.Read(b.buf[b.w:])
		b.w += n
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

// release hands over the buffer of long lines, for the caller to reuse.
func (l *lineReader) release() []byte {
	b := l.scratch
	l.scratch = nil
	return b
}

// next returns the next line and its length n. skip, if not nil, is asked
// about a line longer than the buffer (never the first line), given its
// first lineHead bytes and the offset where it ends; when it says yes,
// line holds only that start (n is still the line's length).
func (l *lineReader) next(skip func(head []byte, end int64) bool) (line []byte, n int, offset int64, lineNo int, err error) {
	frag, err := l.r.readSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.head = append(l.head[:0], frag[:min(len(frag), lineHead)]...)
		n := len(frag)
		for errors.Is(err, bufio.ErrBufferFull) {
			frag, err = l.r.readSlice('\n')
			n += len(frag)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, 0, 0, err
		}
		if skip != nil && l.lineNo > 0 && skip(l.head, l.offset+int64(n)) {
			l.lineNo++
			offset = l.offset
			l.offset += int64(n)
			return l.head, n, offset, l.lineNo, nil
		}
		l.scratch = slices.Grow(l.scratch[:0], n)[:n]
		if _, rerr := l.ra.ReadAt(l.scratch, l.offset); rerr != nil {
			return nil, 0, 0, 0, rerr
		}
		frag = l.scratch
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, 0, 0, err
	}
	if len(frag) == 0 {
		return nil, 0, 0, 0, io.EOF
	}
	l.lineNo++
	offset = l.offset
	l.offset += int64(len(frag))
	return frag, len(frag), offset, l.lineNo, nil
}

// pieceBytes sums the texts, results and arguments of m.
func pieceBytes(m model.Message) int {
	n := 0
	for _, b := range m.Content {
		n += len(b.Text)
	}
	for _, r := range m.Results {
		n += len(r.Content)
	}
	for _, c := range m.ToolCalls {
		n += len(c.Args)
	}
	return n
}
