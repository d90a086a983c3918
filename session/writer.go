package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/inkdev/ink/model"
)

// Writer is the single appender of one transcript. Each entry is written
// with one write of its whole line, "\n" included, to a file opened with
// O_APPEND. The caller must hold the transcript's lease while a Writer is
// open and must Close it. A Writer is safe for concurrent use; entries land
// in the order the calls take its mutex. After a failed write the Writer
// refuses further appends, since the file may end in a partial line.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	header Header
	lines  int
	size   int64
	err    error // sticky: set by a failed write or Close
}

// Create creates the transcript at path (which must not exist) with header
// h, creating parent directories with mode 0700 and the file with mode 0600.
// Empty Type, Version and CreatedAt are filled in; h must otherwise be
// valid, including its launch record (whose tools are sorted). The header
// line is written and the file and its directory are fsynced before Create
// returns. On failure nothing is left behind.
func Create(path string, h Header) (*Writer, error) {
	h, line, err := encodeHeader(h)
	if err != nil {
		return nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	fail := func(err error) (*Writer, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	if _, err := f.Write(line); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	return &Writer{f: f, path: path, header: h, lines: 1, size: int64(len(line))}, nil
}

// OpenWriter opens an existing transcript for appending. It refuses a
// symlink or non-regular file (ErrNotRegular), a file without a valid
// header, and a file that does not end in "\n" (repair it first with
// RepairTail, under the lease). The caller must hold the lease.
func OpenWriter(path string) (*Writer, error) {
	h, err := ReadHeader(path)
	if err != nil {
		return nil, fmt.Errorf("open transcript for append: %w", err)
	}
	f, fi, err := openRegular(path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, fmt.Errorf("open transcript for append: %w", err)
	}
	lines, last, err := countLines(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open transcript for append: %s: %w", path, err)
	}
	if last != '\n' {
		f.Close()
		return nil, fmt.Errorf("open transcript for append: %s ends in a partial line; repair its tail before appending", path)
	}
	return &Writer{f: f, path: path, header: h, lines: lines, size: fi.Size()}, nil
}

// countLines counts the "\n" bytes of f's first size bytes and returns the
// last byte.
func countLines(f *os.File, size int64) (int, byte, error) {
	buf := make([]byte, 256<<10)
	lines := 0
	var last byte
	for off := int64(0); off < size; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, c := range buf[:n] {
			if c == '\n' {
				lines++
			}
		}
		if n > 0 {
			last = buf[n-1]
		}
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off >= size) {
			return 0, 0, err
		}
		if n == 0 {
			break
		}
	}
	return lines, last, nil
}

// Path returns the transcript's path.
func (w *Writer) Path() string { return w.path }

// Header returns the transcript's header.
func (w *Writer) Header() Header { return w.header }

// AppendMessage appends one message entry (with the message's TaskRecord
// and TaskRecords, if any, beside it) and returns the entry as written. The file is fsynced
// after a toolResult message.
func (w *Writer) AppendMessage(m model.Message) (Entry, error) {
	msg := m
	e := Entry{Type: EntryMessage, ID: NewID(), Message: &msg}
	line, err := encodeEntry(e)
	if err != nil {
		return Entry{}, fmt.Errorf("append message to %s: %w", w.path, err)
	}
	if len(m.TaskRecord) > 0 {
		e.TaskRecord, _ = compactObject(m.TaskRecord)
		msg.TaskRecord = e.TaskRecord
	}
	if len(m.TaskRecords) > 0 {
		e.TaskRecords = make([]json.RawMessage, len(m.TaskRecords))
		for i, raw := range m.TaskRecords {
			e.TaskRecords[i], _ = compactObject(raw)
		}
		msg.TaskRecords = e.TaskRecords
	}
	if err := w.append(&e, line, m.Role == model.RoleToolResult); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// AppendAttempt appends an attempt entry (Time defaults to now) and fsyncs.
func (w *Writer) AppendAttempt(a AttemptEntry) error {
	if a.Time.IsZero() {
		a.Time = time.Now().UTC()
	}
	e := Entry{Type: EntryAttempt, ID: NewID(), Attempt: &a}
	line, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("append attempt to %s: %w", w.path, err)
	}
	return w.append(&e, line, true)
}

// AppendCompaction appends a compaction entry (Time defaults to now),
// fsyncs, and returns the entry as written. The caller checks FirstKept
// against the history it holds (View.FirstKept); a reader refuses a
// transcript whose compaction keeps a message the model did not see.
func (w *Writer) AppendCompaction(c CompactionEntry) (Entry, error) {
	if c.Time.IsZero() {
		c.Time = time.Now().UTC()
	}
	e := Entry{Type: EntryCompaction, ID: NewID(), Compaction: &c}
	line, err := encodeEntry(e)
	if err != nil {
		return Entry{}, fmt.Errorf("append compaction to %s: %w", w.path, err)
	}
	if err := w.append(&e, line, true); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// append writes line with one write call and records its position in e.
func (w *Writer) append(e *Entry, line []byte, sync bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("append to %s: %w", w.path, w.err)
	}
	n, err := w.f.Write(line)
	if err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
		w.err = fmt.Errorf("an earlier write failed, the file may end in a partial line: %w", err)
		return fmt.Errorf("append to %s: %w", w.path, err)
	}
	w.lines++
	e.Line, e.Offset = w.lines, w.size
	w.size += int64(n)
	if sync {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("an earlier fsync failed: %w", err)
			return fmt.Errorf("fsync %s: %w", w.path, err)
		}
	}
	return nil
}

// Close fsyncs and closes the file. Appending after Close fails.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	serr := w.f.Sync()
	cerr := w.f.Close()
	w.f = nil
	if w.err == nil {
		w.err = errors.New("writer is closed")
	}
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("close transcript %s: %w", w.path, err)
	}
	return nil
}
