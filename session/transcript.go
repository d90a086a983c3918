package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/inkdev/ink/model"
)

// maxHeaderBytes bounds how much of a file ReadHeader reads.
const maxHeaderBytes = 64 << 10

// Transcript is the parsed content of one transcript file. It is a snapshot:
// later appends are not seen. Plain data; safe to share once built.
type Transcript struct {
	Path   string
	Header Header
	// Entries holds every entry after the header in file order, the torn
	// final line (if any) excluded.
	Entries []Entry
	// Messages holds the messages of every message entry in order, each
	// with its TaskRecord restored: the whole record, compacted or not.
	// History gives what a model sees.
	Messages []model.Message
	// Torn describes a final line that is not a complete entry (left out of
	// Entries) or a complete final entry lacking its "\n" (kept in
	// Entries). Nil when the file ends cleanly.
	Torn *TornTail
	// Size is the file size that was read.
	Size int64
	// Lean is set for a transcript read with OpenLean: long messages that
	// are not about tasks hold only their skeleton.
	Lean bool

	view View // the model's history, rebuilt from the last compaction
}

// TornTail describes the end of a transcript that an interrupted write left
// behind. RepairTail fixes exactly this.
type TornTail struct {
	// Offset is the byte offset where the final line starts.
	Offset int64
	// Line is the final line's 1-based number.
	Line int
	// Bytes is the final line's length, including its "\n" if it has one.
	Bytes int
	// Reason says what is wrong with the line.
	Reason string
	// NeedsNewline is set when the final line is a complete entry that only
	// lacks its "\n"; it is then part of the transcript.
	NeedsNewline bool
}

// Open reads and parses the whole transcript at path. A torn or invalid
// final line is left out and described in Torn; an invalid line anywhere
// before it is an error naming the file and line ("PATH:LINE: ..."), never
// skipped. So is a compaction entry, wherever it is, whose retained tail
// does not start at a message the model saw: a crash cannot write one. Symlinks, directories, empty files and files without a valid
// header are refused with an error saying so (a header whose launch record
// is invalid wraps ErrInvalidLaunch; a non-regular file wraps ErrNotRegular).
// The file is read line by line: its memory is what it decodes to, plus
// its longest line.
func Open(path string) (*Transcript, error) {
	return open(path, false)
}

// OpenLean is Open for readers that supervise rather than continue a
// transcript (the tool calls and results of its tasks, its TaskRecords, its
// attempts): every message line longer than leanLine bytes that is not a
// task call or result, and holds no TaskRecord, is checked but kept only as
// its skeleton — its role and its calls' and results' ids and names — so a
// transcript with lines of tens of megabytes is read in memory of the order
// of its longest line. Messages, History and View then hold those
// skeletons; Lean is set.
func OpenLean(path string) (*Transcript, error) {
	return open(path, true)
}

// leanLine is the longest message line OpenLean decodes whatever it holds.
const leanLine = 64 << 10

func open(path string, lean bool) (*Transcript, error) {
	f, fi, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	// Read what the file held when opened; an append racing with this read
	// is left for the next Open.
	return readTranscript(path, f, fi.Size(), lean)
}

// parseTranscript parses the bytes of a transcript file: Parse's body
// (kept for tests, see Parse) and the fuzz and golden tests' reader.
func parseTranscript(path string, data []byte) (*Transcript, error) {
	return readTranscript(path, bytes.NewReader(data), int64(len(data)), false)
}

// readTranscript parses the first size bytes of r, line by line.
func readTranscript(path string, r io.ReaderAt, size int64, lean bool) (*Transcript, error) {
	if size == 0 {
		return nil, notStarted(path)
	}
	t := &Transcript{Path: path, Size: size, Lean: lean}
	lr := newLineReader(io.NewSectionReader(r, 0, size), r, size)
	for {
		line, _, start, lineNo, err := lr.next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", path, err)
		}
		terminated := line[len(line)-1] == '\n'
		last := start+int64(len(line)) == size
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
			t.Header = h
			if !terminated {
				t.Torn = &TornTail{Offset: start, Line: lineNo, Bytes: len(line), Reason: "the header line lacks its newline", NeedsNewline: true}
			}
			continue
		}
		e, err := decodeLine(line, lean)
		switch {
		case err != nil && last:
			t.Torn = &TornTail{Offset: start, Line: lineNo, Bytes: len(line), Reason: tornReason(err, terminated)}
		case err != nil:
			return nil, fmt.Errorf("%s:%d: %v; the transcript is damaged before its last line, so ink will not guess what it held (start a new session)", path, lineNo, err)
		default:
			if err := t.view.Apply(e); err != nil {
				return nil, fmt.Errorf("%s:%d: %v; the transcript is damaged, so ink will not guess what the model saw (start a new session)", path, lineNo, err)
			}
			e.Line, e.Offset = lineNo, start
			t.Entries = append(t.Entries, e)
			if e.Message != nil {
				t.Messages = append(t.Messages, *e.Message)
			}
			if !terminated {
				t.Torn = &TornTail{Offset: start, Line: lineNo, Bytes: len(line), Reason: "the final entry lacks its newline", NeedsNewline: true}
			}
		}
	}
	return t, nil
}

