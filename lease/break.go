package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrRefused marks a Break that refused to act; the error text says why and
// what to do instead.
var ErrRefused = errors.New("lease break refused")

type refusal struct {
	path   string
	reason string
}

func (e *refusal) Error() string {
	return fmt.Sprintf("lease on %s not broken: %s", e.path, e.reason)
}

func (e *refusal) Is(target error) bool { return target == ErrRefused }

// BreakOptions tunes Break.
type BreakOptions struct {
	// Force skips Confirm.
	Force bool
	// Confirm is asked, with the probed status, before any signal is sent
	// unless Force is set; nil (without Force) refuses.
	Confirm func(Status) bool
	// Grace is how long to wait for the lock to free after SIGTERM and again
	// after SIGKILL; 0 means 3 s.
	Grace time.Duration
}

// BreakResult reports what Break did.
type BreakResult struct {
	// Path is the transcript path.
	Path string
	// Before is the status Break acted on.
	Before Status
	// Pid is the holder's pid; Pgid the process group signalled, 0 when only
	// the pid was signalled (the holder does not lead its own group).
	Pid  int
	Pgid int
	// Signals lists the signals sent, in order.
	Signals []syscall.Signal
	// Freed is true when the lock was free at the end.
	Freed bool
	// Waited is the time spent waiting for the lock to free.
	Waited time.Duration
}

// String summarises the result in one line for the user.
func (r BreakResult) String() string {
	target := fmt.Sprintf("pid %d", r.Pid)
	if r.Pgid != 0 {
		target = fmt.Sprintf("process group %d (pid %d)", r.Pgid, r.Pid)
	}
	var names []string
	for _, s := range r.Signals {
		names = append(names, signalName(s))
	}
	sent := "no signal was needed"
	if len(names) > 0 {
		sent = "sent " + strings.Join(names, ", then ") + " to " + target
	}
	if r.Freed {
		return fmt.Sprintf("lease on %s is free: %s; the lock was free after %s. Its files were left in place.", r.Path, sent, formatAge(r.Waited))
	}
	return fmt.Sprintf("lease on %s is still held: %s and waited %s.", r.Path, sent, formatAge(r.Waited))
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGCONT:
		return "SIGCONT"
	}
	return s.String()
}

// Break frees the lease of a hung holder on this machine. It refuses (an
// error matching ErrRefused) a free lease, a healthy held one, one held from
// another host or boot, one held by this process, and — without Force — one
// that Confirm does not approve. Otherwise it sends SIGTERM (and SIGCONT, so
// a stopped holder can act on it) to the holder's process group — only the
// pid when the holder does not lead its own group — waits up to Grace for the
// lock to free, then sends SIGKILL and waits again. It deletes no file. The
// result says what was sent and whether the lock is free.
func Break(ctx context.Context, path string, opts BreakOptions) (BreakResult, error) {
	res := BreakResult{Path: path}
	if opts.Grace <= 0 {
		opts.Grace = 3 * time.Second
	}
	st, err := Probe(path)
	if err != nil {
		return res, fmt.Errorf("lease break: %w", err)
	}
	res.Before = st
	if err := breakable(path, st); err != nil {
		return res, err
	}
	m := st.Meta
	res.Pid = m.Pid
	if !opts.Force && (opts.Confirm == nil || !opts.Confirm(st)) {
		return res, &refusal{path, fmt.Sprintf("not confirmed (pid %d, heartbeat %s ago)", m.Pid, formatAge(st.HeartbeatAge))}
	}
	// The holder may have finished or resumed beating while we asked.
	now, err := Probe(path)
	if err != nil {
		return res, fmt.Errorf("lease break: %w", err)
	}
	if now.State == Free {
		res.Freed = true
		return res, nil
	}
	if now.State != Hung || now.Meta == nil || now.Meta.Epoch != m.Epoch || now.Meta.Pid != m.Pid {
		return res, &refusal{path, fmt.Sprintf("it changed while waiting for confirmation (now %s); check again with: ink leases ls", describeStatus(now))}
	}

	target := m.Pid
	if pgid, err := syscall.Getpgid(m.Pid); err == nil && pgid == m.Pid && pgid != syscall.Getpgrp() {
		res.Pgid = pgid
		target = -pgid
	}
	start := time.Now()
	for _, step := range []struct {
		sigs []syscall.Signal
	}{
		{[]syscall.Signal{syscall.SIGTERM, syscall.SIGCONT}},
		{[]syscall.Signal{syscall.SIGKILL}},
	} {
		for _, sig := range step.sigs {
			if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				res.Waited = time.Since(start)
				return res, fmt.Errorf("lease break %s: signal %s to %d: %w", path, signalName(sig), m.Pid, err)
			}
			res.Signals = append(res.Signals, sig)
		}
		freed, err := waitFree(ctx, path, opts.Grace)
		res.Waited = time.Since(start)
		if err != nil {
			return res, fmt.Errorf("lease break %s: %w", path, err)
		}
		if freed {
			res.Freed = true
			return res, nil
		}
	}
	return res, fmt.Errorf("lease on %s is still held %s after SIGKILL to pid %d; the process may be stuck in the kernel (uninterruptible disk or network wait): check it with ps -o stat,wchan -p %d",
		path, formatAge(res.Waited), m.Pid, m.Pid)
}

// breakable refuses every status Break must not act on.
func breakable(path string, st Status) error {
	switch {
	case st.State == Free:
		return &refusal{path, "not held: nobody holds it, so there is nothing to break"}
	case st.Meta == nil:
		return &refusal{path, "held by a process that has not written its metadata yet; check again in a moment with: ink leases ls"}
	case st.State == Held:
		return &refusal{path, fmt.Sprintf("healthy: heartbeat %s ago; stop its run instead", formatAge(st.HeartbeatAge))}
	}
	m := st.Meta
	if m.Host != hostName() {
		return &refusal{path, fmt.Sprintf("held by pid %d on host %s, which this machine cannot signal; stop it there", m.Pid, m.Host)}
	}
	if b := bootID(); m.BootID != "" && b != "" && m.BootID != b {
		return &refusal{path, fmt.Sprintf("held by pid %d of another boot (%s) of this host, which cannot be signalled from here", m.Pid, m.BootID)}
	}
	if m.Pid == os.Getpid() {
		return &refusal{path, "held by this very process; release it instead"}
	}
	if m.Pid <= 0 {
		return &refusal{path, fmt.Sprintf("its metadata names no valid pid (%d); inspect %s", m.Pid, MetaPath(path))}
	}
	return nil
}

func describeStatus(st Status) string {
	if st.Meta == nil {
		return st.State.String()
	}
	return fmt.Sprintf("%s by pid %d, epoch %d, heartbeat %s ago", st.State, st.Meta.Pid, st.Meta.Epoch, formatAge(st.HeartbeatAge))
}

// waitFree polls until the lease is free, grace elapses or ctx is done.
func waitFree(ctx context.Context, path string, grace time.Duration) (bool, error) {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := Probe(path)
		if err != nil {
			return false, err
		}
		if st.State == Free {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			st, err := Probe(path)
			return err == nil && st.State == Free, err
		case <-tick.C:
		}
	}
}
