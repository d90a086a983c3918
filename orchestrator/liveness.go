package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/session"
)

// The supervisor judges a worker's liveness from the heartbeats it
// receives on the worker's Beats stream (Worker.Beats), for every
// launcher: a worker that sent no beat for 3 heartbeat intervals +
// lossGrace (4 s with the default 1 s interval) is lost. The supervisor
// then kills it, and once it is provably gone writes the attempt's end
// itself (interrupted, "worker lost: no heartbeat for 4s") and answers the
// parent as for any interrupted child, with the child's id to resume it.
// The check runs every livenessCheck, so a loss is acted on at most
// 3 × interval + lossGrace + livenessCheck after the last beat.
//
// This is apart from hung detection (the lease's heartbeat file, which
// `ink status` and `ink leases ls` read): a worker whose beats still come
// but whose lease heartbeat stalls is cancelled as hung, as before.

// lossGrace is added to three heartbeat intervals before a silent worker
// is lost.
const lossGrace = time.Second

// livenessCheck is how often the supervisor checks the last beat's age.
const livenessCheck = 250 * time.Millisecond

// lostAfter is how long a worker beating every interval (the default when
// 0) may stay silent before it is lost.
func lostAfter(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = ipc.DefaultBeatInterval
	}
	return 3*interval + lossGrace
}

// liveness follows one worker's beats. Times come from the caller (the
// time package's clock, which testing/synctest fakes) and are compared by
// their monotonic readings, so a suspended machine does not count as
// silence. It is used by one goroutine.
type liveness struct {
	after     time.Duration
	lastBeat  time.Time
	lastCheck time.Time
	progress  int64
}

// newLiveness starts following a worker launched at now, beating every
// interval: its first beat is due as if it had beaten at now.
func newLiveness(interval time.Duration, now time.Time) *liveness {
	return &liveness{after: lostAfter(interval), lastBeat: now, lastCheck: now}
}

// beat notes a heartbeat received at now.
func (l *liveness) beat(hb ipc.Heartbeat, now time.Time) {
	l.lastBeat, l.progress = now, hb.ProgressSeq
}

// lost reports, at a check made at now, whether the worker is lost. A
// check that comes more than lossGrace after the previous one does not
// judge: the supervisor itself was stalled (a loaded machine, a stopped
// process) and the beats it missed may be waiting to be read; the next
// check judges.
func (l *liveness) lost(now time.Time) bool {
	late := now.Sub(l.lastCheck) > lossGrace
	l.lastCheck = now
	if late {
		return false
	}
	return now.Sub(l.lastBeat) > l.after
}

// lostReason is the reason recorded for an attempt whose worker was lost.
func (l *liveness) lostReason() string {
	return fmt.Sprintf("%s: no heartbeat for %s", ipc.WorkerLost, l.after)
}

// errEndRecorded is returned by recordLost when the attempt's own end was
// already in the transcript (the worker wrote it before it went silent).
var errEndRecorded = errors.New("the attempt recorded its end")

// recordLost writes the end entry of the attempt attemptID of the
// transcript at path, whose worker was lost and has been stopped: status
// interrupted, reason, with the turns, usage (incomplete) and last text its
// messages show, and the transcript's lifetime. It holds the transcript's
// lease first (Store.Hold), which a live holder would refuse, reads it with
// a torn final line the killed worker may have left repaired, and writes
// nothing when the attempt is not the transcript's last one without an end
// (errEndRecorded when its end is there).
func (o *Orchestrator) recordLost(path, attemptID string, owner lease.Owner, reason string) error {
	h, err := o.store.Hold(path, owner)
	if err != nil {
		return fmt.Errorf("record the lost attempt's end: %w", err)
	}
	defer h.Release()
	tr, life, err := h.Read()
	if err != nil {
		return fmt.Errorf("record the lost attempt's end: %w", err)
	}
	start, open := unendedAttempt(tr)
	if !open || start.AttemptID != attemptID {
		if last, ok := tr.LastAttemptEnd(); ok && last.AttemptID == attemptID {
			return errEndRecorded
		}
		return fmt.Errorf("record the lost attempt's end: %s has no open attempt %s", path, attemptID)
	}
	prior := -1
	for _, a := range tr.Attempts() {
		if a.Phase == session.PhaseStart {
			prior++
		}
	}
	end := lostEnd(tr, prior, reason)
	end.Pid = start.Pid
	end.FinalTextLen, end.FinalText = len(end.FinalText), session.FinalTextTail(end.FinalText)
	life = life.With(end.Usage)
	end.Lifetime = &life
	if err := h.AppendAttempt(end); err != nil {
		return fmt.Errorf("record the lost attempt's end: %w", err)
	}
	return nil
}

// unendedAttempt returns the start entry of tr's last attempt when no end
// followed it.
func unendedAttempt(tr *session.Transcript) (session.AttemptEntry, bool) {
	for i := len(tr.Entries) - 1; i >= 0; i-- {
		if a := tr.Entries[i].Attempt; a != nil {
			return *a, a.Phase == session.PhaseStart
		}
	}
	return session.AttemptEntry{}, false
}
