package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoLeftoverProcesses: processes a bash command leaves running when it
// returns — in a job-control group of its own, and in a session of its own
// — are gone when ink has exited, although the worker reported and exited
// normally.
func TestNoLeftoverProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply:
      calls:
        - {tool: bash, args: {command: "set -m; sleep 300 >/dev/null 2>&1 & echo $! > group.pid; setsid sh -c 'echo $$ > session.pid; exec sleep 300' >/dev/null 2>&1 & while [ ! -s session.pid ]; do sleep 0.05; done; echo started"}}
  - reply: {text: "left them running"}
`)
	p, code := e.run("run", "--sandbox", "danger-full-access", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	for _, name := range []string{"group.pid", "session.pid"} {
		data, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil {
			t.Fatalf("the command did not record its background process: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %q", name, data)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		// ink has exited: the process must already be gone, or at most be
		// on its way out (a zombie of an init that reaps slowly).
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("the process a tool left in %s (pid %d) still runs after ink exited", strings.TrimSuffix(name, ".pid"), pid)
		}
	}
}
