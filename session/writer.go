package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inkdev/ink/durable"
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
	fsys   durable.FS
	f      durable.File
	path   string
	header Header
	lines  int
	size   int64
	dirty  bool  // bytes written since the last fsync
	err    error // sticky: set by a failed write or Close

	// syncing, when not nil, is closed once the creation's sync, run in
	// the background (CreateSyncing), is done; syncErr is its result.
	syncing chan struct{}
	syncErr error
}

// Create creates the transcript at path (which must not exist) with header
// h, creating parent directories with mode 0700 and the file with mode 0600.
// Empty Type, Version and CreatedAt are filled in; h must otherwise be
// valid, including its launch record (whose tools are sorted). The header
// line is written and the file and its directory are fsynced before Create
// returns. On failure nothing is left behind.
//
// ink creates transcripts through OpenAttempt and CreateSyncing; Create
// and CreateWith are kept for the tests and benchmarks of other packages
// that need a transcript on disk.
func Create(path string, h Header) (*Writer, error) {
	w, _, err := CreateWith(path, h)
	return w, err
}

// CreateWith is Create with the transcript's first entries written
// together with its header: one write of every line, one fsync of the file
// and one of its directory, so that a new transcript and what its first
// durable point needs (an attempt's start entry and prompt, a shell
// session's task call) cost one sync between them. The entries are
// prepared as Append prepares them and returned as written.
func CreateWith(path string, h Header, first ...Entry) (*Writer, []Entry, error) {
	return create(durable.OS, path, h, false, nil, first)
}

// CreateSyncing is CreateWith whose one sync of the file and its directory
// runs in the background, for a caller whose next step needs nothing on
// disk (a worker about to send its first model request). The creation
// becomes durable before anything else is written: every later Append, and
// Close, waits for that sync first and fails if it failed. Until then a
// crash of the process loses nothing (the kernel holds the bytes); only a
// crash of the machine could lose the new transcript, as if the attempt had
// never started. before, when not nil, runs first in the background: a sync
// that must precede the transcript's (the lease's record, see
// lease.Options.SyncLater); its failure fails the creation's sync. It
// writes through fsys (nil: the real filesystem).
func CreateSyncing(fsys durable.FS, path string, h Header, before func() error, first ...Entry) (*Writer, []Entry, error) {
	return create(durable.Or(fsys), path, h, true, before, first)
}

