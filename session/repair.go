package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/inkdev/ink/durable"
)

// Tail repair actions.
const (
	RepairNone       = "none"       // the file ended cleanly; nothing was written
	RepairTruncated  = "truncated"  // an invalid final line was cut off at its first byte
	RepairTerminated = "terminated" // a complete final line got its missing "\n"
)

// TailRepair reports what RepairTail did.
type TailRepair struct {
	// Action is RepairNone, RepairTruncated or RepairTerminated.
	Action string
	// Offset is where the final line starts (the new file size after a
	// truncation).
	Offset int64
	// Bytes is the number of bytes removed (truncated) or added (terminated).
	Bytes int
	// Reason says what was wrong with the final line.
	Reason string
}

// String words the repair for a user.
func (r TailRepair) String() string {
	switch r.Action {
	case RepairTruncated:
		return fmt.Sprintf("removed %d bytes of a torn final line at byte %d (%s)", r.Bytes, r.Offset, r.Reason)
	case RepairTerminated:
		return fmt.Sprintf("added the missing newline after the final line at byte %d", r.Offset)
	default:
		return "transcript tail is clean"
	}
}

// RepairTail makes the transcript at path end in a complete line, touching
// nothing but its final line: a final line that is not a valid entry is cut
// off at its first byte (every earlier byte stays as it was); a valid final
// line missing its "\n" (the header included) gets one. A damaged header is
// never cut: the file is left as it was and an error says so. The file is
// fsynced after a change. The caller must hold the transcript's lease, and
// should have checked the rest of the file with Open: only the final line
// is read here.
//
// ink repairs a tail through Resumable.RepairTail (OpenAttempt); this path
// form is kept for the tests and benchmarks (bench) that repair a file
// without reading it for a resume.
func RepairTail(path string) (TailRepair, error) {
	return repairTail(durable.OS, path)
}

// repairTail is RepairTail through fsys.
func repairTail(fsys durable.FS, path string) (TailRepair, error) {
	f, fi, err := openForWrite(fsys, path, os.O_RDWR)
	if err != nil {
		return TailRepair{}, fmt.Errorf("repair tail: %w", err)
	}
	defer f.Close()
	size := fi.Size()
	if size == 0 {
		return TailRepair{}, fmt.Errorf("repair tail: %s is empty: it has no header, so there is nothing to repair (delete it)", path)
	}
	var lastByte [1]byte
	if _, err := f.ReadAt(lastByte[:], size-1); err != nil {
		return TailRepair{}, fmt.Errorf("repair tail of %s: %w", path, err)
	}
	terminated := lastByte[0] == '\n'
	searchEnd := size
	if terminated {
		searchEnd = size - 1
	}
	nl, err := lastNewlineBefore(f, searchEnd)
	if err != nil {
		return TailRepair{}, fmt.Errorf("repair tail of %s: %w", path, err)
	}
	start := nl + 1
	line := make([]byte, size-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return TailRepair{}, fmt.Errorf("repair tail of %s: %w", path, err)
	}

	action, reason, err := judgeTail(line, start, terminated)
	if err != nil {
		return TailRepair{}, fmt.Errorf("repair tail: %s:1: %v; the header is damaged and ink will not cut it (delete the file or start a new session)", path, err)
	}

	switch action {
	case RepairTruncated:
		if err := f.Truncate(start); err != nil {
			return TailRepair{}, fmt.Errorf("repair tail of %s: truncate: %w", path, err)
		}
		if err := fsync(f, path); err != nil {
			return TailRepair{}, fmt.Errorf("repair tail of %s: fsync: %w", path, err)
		}
		return TailRepair{Action: RepairTruncated, Offset: start, Bytes: len(line), Reason: reason}, nil
	case RepairTerminated:
		if _, err := f.WriteAt([]byte("\n"), size); err != nil {
			return TailRepair{}, fmt.Errorf("repair tail of %s: %w", path, err)
		}
		if err := fsync(f, path); err != nil {
			return TailRepair{}, fmt.Errorf("repair tail of %s: fsync: %w", path, err)
		}
		return TailRepair{Action: RepairTerminated, Offset: start, Bytes: 1, Reason: reason}, nil
	default:
		return TailRepair{Action: RepairNone, Offset: start}, nil
	}
}

// judgeTail decides what the final line of a transcript needs. line starts
// at offset start and ends with "\n" when terminated. A header line (start
// 0) that is not a valid header is an error: it is never cut.
func judgeTail(line []byte, start int64, terminated bool) (action, reason string, err error) {
	if start == 0 {
		if _, err := parseHeader(line); err != nil && !errors.Is(err, ErrInvalidLaunch) {
			return "", "", err
		}
	} else if _, err := decodeEntry(line); err != nil {
		return RepairTruncated, tornReason(err, terminated), nil
	}
	if !terminated {
		return RepairTerminated, "the final line lacked its newline", nil
	}
	return RepairNone, "", nil
}

// lastNewlineBefore returns the offset of the last "\n" in f before end, or
// -1 when there is none. It reads backwards in chunks.
func lastNewlineBefore(f io.ReaderAt, end int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end > 0 {
		from := max(0, end-chunk)
		b := buf[:end-from]
		if _, err := f.ReadAt(b, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return from + int64(i), nil
		}
		end = from
	}
	return -1, nil
}