// decodeLine decodes one entry line after the header; lean, a long
// message line that supervision does not read is skimmed to its skeleton.
func decodeLine(line []byte, lean bool) (Entry, error) {
	if lean && len(line) > leanLine && bytes.HasPrefix(line, messagePrefix) {
		if s, err := skimMessageLine(line); err == nil && !s.record && !taskRelated(s.msg) {
			msg := s.msg
			return Entry{Type: EntryMessage, ID: s.id, Message: &msg}, nil
		}
	}
	return decodeEntry(line)
}

// taskRelated reports whether skeleton m holds a task call or result.
func taskRelated(m model.Message) bool {
	for _, c := range m.ToolCalls {
		if c.Name == "task" {
			return true
		}
	}
	for _, r := range m.Results {
		if r.ToolName == "task" {
			return true
		}
	}
	return false
}

// tornReason words why a final line was left out.
func tornReason(err error, terminated bool) string {
	if !terminated {
		return "incomplete final line (" + err.Error() + ")"
	}
	return "invalid final line (" + err.Error() + ")"
}

// History returns the messages a model sees when the transcript is
// continued: every message when it was never compacted, else the summary of
// its last compaction (model.SummaryMessage) followed by the messages from
// that compaction's retained tail on. Resume seeds the agent with it.
func (t *Transcript) History() []model.Message {
	return t.view.Messages()
}

// View returns the model's history with the entry id of each message (see
// History); the caller owns the copy and may apply later entries to it.
func (t *Transcript) View() *View {
	return &View{msgs: slices.Clone(t.view.msgs), ids: slices.Clone(t.view.ids)}
}

// CallIDs returns the id of every tool call in the transcript, compacted
// parts included, so that a continued run never reuses one.
func (t *Transcript) CallIDs() []string {
	var out []string
	for _, m := range t.Messages {
		for _, c := range m.ToolCalls {
			out = append(out, c.ID)
		}
	}
	return out
}

// Compactions returns the compaction entries in file order.
func (t *Transcript) Compactions() []CompactionEntry {
	var out []CompactionEntry
	for _, e := range t.Entries {
		if e.Compaction != nil {
			out = append(out, *e.Compaction)
		}
	}
	return out
}

// Attempts returns the attempt entries in file order.
func (t *Transcript) Attempts() []AttemptEntry {
	var out []AttemptEntry
	for _, e := range t.Entries {
		if e.Attempt != nil {
			out = append(out, *e.Attempt)
		}
	}
	return out
}

// LastAttemptEnd returns the last attempt end entry, if there is one.
func (t *Transcript) LastAttemptEnd() (AttemptEntry, bool) {
	for i := len(t.Entries) - 1; i >= 0; i-- {
		if a := t.Entries[i].Attempt; a != nil && a.Phase == PhaseEnd {
			return *a, true
		}
	}
	return AttemptEntry{}, false
}

// ReadHeader reads and validates the header of the transcript at path,
// reading at most its first 64 KiB. Symlinks and non-regular files are
// refused (ErrNotRegular). When only the launch record is invalid, the
// returned Header holds the other fields (Launch nil) and the error wraps
// ErrInvalidLaunch.
func ReadHeader(path string) (Header, error) {
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return Header{}, fmt.Errorf("read header: %w", err)
	}
	defer f.Close()
	buf := make([]byte, maxHeaderBytes)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Header{}, fmt.Errorf("read header of %s: %w", path, err)
	}
	buf = buf[:n]
	if n == 0 {
		return Header{}, notStarted(path)
	}
	terminated := false
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf, terminated = buf[:i], true
	} else if n == maxHeaderBytes {
		return Header{}, fmt.Errorf("%s:1: header line is longer than 64 KiB; this is not an ink transcript", path)
	}
	h, err := parseHeader(buf)
	if err != nil {
		if errors.Is(err, ErrInvalidLaunch) {
			return h, fmt.Errorf("%s:1: %w", path, err)
		}
		if !terminated {
			return Header{}, notStarted(path)
		}
		return Header{}, fmt.Errorf("%s:1: %w", path, err)
	}
	return h, nil
}

// ErrNotStarted marks a transcript file without a whole header line: empty,
// or a first line cut short that is not a header. ink writes a new
// transcript's header with its first entries in one write, published under
// its name only once written, so only a crash of the machine before that
// write was synced can leave one (its name survived, its bytes did not).
// Every reader takes it as a transcript that never started: listings leave
// it out, lookups do not find it, and a parent's recovery says nothing ran.
var ErrNotStarted = errors.New("the transcript never started")

// notStarted is the ErrNotStarted error for path.
func notStarted(path string) error {
	return fmt.Errorf("%s: %w: it holds no whole header line (a crash of the machine lost what was written to it); nothing of it can be read or continued", path, ErrNotStarted)
}
