package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/sandbox"
)

// Not parallel: it sets an environment variable the command must see.
func TestBashRuns(t *testing.T) {
	k := newKit(t)
	k.write(t, "sub/marker", "")
	tests := []struct {
		name    string
		args    any
		isError bool
		want    []string // substrings of the content
		exact   string   // the whole content, when set
	}{
		{name: "stdout and stderr combined", args: map[string]any{"command": "echo out; echo err >&2"},
			exact: "out\nerr\n\n[exit code 0]"},
		{name: "no output", args: map[string]any{"command": "true"}, exact: "(no output)\n[exit code 0]"},
		{name: "runs in cwd", args: map[string]any{"command": "pwd; ls sub"}, want: []string{k.root + "\n", "marker"}},
		{name: "stdin is empty", args: map[string]any{"command": "cat; echo after"}, exact: "after\n\n[exit code 0]"},
		{name: "non-zero exit is an error with output", args: map[string]any{"command": "echo partial; exit 3"},
			isError: true, exact: "partial\n\n[exit code 3]"},
		{name: "killed by a signal", args: map[string]any{"command": "kill -9 $$"}, isError: true, want: []string{"[killed by signal SIGKILL]"}},
		{name: "explicit timeout that is not hit", args: map[string]any{"command": "echo quick", "timeout": 30}, exact: "quick\n\n[exit code 0]"},
		{name: "inherits the environment", args: map[string]any{"command": `echo "$INK_TOOLS_BASH_PROBE"`}, want: []string{"probe-value"}},
	}
	t.Setenv("INK_TOOLS_BASH_PROBE", "probe-value")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := k.run(t, "bash", tc.args)
			if r.IsError != tc.isError {
				t.Fatalf("isError = %v, want %v; content:\n%s", r.IsError, tc.isError, r.Content)
			}
			if tc.exact != "" && r.Content != tc.exact {
				t.Fatalf("content = %q, want %q", r.Content, tc.exact)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("content %q lacks %q", r.Content, w)
				}
			}
		})
	}
}

func TestBashBadArguments(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.BashMaxTimeout = 60 * time.Second })
	tests := []struct {
		name string
		args string
		want string
	}{
		{"missing command", `{}`, "command is required"},
		{"blank command", `{"command":"  "}`, "command is required"},
		{"zero timeout", `{"command":"true","timeout":0}`, "timeout must be a positive number of seconds"},
		{"negative timeout", `{"command":"true","timeout":-5}`, "timeout must be a positive number of seconds"},
		{"timeout above the maximum", `{"command":"true","timeout":61}`, "more than the maximum 60 s"},
		{"enormous timeout", `{"command":"true","timeout":1e300}`, "more than the maximum 60 s"},
		{"tiny timeout", `{"command":"true","timeout":1e-12}`, "timeout must be a positive number of seconds"},
		{"timeout as a string", `{"command":"true","timeout":"10"}`, `"timeout" must be a number`},
		{"command not a string", `{"command":["ls"]}`, `"command" must be a string, got array`},
		{"unknown argument", `{"command":"true","cwd":"/"}`, `unknown argument "cwd"; bash takes: command, timeout`},
		{"not an object", `["true"]`, "arguments must be a JSON object"},
		{"broken JSON", `{"command":`, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "bash", tc.args), tc.want)
		})
	}
}

// forEachStart runs test, in parallel, once for each way bash starts:
// directly (danger-full-access) and through the sandbox's re-exec
// (workspace-write). Process groups, signals, timeouts and output must
// behave the same either way.
func forEachStart(t *testing.T, test func(t *testing.T, via func(*Env))) {
	t.Parallel()
	for _, mode := range []sandbox.Mode{sandbox.DangerFullAccess, sandbox.WorkspaceWrite} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			if mode.Confined() {
				requireLandlock(t)
			}
			test(t, func(e *Env) { e.Sandbox = mode })
		})
	}
}

// pidFile is a fresh path inside the root, where a command in the
// default (workspace-write) sandbox may write.
func (k *kit) pidFile(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(k.root, "pid-")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "pid")
}

