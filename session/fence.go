package session

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
)

// Append is one batch of entries a remote worker asks its supervisor to
// write to the transcript of its attempt. Seq numbers the batches of one
// attempt from 1 without gaps; Lines are entries encoded with
// EncodeEntries, each ending in "\n".
type Append struct {
	Seq       uint64
	AttemptID string
	Epoch     int64
	Lines     [][]byte
	// Durable asks for an fsync before the batch is acknowledged: a tool
	// result, a compaction, the attempt's end.
	Durable bool
}

// Appended acknowledges one Append: where each of its lines landed.
type Appended struct {
	Seq     uint64
	Offsets []int64
	// Entries are the lines as written, decoded.
	Entries []Entry
}

// ErrFenced is wrapped by every refusal of a Fence: the worker that sent
// the batch no longer owns the transcript (or never did), nothing of the
// batch was written, and nothing more of it ever will be.
var ErrFenced = errors.New("fenced")

// Fence is the supervisor's side of a remote attempt's transcript: the only
// way the worker's entries reach the file. It accepts a batch only while
// it is open, when the batch names its attempt and epoch, the lease still
// holds (check), its Seq is the next one, and every line is a message,
// compaction or end entry of that attempt and epoch that fits the history
// (a compaction keeps only messages the model saw). A batch sent again
// with the same Seq and the same lines is acknowledged again and not
// written twice. Anything else closes the fence for good: the worker is
// stale (a newer attempt or epoch took over) or broken, and every later
// batch is refused. The end entry closes it too, once written.
//
// A Fence is safe for concurrent use. It does not own the Writer: whoever
// opened the transcript closes it.
type Fence struct {
	mu        sync.Mutex
	w         *Writer
	view      *View
	attemptID string
	epoch     int64
	check     func() error
	next      uint64
	closed    error
	// acked keeps the hash and answer of the last batches, for re-sends.
	acked map[uint64]ackedBatch
}

type ackedBatch struct {
	sum [sha256.Size]byte
	ack Appended
}

// keepAcked is how many acknowledged batches a Fence remembers for
// re-sends; a worker only re-sends what it has not seen acknowledged.
const keepAcked = 16

// NewFence opens the fence of attempt attemptID, running under epoch, on
// w: the transcript whose start entry of that attempt the supervisor just
// wrote, and whose history is view (the messages the model sees, which the
// fence keeps in step). check reports whether the supervisor still holds
// the transcript's lease at that epoch (lease.Lease.Check); nil means it
// always does.
func NewFence(w *Writer, view *View, attemptID string, epoch int64, check func() error) *Fence {
	if view == nil {
		view = NewView()
	}
	return &Fence{w: w, view: view, attemptID: attemptID, epoch: epoch, check: check, next: 1, acked: map[uint64]ackedBatch{}}
}

// Close refuses every later batch with reason (the attempt ended, was given
// up, or its worker was lost). Closing twice keeps the first reason.
func (f *Fence) Close(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed == nil {
		f.closed = fmt.Errorf("%w: %s", ErrFenced, reason)
	}
}

// Append writes a batch if the fence accepts it, and acknowledges it; see
// Fence. An error wrapping ErrFenced means nothing was written and the
// fence is closed; any other error is a failure to write (the Writer's
// error is sticky, and the fence closes too).
func (f *Fence) Append(a Append) (Appended, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed != nil {
		return Appended{}, f.closed
	}
	sum := batchSum(a.Lines)
	if a.Seq < f.next {
		if prev, ok := f.acked[a.Seq]; ok && prev.sum == sum && a.AttemptID == f.attemptID && a.Epoch == f.epoch {
			return prev.ack, nil
		}
	}
	if err := f.admit(a); err != nil {
		f.closed = fmt.Errorf("%w: %s", ErrFenced, err)
		return Appended{}, f.closed
	}
	entries, err := f.entries(a.Lines)
	if err != nil {
		f.closed = fmt.Errorf("%w: %s", ErrFenced, err)
		return Appended{}, f.closed
	}
	written, err := f.w.AppendLines(a.Lines, a.Durable)
	if err != nil {
		f.closed = fmt.Errorf("the transcript could not be written: %w", err)
		return Appended{}, err
	}
	ack := Appended{Seq: a.Seq, Entries: written}
	for _, e := range written {
		ack.Offsets = append(ack.Offsets, e.Offset)
	}
	for _, e := range entries {
		_ = f.view.Apply(e) // checked on a copy in entries
	}
	f.next++
	f.acked[a.Seq] = ackedBatch{sum: sum, ack: ack}
	delete(f.acked, a.Seq-keepAcked)
	if last := entries[len(entries)-1]; last.Attempt != nil {
		f.closed = fmt.Errorf("%w: attempt %s already ended", ErrFenced, f.attemptID)
	}
	return ack, nil
}

// admit checks a batch's attempt, epoch, lease and sequence number.
func (f *Fence) admit(a Append) error {
	switch {
	case a.AttemptID != f.attemptID:
		return fmt.Errorf("a batch of attempt %q reached the transcript of attempt %s", a.AttemptID, f.attemptID)
	case a.Epoch != f.epoch:
		return fmt.Errorf("a batch under epoch %d reached attempt %s, which runs under epoch %d", a.Epoch, f.attemptID, f.epoch)
	case a.Seq < f.next:
		return fmt.Errorf("batch %d was sent again with other lines (the next is %d)", a.Seq, f.next)
	case a.Seq > f.next:
		return fmt.Errorf("batch %d arrived where %d was next: batches were lost", a.Seq, f.next)
	case len(a.Lines) == 0:
		return fmt.Errorf("batch %d holds no entry", a.Seq)
	}
	if f.check != nil {
		if err := f.check(); err != nil {
			return fmt.Errorf("the supervisor no longer holds the transcript's lease: %v", err)
		}
	}
	return nil
}

// entries decodes a batch's lines and checks each against the attempt and
// a copy of the history; the fence's own view is left as it was.
func (f *Fence) entries(lines [][]byte) ([]Entry, error) {
	view := &View{msgs: f.view.msgs[:len(f.view.msgs):len(f.view.msgs)], ids: f.view.ids[:len(f.view.ids):len(f.view.ids)]}
	out := make([]Entry, len(lines))
	for i, l := range lines {
		if len(l) == 0 || l[len(l)-1] != '\n' {
			return nil, fmt.Errorf("line %d of the batch does not end in a newline", i+1)
		}
		e, err := decodeEntry(l)
		if err != nil {
			return nil, fmt.Errorf("line %d of the batch: %v", i+1, err)
		}
		if a := e.Attempt; a != nil {
			switch {
			case a.Phase != PhaseEnd:
				return nil, fmt.Errorf("line %d of the batch is a %s entry; only the supervisor writes an attempt's start", i+1, a.Phase)
			case a.AttemptID != f.attemptID || a.Epoch != f.epoch:
				return nil, fmt.Errorf("line %d of the batch ends attempt %s under epoch %d, not attempt %s under %d", i+1, a.AttemptID, a.Epoch, f.attemptID, f.epoch)
			case i != len(lines)-1:
				return nil, fmt.Errorf("line %d of the batch ends the attempt before the batch's last line", i+1)
			}
		}
		if err := view.Apply(e); err != nil {
			return nil, fmt.Errorf("line %d of the batch: %v", i+1, err)
		}
		out[i] = e
	}
	return out, nil
}

// batchSum is the hash of a batch's lines, to recognise a re-send.
func batchSum(lines [][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, l := range lines {
		fmt.Fprintf(h, "%d:", len(l))
		h.Write(l)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
