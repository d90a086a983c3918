package session

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Tail is what the end of a transcript says, read backwards from its end
// only as far as needed: enough for the supervisor to validate a resume
// and report a child's lifetime without reading the history.
type Tail struct {
	// Header is the transcript's header (ReadHeader).
	Header Header
	// HasMessages reports whether any message entry follows the header.
	HasMessages bool
	// LastEnd is the last attempt end entry; nil when there is none.
	LastEnd *AttemptEntry
	// StartedSince reports whether an attempt started after LastEnd (or,
	// without one, at all) and recorded no end.
	StartedSince bool
}

// tailChunk is how much ReadTail reads at a time, from the end backwards.
const tailChunk = 64 << 10

// compactionPrefix starts every compaction entry line this package writes.
var compactionPrefix = []byte(`{"type":"compaction"`)

// ReadTail reads the header of the transcript at path (as ReadHeader does,
// refusing symlinks and non-regular files) and then its lines from the end
// backwards, until it has seen a message and the last attempt end entry,
// or reached the header. It relies on the field order this package writes
// ("type" first) and decodes only attempt entries and lines of another
// shape; a torn final line is left out. It checks nothing else: whoever
// continues the transcript reads it (ReadForResume).
func ReadTail(path string) (Tail, error) {
	h, err := ReadHeader(path)
	if err != nil {
		return Tail{}, err
	}
	t := Tail{Header: h}
	err = backwards(path, func(line []byte, final bool) bool {
		t.see(line, final)
		return !(t.HasMessages && t.LastEnd != nil)
	})
	if err != nil {
		return Tail{}, fmt.Errorf("read tail of %s: %w", path, err)
	}
	return t, nil
}

// see notes one entry line found going backwards.
func (t *Tail) see(line []byte, final bool) {
	var e Entry
	switch {
	case bytes.HasPrefix(line, messagePrefix) && !final:
		t.HasMessages = true
		return
	case bytes.HasPrefix(line, compactionPrefix):
		return
	case bytes.HasPrefix(line, attemptPrefix) && t.LastEnd != nil:
		return
	}
	// An attempt entry, a last line that counts only when whole, or a
	// line of another shape than this package writes: decode it.
	e, err := decodeEntry(line)
	switch {
	case err != nil:
	case e.Message != nil:
		t.HasMessages = true
	case e.Attempt != nil && e.Attempt.Phase == PhaseEnd && t.LastEnd == nil:
		t.LastEnd = e.Attempt
	case e.Attempt != nil && e.Attempt.Phase == PhaseStart && t.LastEnd == nil:
		t.StartedSince = true
	}
}

// backwards calls fn with each line of the file at path after its header,
// from the last to the first, "\n" included; final marks the file's last
// line. It stops when fn returns false.
func backwards(path string, fn func(line []byte, final bool) bool) error {
	f, fi, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	end := fi.Size()
	var carry []byte // a line whose start is not read yet
	final := true
	for end > 0 {
		from := max(0, end-tailChunk)
		buf := make([]byte, end-from, int(end-from)+len(carry))
		if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
			return err
		}
		buf = append(buf, carry...)
		carry = nil
		for len(buf) > 0 {
			i := bytes.LastIndexByte(buf[:len(buf)-1], '\n')
			if i < 0 {
				if from > 0 {
					carry = buf // its start is in the chunk before
				}
				break // or it is the header
			}
			line := buf[i+1:]
			buf = buf[:i+1]
			if !fn(line, final) {
				return nil
			}
			final = false
		}
		end = from
	}
	return nil
}

// ReadLifetime sums every attempt recorded in the transcript at path:
// from the last attempt end entry when it holds the sum (Lifetime) and no
// attempt started after it, else from every attempt entry, read in one
// pass that decodes nothing else.
func ReadLifetime(path string) (Lifetime, error) {
	t, err := ReadTail(path)
	if err != nil {
		return Lifetime{}, err
	}
	if t.LastEnd != nil && t.LastEnd.Lifetime != nil && !t.StartedSince {
		return *t.LastEnd.Lifetime, nil
	}
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return Lifetime{}, fmt.Errorf("read attempts: %w", err)
	}
	defer f.Close()
	var l Lifetime
	lr := newLineReader(f, f, -1)
	for {
		line, _, _, lineNo, err := lr.next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Lifetime{}, fmt.Errorf("read attempts of %s: %w", path, err)
		}
		if lineNo > 1 && bytes.HasPrefix(line, attemptPrefix) {
			if e, err := decodeEntry(line); err == nil {
				l.add(*e.Attempt)
			}
		}
	}
	return l.Total(), nil
}
