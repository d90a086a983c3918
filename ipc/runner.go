package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"
)

// processRunner starts the worker command for go-plugin the way ink wants
// it: in its own session (so terminal signals and job control of the host do
// not reach it, and its process group can be killed as a whole), with stdin
// on /dev/null (a worker never reads the user's terminal), and killed as a
// group. It is safe for concurrent use.
type processRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	// tail keeps the last stderr lines go-plugin read, for error messages.
	tail *tailBuffer
	// exited is closed when Wait has returned; waitErr is its result.
	exited  chan struct{}
	waitErr error

	mu  sync.Mutex
	pid int
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner prepares cmd, which must not have been started.
func newProcessRunner(cmd *exec.Cmd) (*processRunner, error) {
	cmd.Stdin = nil
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setpgid = false // Setsid already makes a new group; both fail with EPERM.
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stderr: %w", err)
	}
	tail := newTailBuffer(stderrTailLines)
	return &processRunner{
		cmd:    cmd,
		stdout: stdout,
		stderr: teeReadCloser{Reader: io.TeeReader(stderr, tail), Closer: stderr},
		tail:   tail,
		exited: make(chan struct{}),
	}, nil
}

// Start starts the worker process.
func (r *processRunner) Start(_ context.Context) error {
	if err := r.cmd.Start(); err != nil {
		return err // names the command: "fork/exec /path/to/ink: no such file or directory"
	}
	r.mu.Lock()
	r.pid = r.cmd.Process.Pid
	r.mu.Unlock()
	return nil
}

// Wait waits for the worker process to exit and releases its resources.
func (r *processRunner) Wait(_ context.Context) error {
	r.waitErr = r.cmd.Wait()
	close(r.exited)
	return r.waitErr
}

// exitState waits up to d for the worker to exit and describes how it
// ended ("exit status 3", "signal: killed"); ok is false if it still runs.
func (r *processRunner) exitState(d time.Duration) (state string, ok bool) {
	select {
	case <-r.exited:
	case <-time.After(d):
		return "", false
	}
	if r.waitErr != nil {
		var exitErr *exec.ExitError
		if errors.As(r.waitErr, &exitErr) {
			return exitErr.ProcessState.String(), true
		}
		return r.waitErr.Error(), true
	}
	return r.cmd.ProcessState.String(), true
}

// stderrTail returns the last lines the worker wrote to its stderr.
func (r *processRunner) stderrTail() string {
	return r.tail.String()
}

// Kill sends SIGKILL to the worker's whole process group. It may be called
// any number of times, also after the worker exited.
func (r *processRunner) Kill(_ context.Context) error {
	pid := r.Pid()
	if pid <= 0 {
		return nil
	}
	killGroup(pid)
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill worker %d: %w", pid, err)
	}
	return nil
}

// Pid returns the worker's pid, or 0 before Start.
func (r *processRunner) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

// Stdout returns the worker's stdout, which carries the handshake line.
func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr returns the worker's original stderr.
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }

// Name returns the worker command's path.
func (r *processRunner) Name() string { return r.cmd.Path }

// ID returns the worker's pid as a string, or "" before Start.
func (r *processRunner) ID() string {
	pid := r.Pid()
	if pid <= 0 {
		return ""
	}
	return strconv.Itoa(pid)
}

// Diagnose explains a failed handshake.
func (r *processRunner) Diagnose(_ context.Context) string {
	return fmt.Sprintf("The worker command must be this same ink binary run as a worker by an ink host; "+
		"check that %s is an ink binary for this machine, and reinstall ink if it is not.", r.cmd.Path)
}

// PluginToHost returns the worker's address unchanged: both ends share one
// file system.
func (r *processRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin returns the host's address unchanged.
func (r *processRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// killGroup sends SIGKILL to every process in the process group pgid and,
// since a worker leads its own session (Setsid), to every other group of
// that session: its tools run each command in a group of its own, which a
// worker that is killed (rather than cancelled) can no longer stop. A group
// that no longer exists is not an error.
func killGroup(pgid int) {
	if pgid <= 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for _, g := range sessionGroups(pgid) {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}

// sessionGroups returns the process groups of session sid other than sid
// itself, read from /proc (none where there is no /proc). The kernel does
// not reuse a pid while it still names a session, so sid cannot have come
// to mean another process.
func sessionGroups(sid int) []int {
	seen := map[int]bool{}
	var groups []int
	for _, p := range sessionProcs(sid) {
		if p.pgrp == sid || p.pgrp <= 0 || seen[p.pgrp] {
			continue
		}
		seen[p.pgrp] = true
		groups = append(groups, p.pgrp)
	}
	return groups
}

// sessionProc is one process of a session as /proc/PID/stat shows it.
type sessionProc struct {
	pid, pgrp int
	state     string // R, S, T, Z, X, …
}

// sessionProcs returns the processes whose session is sid, read from
// /proc (none where there is no /proc).
func sessionProcs(sid int) []sessionProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []sessionProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the parenthesised command name: state ppid pgrp session ...
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 4 {
			continue
		}
		pgrp, err1 := strconv.Atoi(f[2])
		sess, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || sess != sid {
			continue
		}
		out = append(out, sessionProc{pid: pid, pgrp: pgrp, state: f[0]})
	}
	return out
}

// maxKillRounds bounds how often killSession looks for the session's
// processes again: a process may fork between a look and its kill.
const maxKillRounds = 20

// killSession SIGKILLs every process of session sid by its pid, found by
// its session id in /proc, and looks again until none is left (zombies,
// already dead, are not counted): a launch command leads a session of its
// own, and what it runs through sh -c, unshare or a wrapper may sit in
// process groups of its own that killing the command's group would miss.
// A process that left the session (setsid, as a worker behind ssh is) is
// not touched. Nothing is found by name. Where there is no /proc only the
// session leader's group is killed.
func killSession(sid int) {
	if sid <= 0 {
		return
	}
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	for range maxKillRounds {
		pids := sessionMembers(sid)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// sessionMembers returns the live (not zombie) processes of session sid,
// read from /proc (none where there is no /proc). The kernel does not
// reuse a pid while it still names a session, so sid cannot have come to
// mean another session while one of its processes lives.
func sessionMembers(sid int) []int {
	var pids []int
	for _, p := range sessionProcs(sid) {
		if p.state != "Z" && p.state != "X" {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// stderrTailLines is how many of the worker's last stderr lines an error
// message quotes.
const stderrTailLines = 8

// teeReadCloser reads through Reader and closes Closer.
type teeReadCloser struct {
	io.Reader
	io.Closer
}

// tailBuffer keeps the last n lines written to it (each cut to 512 bytes).
// It is safe for concurrent use.
type tailBuffer struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

// Write records p's lines. It never fails.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			b.push()
			continue
		}
		if len(b.partial) < 512 {
			b.partial = append(b.partial, c)
		}
	}
	return len(p), nil
}

func (b *tailBuffer) push() {
	line := strings.TrimRight(string(b.partial), "\r")
	b.partial = b.partial[:0]
	if strings.TrimSpace(line) == "" {
		return
	}
	b.lines = append(b.lines, line)
	if len(b.lines) > b.n {
		b.lines = b.lines[len(b.lines)-b.n:]
	}
}

// String returns the kept lines, the unfinished last one included.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := append([]string(nil), b.lines...)
	if len(b.partial) > 0 {
		lines = append(lines, string(b.partial))
	}
	return strings.Join(lines, "\n")
}
