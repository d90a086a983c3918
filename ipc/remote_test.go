package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// execWorker builds an ExecConfig whose command runs the test binary in
// role, as `exec:…` would run `ink worker --remote`, and ends the worker by
// its pid in Cleanup.
func execWorker(t *testing.T, role string) (ExecConfig, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "worker.pid")
	t.Cleanup(func() {
		if pid := readPid(pidFile); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return ExecConfig{
		Command: fmt.Sprintf("exec %q -test.run=^$", os.Args[0]),
		Env:     []string{roleEnv + "=" + role, pidFileEnv + "=" + pidFile, "PATH=" + os.Getenv("PATH")},
	}, pidFile
}

// TestExecRoundTrip: a worker reached through a command's stdin and stdout
// answers Info and runs an attempt as a go-plugin worker does, with its
// stdin moved off the stream; Shutdown lets it exit on its own.
func TestExecRoundTrip(t *testing.T) {
	t.Parallel()
	cfg, pidFile := execWorker(t, "remote-worker")
	var stderr syncBuffer
	cfg.Stderr = &stderr
	c, err := StartExec(t.Context(), cfg)
	if err != nil {
		t.Fatalf("StartExec: %v", err)
	}
	t.Cleanup(c.Kill)
	info := c.Info()
	if info.ProtocolVersion != ProtocolVersion || info.InkVersion != version.Ink || info.Pid != readPid(pidFile) {
		t.Fatalf("Info = %+v, want protocol %d, version %s, pid %d", info, ProtocolVersion, version.Ink, readPid(pidFile))
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	stream, err := c.Attempt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(runMsg("roundtrip", `{"prompt":"x"}`)); err != nil {
		t.Fatal(err)
	}
	ev, _ := recvMsg(t, stream).(Event)
	var rep workerReport
	if w, ok := ev.Body.(event.Warning); !ok || json.Unmarshal([]byte(w.Text), &rep) != nil {
		t.Fatalf("first message = %#v, want the worker's report", ev)
	}
	if rep.Stdin != os.DevNull {
		t.Errorf("the remote worker's stdin is %q; want %s, the stream moved off descriptor 0", rep.Stdin, os.DevNull)
	}
	if _, ok := recvMsg(t, stream).(TaskRequest); !ok {
		t.Fatal("no task request")
	}
	rec := &session.TaskRecord{Version: 1, AttemptID: session.NewID(), TaskToolCallID: "call-1", ParentSessionID: session.NewID(),
		ChildID: session.NewID(), Launched: true, Cwd: "/work", Status: session.StatusCompleted, Turns: 1}
	if err := stream.Send(TaskAnswer{CorrelationID: "c1", Content: "done", Record: rec}); err != nil {
		t.Fatal(err)
	}
	recvMsg(t, stream)
	if out, ok := recvMsg(t, stream).(Outcome); !ok || out.Text != "answered: done" {
		t.Fatalf("outcome = %#v", out)
	}
	if err := stream.Send(Ack{}); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("Recv after the outcome = %v, want EOF", err)
	}
	c.Shutdown()
	if st := c.cmd.ProcessState; st == nil || !st.Success() {
		t.Fatalf("the worker did not exit on its own with 0 once its host closed the stream: %v\nstderr:\n%s", st, stderr.String())
	}
}

// TestExecRefusals: a command that does not reach a worker of this very
// ink is refused at the handshake with one message saying what ran and
// what to do, and nothing is left running.
func TestExecRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role string
		want []string
		as   any
	}{
		{"remote-worker-other-version", []string{"the remote worker is ink v0.0.1-elsewhere and this ink is " + version.Ink, "install the same version"}, new(*VersionMismatchError)},
		{"remote-worker-chatty", []string{`"Welcome to buildbox! Last login: yesterday"`, "print nothing before it"}, nil},
		{"exit", []string{"printed nothing", "is ink installed"}, nil},
	} {
		t.Run(tc.role, func(t *testing.T) {
			t.Parallel()
			cfg, _ := execWorker(t, tc.role)
			c, err := StartExec(t.Context(), cfg)
			if err == nil {
				c.Kill()
				t.Fatal("StartExec accepted the worker")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.as != nil {
				var vm *VersionMismatchError
				if !errors.As(err, &vm) {
					t.Errorf("error %T is not a *VersionMismatchError", err)
				}
			}
		})
	}
	if _, err := StartExec(t.Context(), ExecConfig{Command: "  "}); err == nil || !strings.Contains(err.Error(), "launch command is empty") {
		t.Errorf("an empty command: %v", err)
	}
}

