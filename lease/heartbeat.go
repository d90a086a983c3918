package lease

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// DefaultHeartbeat is the heartbeat interval used when StartHeartbeat is
// given 0, and assumed for holders whose metadata names none.
const DefaultHeartbeat = time.Second

// FenceError says that another holder took the lease over; the attempt that
// receives it must stop writing. Check and FenceErr return it.
type FenceError struct {
	// Path is the transcript path.
	Path string
	// By is the metadata of the holder that took over, nil when the lease
	// file was replaced without a new holder (yet).
	By *Meta
	// Epoch is the epoch this holder had.
	Epoch int64
}

// Error names the new holder and says that this attempt stopped.
func (e *FenceError) Error() string {
	if e.By == nil {
		return fmt.Sprintf("lease file for %s was removed or replaced while this attempt (epoch %d) held it, so its lock no longer excludes other writers; this attempt stopped writing",
			e.Path, e.Epoch)
	}
	return fmt.Sprintf("lease on %s was taken over by pid %d (epoch %d); this attempt stopped writing",
		e.Path, e.By.Pid, e.By.Epoch)
}

// ErrReleased is returned by Check after Release: nothing may be written
// under a released lease.
var ErrReleased = errors.New("lease released")

// StartHeartbeat starts a goroutine that rewrites the metadata every
// interval (DefaultHeartbeat when 0) with a fresh heartbeatAt and the current
// progressSeq. Before each beat it reads the metadata: when a newer epoch or
// another attempt's record is there, it stops, closes Fenced and makes
// Check return a *FenceError. Unless the acquisition record already holds
// this interval (Options.Heartbeat), the first beat runs before
// StartHeartbeat returns, so the interval is on disk for Probe from then
// on. Calls after the first are no-ops; Release stops the goroutine.
func (l *Lease) StartHeartbeat(interval time.Duration) {
	if interval <= 0 {
		interval = DefaultHeartbeat
	}
	l.hbOnce.Do(func() {
		if l.released.Load() {
			close(l.hbDone)
			return
		}
		want := max(interval.Milliseconds(), 1)
		l.mu.Lock()
		recorded := l.meta.HeartbeatIntervalMs == want
		l.meta.HeartbeatIntervalMs = want
		l.mu.Unlock()
		if !recorded && !l.beat() {
			close(l.hbDone)
			return
		}
		go l.heartbeat(interval)
	})
}

// stopHeartbeat stops the heartbeat goroutine, if any, and waits for it.
func (l *Lease) stopHeartbeat() {
	started := true
	l.hbOnce.Do(func() { started = false })
	if !started {
		return
	}
	select {
	case <-l.hbStop:
	default:
		close(l.hbStop)
	}
	<-l.hbDone
}

func (l *Lease) heartbeat(interval time.Duration) {
	defer close(l.hbDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.hbStop:
			return
		case <-t.C:
		}
		if !l.beat() {
			return
		}
	}
}

// beat performs one heartbeat. It returns false once the lease is fenced.
// The beat is written to its own file (BeatPath), never over the record
// that holds the epoch, and is not fsynced (see prepareMeta); it is written
// first, so that only a rename sits between the takeover check and
// publishing.
func (l *Lease) beat() bool {
	l.mu.Lock()
	mine := l.meta
	l.mu.Unlock()
	mine.HeartbeatAt = time.Now().UTC()
	mine.ProgressSeq = l.progress.Load()
	p, werr := prepareMeta(l.fsys, beatPathOf(l.metaPath), &mine, false, false)
	fe, stale := l.takenOver(mine)
	if fe != nil {
		if p != nil {
			p.discard()
		}
		l.setFenced(fe)
		return false
	}
	if werr == nil {
		werr = p.commit()
	}
	if werr == nil && stale {
		// An older holder's late write (or a deleted record) hides this
		// holder's epoch: put the record back, durably, as at acquisition.
		rec := mine
		if rp, err := prepareMeta(l.fsys, l.metaPath, &rec, true, false); err != nil {
			werr = err
		} else {
			werr = rp.commit()
		}
	}
	l.mu.Lock()
	l.beatErr = werr
	if werr == nil {
		l.meta.HeartbeatAt = mine.HeartbeatAt
		l.meta.ProgressSeq = mine.ProgressSeq
	}
	l.mu.Unlock()
	return true
}

// takenOver returns the fence error when another holder's record is on disk
// (a newer epoch, or this epoch under another attempt or pid) or the lease
// file at the path is no longer the one locked. An older epoch on disk is a
// stale holder's late write: the newer holder wins and rewrites its record.
//
// stale reports a record that does not hold this holder's epoch although
// nobody took over: an older epoch, or none at all.
func (l *Lease) takenOver(mine Meta) (fe *FenceError, stale bool) {
	cur, rerr := readRecord(l.metaPath)
	if rerr == nil && cur != nil {
		if cur.Epoch > mine.Epoch || (cur.Epoch == mine.Epoch && (cur.AttemptID != mine.AttemptID || cur.Pid != mine.Pid)) {
			return &FenceError{Path: l.path, By: cur, Epoch: mine.Epoch}, false
		}
	}
	at, err := os.Lstat(l.leasePath)
	if err != nil {
		return &FenceError{Path: l.path, Epoch: mine.Epoch}, false
	}
	if k, _ := keyOf(at); k != l.key {
		return &FenceError{Path: l.path, Epoch: mine.Epoch}, false
	}
	return nil, rerr == nil && (cur == nil || cur.Epoch < mine.Epoch)
}

func (l *Lease) setFenced(err *FenceError) {
	var e error = err
	if l.fence.CompareAndSwap(nil, &e) {
		close(l.fenced)
	}
}

// Progress records that the holder made progress; the next heartbeat
// publishes the new progressSeq. It is cheap and safe for concurrent use.
func (l *Lease) Progress() { l.progress.Add(1) }

// ProgressSeq returns the progress recorded so far (the progressSeq the
// next heartbeat publishes). It is safe for concurrent use.
func (l *Lease) ProgressSeq() int64 { return l.progress.Load() }

// Fenced returns a channel that is closed when the heartbeat finds that
// another holder took the lease over. It is never closed otherwise.
func (l *Lease) Fenced() <-chan struct{} { return l.fenced }

// FenceErr returns the *FenceError once the lease is fenced, else nil.
func (l *Lease) FenceErr() error {
	if p := l.fence.Load(); p != nil {
		return *p
	}
	return nil
}

// Check returns nil while the holder may write: it returns the fence error
// once the lease is fenced and ErrReleased after Release. Call it before
// each write; it is a couple of atomic loads.
func (l *Lease) Check() error {
	if p := l.fence.Load(); p != nil {
		return *p
	}
	if l.released.Load() {
		return fmt.Errorf("write to %s: %w", l.path, ErrReleased)
	}
	return nil
}

// HeartbeatErr returns the error of the last heartbeat write, nil when it
// succeeded (or no beat ran yet). A holder whose beats keep failing will
// look hung to others.
func (l *Lease) HeartbeatErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beatErr
}
