package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// HungGrace is added to three heartbeat intervals before a held lease whose
// heartbeat stopped counts as hung.
const HungGrace = 2 * time.Second

// HungAfter returns how old a held lease's heartbeat must be before it is
// hung: 3 × interval + HungGrace (interval DefaultHeartbeat when 0).
func HungAfter(interval time.Duration) time.Duration {
	if interval <= 0 {
		interval = DefaultHeartbeat
	}
	return 3*interval + HungGrace
}

// State is what Probe found.
type State int

const (
	// Free: nobody holds the lock; any previous holder is dead or done.
	Free State = iota
	// Held: a live process holds the lock and beats (or has not written
	// metadata yet).
	Held
	// Hung: a process holds the lock but its heartbeat is older than
	// HungAfter of its interval.
	Hung
)

// String returns "free", "held" or "hung".
func (s State) String() string {
	switch s {
	case Free:
		return "free"
	case Held:
		return "held"
	case Hung:
		return "hung"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText encodes the state as its String form (for --json output).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Status is the result of Probe.
type Status struct {
	State State
	// Meta is the metadata file's content: the holder's when Held or Hung,
	// the last holder's when Free; nil when there is none, and when the
	// lease is held but the record names a process of this boot that is
	// gone (a new holder has not written its own yet).
	Meta *Meta
	// HeartbeatAge is the age of Meta.HeartbeatAt (0 without Meta).
	HeartbeatAge time.Duration
}

// Probe tells whether the transcript's lease is free, held or hung without
// disturbing a holder: it tries the lock on its own descriptor and, if it
// got it, unlocks at once; a lock it finds taken is tried twice more a
// millisecond or two later, since another probe may hold it for that
// instant. It never creates the lease file. It is safe for concurrent use,
// but a concurrent Acquire may need one more try while a probe holds the
// lock.
func Probe(path string) (Status, error) {
	lp := FilePath(path)
	var st Status
	fi, err := os.Lstat(lp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return withMeta(path, Free)
	case err != nil:
		if errors.Is(err, fs.ErrPermission) {
			return st, fmt.Errorf("lease probe: %w", openError(lp, err))
		}
		return st, fmt.Errorf("lease probe %s: %w", lp, err)
	}
	if err := checkLeaseMode(lp, fi.Mode()); err != nil {
		return st, fmt.Errorf("lease probe: %w", err)
	}
	fl := flock.New(lp, flock.SetFlag(os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK))
	for try := 1; ; try++ {
		ok, err := fl.TryLock()
		if errors.Is(err, fs.ErrNotExist) {
			return withMeta(path, Free)
		}
		if err != nil {
			return st, fmt.Errorf("lease probe: %w", openError(lp, err))
		}
		if ok {
			if err := fl.Unlock(); err != nil {
				return st, fmt.Errorf("lease probe %s: %w", lp, err)
			}
			return withMeta(path, Free)
		}
		if try >= probeTries {
			return withMeta(path, Held)
		}
		// Another probe holds the lock for an instant: look again.
		time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
	}
}

// probeTries is how many times Probe tries the lock before it reports it
// held, so that another process's probe, which holds it for an instant, is
// not taken for a holder.
const probeTries = 3

// withMeta completes a probe in state with the metadata on disk; a held
// lease whose heartbeat is too old is Hung.
func withMeta(path string, state State) (Status, error) {
	st := Status{State: state}
	m, err := readMeta(MetaPath(path))
	if err != nil {
		return st, fmt.Errorf("lease probe: %w", err)
	}
	if m != nil && state == Held && holderGone(m) {
		// The lock is held, but not by the process the record names: a new
		// holder has locked it and not yet written its own record.
		m = nil
	}
	if m != nil {
		st.Meta = m
		st.HeartbeatAge = time.Since(m.HeartbeatAt)
		if state == Held && st.HeartbeatAge > HungAfter(m.HeartbeatInterval()) {
			st.State = Hung
		}
	}
	return st, nil
}

// holderGone reports whether the process m names provably no longer runs:
// it ran on this boot of this host and its pid is gone.
func holderGone(m *Meta) bool {
	if m.Pid <= 0 || m.Host != hostName() {
		return false
	}
	if b := bootID(); b == "" || m.BootID != b {
		return false
	}
	return errors.Is(syscall.Kill(m.Pid, 0), syscall.ESRCH)
}