// TestExecKill: Kill ends the command and the worker behind it, and a
// worker whose stream closes mid-attempt sees its host gone.
func TestExecKill(t *testing.T) {
	t.Parallel()
	cfg, pidFile := execWorker(t, "remote-worker")
	c, err := StartExec(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := readPid(pidFile)
	stream, err := c.Attempt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(runMsg("big", "payload")); err != nil {
		t.Fatal(err)
	}
	recvMsg(t, stream)
	c.Kill()
	if alive(pid) {
		t.Errorf("worker %d still runs after Kill", pid)
	}
}

// TestExecKillsTheSession: Kill ends every process of the launch
// command's session, also those in process groups of their own (as sh
// with job control, unshare or a wrapper leaves them), by pid; a process
// that left the session is not touched.
func TestExecKillsTheSession(t *testing.T) {
	t.Parallel()
	cfg, _ := execWorker(t, "remote-worker")
	dir := t.TempDir()
	stray, away := filepath.Join(dir, "stray.pid"), filepath.Join(dir, "away.pid")
	// bash's job control (set -m) puts the background sleep in a process
	// group of its own, in the command's session; setsid's sleep leaves
	// the session.
	cfg.Command = fmt.Sprintf("bash -c 'set -m; sleep 300 & echo $! > %s'; setsid sleep 300 & echo $! > %s; %s", stray, away, cfg.Command)
	c, err := StartExec(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	strayPid, awayPid := readPid(stray), readPid(away)
	t.Cleanup(func() {
		for _, pid := range []int{strayPid, awayPid} {
			if pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if strayPid <= 0 || awayPid <= 0 {
		t.Fatalf("the command's sleeps did not start (%d, %d)", strayPid, awayPid)
	}
	if pgid, sid := procGroupAndSession(strayPid); pgid == c.Pid() || sid != c.Pid() {
		t.Fatalf("the stray sleep is in group %d of session %d; want a group of its own in session %d", pgid, sid, c.Pid())
	}
	c.Kill()
	if alive(strayPid) {
		t.Errorf("the stray process %d of the command's session still runs after Kill", strayPid)
	}
	if !alive(awayPid) {
		t.Errorf("the process %d that left the command's session was killed", awayPid)
	}
}

// TestExecHostLost: a worker beyond the command's process group (as one
// behind ssh or in a container is) sees its host gone when the stream
// closes mid-attempt: its attempt's context ends, stray output after that
// neither blocks nor reaches the stream, and it exits.
func TestExecHostLost(t *testing.T) {
	t.Parallel()
	cfg, pidFile := execWorker(t, "remote-worker")
	cfg.Command = "exec setsid " + strings.TrimPrefix(cfg.Command, "exec ")
	c, err := StartExec(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := readPid(pidFile)
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(pidfd)
	marker := filepath.Join(t.TempDir(), "marker")
	stream, err := c.Attempt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(runMsg("hold", marker)); err != nil {
		t.Fatal(err)
	}
	// The attempt is running once the worker noted its start; its stream
	// sent nothing yet, so the marker file is the event to wait for.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if data, _ := os.ReadFile(marker); strings.Contains(string(data), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hold attempt never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Kill()
	if n, err := pollExit(pidfd, 20_000); err != nil || n != 1 {
		t.Fatalf("worker %d still runs 20 s after its stream closed (poll %d, %v)", pid, n, err)
	}
	data, _ := os.ReadFile(marker)
	if !strings.Contains(string(data), "ctx done: context canceled") || !strings.Contains(string(data), "finished") {
		t.Errorf("the worker's attempt did not end as host lost:\n%s", data)
	}
}

// pollExit waits up to ms milliseconds for the process of pidfd to exit,
// polling again when a signal interrupts the wait.
func pollExit(pidfd, ms int) (int, error) {
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		if err != unix.EINTR {
			return n, err
		}
	}
}
