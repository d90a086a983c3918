package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
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

// Loss is how the last holder of a free lease is known to be gone.
type Loss int

const (
	// NotLost: the lease is held, or its last holder ran on another host,
	// whose process a free lock here says nothing about (a lock over a
	// network filesystem): it may still run.
	NotLost Loss = iota
	// HostLost: the lock is free, so the kernel released it: the holder
	// died (SIGKILL, OOM, a crash) or finished.
	HostLost
	// MachineRestarted: as HostLost, and the holder ran in an earlier
	// boot of this machine (its boot id differs).
	MachineRestarted
)

// Lost says whether the last holder of the lease probed is provably gone,
// and how: the lock is free and the holder, if its record names one, ran
// on this host. A holder that stopped without recording how its attempt
// ended was lost with its host (every process killed at once, a crash of
// the machine).
func (st Status) Lost() Loss {
	if st.State != Free {
		return NotLost
	}
	m := st.Meta
	if m == nil {
		return HostLost
	}
	if m.Host != "" && m.Host != hostName() {
		return NotLost
	}
	if b := bootID(); m.BootID != "" && b != "" && m.BootID != b {
		return MachineRestarted
	}
	return HostLost
}

// String is the reason an attempt lost this way is recorded with: "host
// lost" (ipc.HostLost) or "machine restarted"; "" for NotLost.
func (l Loss) String() string {
	switch l {
	case HostLost:
		return "host lost"
	case MachineRestarted:
		return "machine restarted"
	}
	return ""
}

// Running reports whether the process m names may still run: it ran on
// this host, in this boot, and a process with its pid exists. A free lock
// normally proves its holder gone; a holder that still runs although the
// lock is free lost the lock file under it (someone replaced it), and will
// find itself fenced.
func (m *Meta) Running() bool {
	if m == nil || (m.Host != "" && m.Host != hostName()) {
		return false
	}
	if b := bootID(); m.BootID != "" && b != "" && m.BootID != b {
		return false
	}
	if m.Pid == os.Getpid() || !pidAlive(m.Pid) {
		return false
	}
	// A zombie (dead, not yet reaped: an orphan of a killed supervisor in
	// a container whose init does not reap) does not run, and a process
	// that started after the holder's record is another one with its pid.
	state, started, ok := procStat(m.Pid)
	if !ok {
		return true
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return m.StartedAt.IsZero() || !started.After(m.StartedAt.Add(time.Second))
}

// procStat reads a process's state and start time from /proc; ok is false
// where /proc cannot say.
func procStat(pid int) (state byte, started time.Time, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, time.Time{}, false
	}
	// The command name is in parentheses and may hold anything; the
	// fields after its closing one are state (3) ... starttime (22).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, time.Time{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0, time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, time.Time{}, false
	}
	bt := bootTime()
	if bt.IsZero() {
		return f[0][0], time.Time{}, true
	}
	const clkTck = 100 // USER_HZ on every Linux ink runs on
	return f[0][0], bt.Add(time.Duration(ticks) * time.Second / clkTck), true
}

// bootTime is when this machine booted, from /proc/stat (zero if unknown).
func bootTime() time.Time {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}