// startGrandchild runs the bash tool with a command that starts a
// background sleep (a grandchild of the tool), records its pid and waits
// for it. It returns the pid once the file appears, and a channel with the
// tool's result.
func startGrandchild(t *testing.T, ctx context.Context, k *kit, extra map[string]any) (int, <-chan Result) {
	t.Helper()
	pidfile := k.pidFile(t)
	// "started" goes out before the pid file appears, so a test that
	// acts on the pid file finds it in the output.
	args := map[string]any{"command": "sleep 300 & echo started; echo $! > " + pidfile + "; wait"}
	for key, v := range extra {
		args[key] = v
	}
	done := make(chan Result, 1)
	go func() { done <- k.tools["bash"].Run(ctx, rawArgs(t, args)) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(pidfile)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			killOnCleanup(t, pid)
			return pid, done
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its pid file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Cancelling the context mid-command kills the whole process group, the
// background grandchild included, and reports the cause.
func TestBashCancelKillsProcessGroup(t *testing.T) {
	forEachStart(t, func(t *testing.T, via func(*Env)) {
		k := newKit(t, via, func(e *Env) { e.BashKillGrace = 500 * time.Millisecond })
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		pid, done := startGrandchild(t, ctx, k, nil)
		cancel(errors.New("the supervisor was lost"))
		var r Result
		select {
		case r = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("bash did not return within 5 s of cancellation")
		}
		wantError(t, r, "started")
		if !strings.HasPrefix(r.Content, "interrupted: the supervisor was lost\n") {
			t.Fatalf("content does not start with the interruption cause: %q", r.Content)
		}
		waitGone(t, pid, 2*time.Second)
	})
}

// A timeout kills the group too and says how long it waited.
func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	forEachStart(t, func(t *testing.T, via func(*Env)) {
		k := newKit(t, via, func(e *Env) { e.BashKillGrace = 500 * time.Millisecond })
		pid, done := startGrandchild(t, context.Background(), k, map[string]any{"timeout": 0.5})
		var r Result
		select {
		case r = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("bash did not return within 5 s of its timeout")
		}
		wantError(t, r, "timed out after 0.5 s", "process group were killed", "started")
		waitGone(t, pid, 2*time.Second)
	})
}

// A command that ignores SIGTERM is killed with SIGKILL after the grace.
func TestBashTimeoutEscalatesToKill(t *testing.T) {
	forEachStart(t, func(t *testing.T, via func(*Env)) {
		k := newKit(t, via, func(e *Env) { e.BashKillGrace = 200 * time.Millisecond })
		pidfile := k.pidFile(t)
		start := time.Now()
		r := k.run(t, "bash", map[string]any{"command": "trap '' TERM; echo stubborn; sleep 300 & echo $! > " + pidfile + "; wait; echo never", "timeout": 0.3})
		wantError(t, r, "timed out after 0.3 s", "stubborn")
		pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidfile)))
		if err != nil {
			t.Fatal(err)
		}
		killOnCleanup(t, pid)
		waitGone(t, pid, 2*time.Second)
		if strings.Contains(r.Content, "never") {
			t.Fatalf("the command kept running: %q", r.Content)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("took %s to stop a command that ignores SIGTERM", el)
		}
	})
}

// Background processes a finished command leaves behind are stopped, and
// one holding the output pipe does not keep the call waiting.
func TestBashStopsLeftoverBackgroundProcesses(t *testing.T) {
	forEachStart(t, func(t *testing.T, via func(*Env)) {
		k := newKit(t, via, func(e *Env) { e.BashKillGrace = 300 * time.Millisecond })
		for _, tc := range []struct{ name, redirect string }{
			{"holding the output pipe", ""},
			{"with output redirected", " >/dev/null 2>&1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pidfile := k.pidFile(t)
				start := time.Now()
				r := k.run(t, "bash", map[string]any{"command": "sleep 300" + tc.redirect + " & echo $! > " + pidfile + "; echo left"})
				wantOK(t, r)
				if !strings.HasPrefix(r.Content, "left\n") {
					t.Fatalf("content = %q", r.Content)
				}
				if el := time.Since(start); el > 5*time.Second {
					t.Fatalf("took %s: the call waited for its background process", el)
				}
				pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidfile)))
				if err != nil {
					t.Fatal(err)
				}
				killOnCleanup(t, pid)
				waitGone(t, pid, 2*time.Second)
			})
		}
	})
}

// Long output keeps its head and tail and says how much was dropped.
func TestBashOutputCap(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.BashMaxOutput = 1000 })
	r := k.run(t, "bash", map[string]any{"command": "seq 1 20000"})
	wantOK(t, r)
	full := 0
	for i := 1; i <= 20000; i++ {
		full += len(strconv.Itoa(i)) + 1
	}
	if !strings.HasPrefix(r.Content, "1\n2\n3\n") {
		t.Errorf("head lost: %q", r.Content[:40])
	}
	if !strings.HasSuffix(r.Content, "19999\n20000\n\n[exit code 0]") {
		t.Errorf("tail lost: %q", r.Content[len(r.Content)-60:])
	}
	note := "[... " + strconv.Itoa(full-1000) + " bytes of output dropped here"
	if !strings.Contains(r.Content, note) {
		t.Errorf("no drop note %q in output", note)
	}
	if len(r.Content) > 1400 {
		t.Errorf("capped output is %d bytes, want about 1000 plus the note", len(r.Content))
	}
}

// A context already cancelled starts nothing.
func TestBashCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped by the user"))
	marker := filepath.Join(k.root, "ran")
	r := k.runCtx(t, ctx, "bash", map[string]any{"command": "touch " + marker})
	wantError(t, r, "interrupted: stopped by the user", "not started")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the context was already cancelled")
	}
}