// create makes the transcript. Its header and first entries are written
// before it gets its name (durable.CreateExclusive), so that a process
// killed at any instant leaves no transcript or a whole one; a machine
// that stops before the sync may still leave its name without its bytes,
// which readers take as never started (ErrNotStarted). Directories it
// makes are synced into their parents.
func create(fsys durable.FS, path string, h Header, background bool, before func() error, first []Entry) (*Writer, []Entry, error) {
	h, line, err := encodeHeader(h)
	if err != nil {
		return nil, nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	entries, lines, err := prepareEntries(first)
	if err != nil {
		return nil, nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := durable.MkdirAll(fsys, dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create transcript: %w", err)
	}
	w := &Writer{fsys: fsys, path: path, header: h, lines: 1, size: int64(len(line))}
	buf := append([]byte(nil), line...)
	for i, l := range lines {
		w.lines++
		entries[i].Line, entries[i].Offset = w.lines, w.size
		w.size += int64(len(l))
		buf = append(buf, l...)
	}
	f, err := durable.CreateExclusive(fsys, path, buf, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("create transcript: %w", err)
	}
	w.f = f
	fail := func(err error) (*Writer, []Entry, error) {
		f.Close()
		fsys.Remove(path)
		return nil, nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	if background {
		w.syncing = make(chan struct{})
		go func() {
			defer close(w.syncing)
			if before != nil {
				if w.syncErr = before(); w.syncErr != nil {
					return
				}
			}
			w.syncErr = syncCreated(fsys, f, path)
		}()
		return w, entries, nil
	}
	if err := syncCreated(fsys, f, path); err != nil {
		return fail(err)
	}
	return w, entries, nil
}

// syncCreated makes a new file durable: its content, then its directory
// entry.
func syncCreated(fsys durable.FS, f durable.File, path string) error {
	if err := fsync(f, path); err != nil {
		return err
	}
	return syncDir(fsys, filepath.Dir(path))
}

// awaitCreation waits for a creation's background sync, if one is pending,
// and makes its failure sticky; it returns that failure on every call. The
// caller holds w.mu.
func (w *Writer) awaitCreation() error {
	if w.syncing != nil {
		<-w.syncing
		w.syncing = nil
	}
	if w.syncErr != nil {
		err := fmt.Errorf("the new transcript could not be synced: %w", w.syncErr)
		if w.err == nil {
			w.err = err
		}
		return err
	}
	return nil
}

// OpenWriter opens an existing transcript for appending. It refuses a
// symlink or non-regular file (ErrNotRegular), a file without a valid
// header, and a file that does not end in "\n" (repair it first with
// RepairTail, under the lease). The caller must hold the lease.
//
// ink appends through OpenAttempt's writer (Resumable.OpenWriter); this
// path form is kept for tests and benchmarks that append to a file.
func OpenWriter(path string) (*Writer, error) {
	h, err := ReadHeader(path)
	if err != nil {
		return nil, fmt.Errorf("open transcript for append: %w", err)
	}
	f, fi, err := openForWrite(durable.OS, path, os.O_RDWR|os.O_APPEND)
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
	return &Writer{fsys: durable.OS, f: f, path: path, header: h, lines: lines, size: fi.Size()}, nil
}

// countLines counts the "\n" bytes of f's first size bytes and returns the
// last byte: OpenWriter's check (kept for tests, see OpenWriter).
func countLines(f io.ReaderAt, size int64) (int, byte, error) {
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
	out, err := w.Append(Entry{Type: EntryMessage, Message: &msg})
	if err != nil {
		return Entry{}, err
	}
	return out[0], nil
}

// AppendAttempt appends an attempt entry (Time defaults to now) and fsyncs.
func (w *Writer) AppendAttempt(a AttemptEntry) error {
	_, err := w.Append(Entry{Type: EntryAttempt, Attempt: &a})
	return err
}

// AppendCompaction appends a compaction entry (Time defaults to now),
// fsyncs, and returns the entry as written. The caller checks FirstKept
// against the history it holds (View.FirstKept); a reader refuses a
// transcript whose compaction keeps a message the model did not see.
func (w *Writer) AppendCompaction(c CompactionEntry) (Entry, error) {
	out, err := w.Append(Entry{Type: EntryCompaction, Compaction: &c})
	if err != nil {
		return Entry{}, err
	}
	return out[0], nil
}

// Append appends entries — messages (Message set, its TaskRecord kept
// beside it), attempts (Attempt set) and compactions (Compaction set) —
// with one write of all their lines, and returns them as written: with a
// fresh ID unless one was given, attempts and compactions timed now unless
// they carry a time, and Line and Offset set. The file is fsynced once
// after the write when any entry is a durable point: an attempt, a
// compaction or a toolResult message. Nothing is written when an entry is
// invalid.
func (w *Writer) Append(entries ...Entry) ([]Entry, error) {
	out, lines, err := prepareEntries(entries)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", w.path, err)
	}
	sync := false
	for _, e := range out {
		sync = sync || DurablePoint(e)
	}
	return w.write(out, lines, sync)
}

// DurablePoint reports whether e is an entry that is fsynced as soon as it
// is written: an attempt, a compaction or a toolResult message.
func DurablePoint(e Entry) bool {
	return e.Attempt != nil || e.Compaction != nil || (e.Message != nil && e.Message.Role == model.RoleToolResult)
}

// AppendLines appends lines encoded elsewhere (by a remote worker, with
// EncodeEntries), each one entry ending in "\n", in one write, and fsyncs
// when durable; returns them decoded, with Line and Offset set. Nothing is
// written when a line does not decode as an entry. The caller decides which
// entries it accepts (Fence).
func (w *Writer) AppendLines(lines [][]byte, durable bool) ([]Entry, error) {
	out := make([]Entry, len(lines))
	for i, l := range lines {
		if len(l) == 0 || l[len(l)-1] != '\n' || bytes.IndexByte(l[:len(l)-1], '\n') >= 0 {
			return nil, fmt.Errorf("append to %s: line %d is not one entry ending in a newline", w.path, i+1)
		}
		e, err := decodeEntry(l)
		if err != nil {
			return nil, fmt.Errorf("append to %s: line %d: %w", w.path, i+1, err)
		}
		out[i] = e
	}
	return w.write(out, lines, durable)
}

// write writes the lines of out in one write, fsyncing after it when sync.
func (w *Writer) write(out []Entry, lines [][]byte, sync bool) ([]Entry, error) {
	var buf []byte
	if len(lines) == 1 {
		buf = lines[0]
	} else {
		for _, l := range lines {
			buf = append(buf, l...)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.awaitCreation() // a failure is sticky in w.err
	if w.err != nil {
		return nil, fmt.Errorf("append to %s: %w", w.path, w.err)
	}
	n, err := w.f.Write(buf)
	if err != nil || n != len(buf) {
		if err == nil {
			err = io.ErrShortWrite
		}
		w.err = fmt.Errorf("an earlier write failed, the file may end in a partial line: %w", err)
		return nil, fmt.Errorf("append to %s: %w", w.path, err)
	}
	w.dirty = true
	for i, l := range lines {
		w.lines++
		out[i].Line, out[i].Offset = w.lines, w.size
		w.size += int64(len(l))
	}
	if sync {
		if err := fsync(w.f, w.path); err != nil {
			w.err = fmt.Errorf("an earlier fsync failed: %w", err)
			return nil, fmt.Errorf("fsync %s: %w", w.path, err)
		}
		w.dirty = false
	}
	return out, nil
}

// EncodeEntries gives entries their ids and times and encodes them, one
// line each ending in "\n", as Append would write them: a remote worker
// encodes its entries with it and its supervisor writes the lines with
// AppendLines. The returned entries are copies, messages included.
func EncodeEntries(entries ...Entry) ([]Entry, [][]byte, error) {
	return prepareEntries(entries)
}

// prepareEntries gives entries their ids and times and encodes them, one
// line each; the returned entries are copies, messages included.
func prepareEntries(entries []Entry) ([]Entry, [][]byte, error) {
	out := make([]Entry, len(entries))
	lines := make([][]byte, len(entries))
	for i, e := range entries {
		if e.ID == "" {
			e.ID = NewID()
		}
		switch {
		case e.Message != nil:
			msg := *e.Message
			e.Type, e.Message = EntryMessage, &msg
		case e.Attempt != nil:
			a := *e.Attempt
			if a.Time.IsZero() {
				a.Time = time.Now().UTC()
			}
			e.Type, e.Attempt = EntryAttempt, &a
		case e.Compaction != nil:
			c := *e.Compaction
			if c.Time.IsZero() {
				c.Time = time.Now().UTC()
			}
			e.Type, e.Compaction = EntryCompaction, &c
		}
		line, err := encodeEntry(e)
		if err != nil {
			return nil, nil, err
		}
		if e.Message != nil && len(e.Message.TaskRecord) > 0 {
			e.TaskRecord, _ = compactObject(e.Message.TaskRecord)
			e.Message.TaskRecord = e.TaskRecord
		}
		if e.Message != nil && len(e.Message.TaskRecords) > 0 {
			e.TaskRecords = make([]json.RawMessage, len(e.Message.TaskRecords))
			for i, raw := range e.Message.TaskRecords {
				e.TaskRecords[i], _ = compactObject(raw)
			}
			e.Message.TaskRecords = e.TaskRecords
		}
		out[i], lines[i] = e, line
	}
	return out, lines, nil
}

// Sync makes durable what was written since the last durable point, if
// anything: the caller's own durable point, such as an assistant message
// whose task call another process is about to act on. It waits for a
// creation's background sync first. Safe for concurrent use: a second
// caller finds nothing left to sync.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.awaitCreation(); err != nil {
		return fmt.Errorf("sync %s: %w", w.path, err)
	}
	if w.err != nil {
		return fmt.Errorf("sync %s: %w", w.path, w.err)
	}
	if !w.dirty {
		return nil
	}
	if err := fsync(w.f, w.path); err != nil {
		w.err = fmt.Errorf("an earlier fsync failed: %w", err)
		return fmt.Errorf("fsync %s: %w", w.path, err)
	}
	w.dirty = false
	return nil
}

// Close fsyncs what was written since the last durable point, if
// anything, and closes the file. Appending after Close fails.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	serr := w.awaitCreation()
	if w.dirty && serr == nil {
		serr = fsync(w.f, w.path)
	}
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
