package worker

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A worker is a child subreaper: whatever its tools start and then leave
// behind — a daemon that double-forks, a command run under setsid or in a
// job-control group of its own — is re-parented to the worker rather than
// to init, so the worker can find it and end it before it exits. A worker
// that exits with status 0 has done so: nothing it started still runs, and
// its host need not search /proc for what is left of its session.

// exitLeftovers is the worker's exit status when it could not make sure
// that every process it started is gone; its host then sweeps its session.
const exitLeftovers = 3

// becomeSubreaper makes this process the reaper of its orphaned
// descendants.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapWait bounds how long endDescendants waits for SIGKILLed processes to
// die (one in uninterruptible sleep can take a while).
const reapWait = 2 * time.Second

// endDescendants SIGKILLs every process still below this one and reaps it,
// round after round (a killed process's own children come to this one),
// until none is left. It reports whether it made sure that none is: false
// when a process outlived reapWait or /proc could not tell. Call it only
// when nothing else in the process waits for children.
func endDescendants() bool {
	// Most attempts leave nothing behind: asking the kernel whether any
	// child is left costs a syscall, where listing them in /proc costs
	// the dentries the kernel must drop again when this process is reaped.
	if noChildren() {
		return true
	}
	deadline := time.Now().Add(reapWait)
	for {
		if time.Now().After(deadline) {
			return false
		}
		kids, err := childPids()
		if err != nil {
			return noChildren()
		}
		if len(kids) == 0 {
			return noChildren()
		}
		for _, pid := range kids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		for _, pid := range kids {
			if !reap(pid, deadline) {
				return false
			}
		}
	}
}

// reap waits for child pid to die and collects it, until deadline.
func reap(pid int, deadline time.Time) bool {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD), got == pid:
			return true
		case err != nil:
			return false
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// noChildren reaps any child that already exited and reports whether no
// child, living or dead, remains.
func noChildren() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return true
		case err != nil || pid == 0:
			return false // a child runs that /proc did not show
		}
	}
}

// childPids lists the children of every thread of this process.
func childPids() ([]int, error) {
	files, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(files) == 0 {
		return nil, errors.New("no /proc/self/task/*/children")
	}
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended
			}
			return nil, err
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
