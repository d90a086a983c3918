package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inotifyFds counts the inotify instances process pid holds open.
func inotifyFds(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list the descriptors of %d: %v", pid, err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.Contains(target, "inotify") {
			n++
		}
	}
	return n
}

// TestProfilesWatchedOnlyWhenUsable: agent profiles are watched only by a
// supervisor that can still start a child after its first one — `ink run`
// with delegation, `ink task` whose child may delegate — and not by a
// one-shot `ink task`, which reads them once and would only pay for the
// watcher's teardown when it exits.
func TestProfilesWatchedOnlyWhenUsable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		watch bool
	}{
		{"ink task", []string{"task"}, false},
		{"ink task --max-depth 2", []string{"task", "--max-depth", "2"}, true},
		{"ink run", []string{"run"}, true},
		{"ink run --max-depth 0", []string{"run", "--max-depth", "0"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			// The agent waits at a gate while the test looks at the
			// supervisor's descriptors.
			script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply: {calls: [{tool: bash, args: {command: "touch gate.waiting; while [ ! -e gate ]; do sleep 0.05; done; echo open", timeout: 120}}]}
  - reply: {text: "through the gate"}
`)
			args := append(append([]string{}, c.args...), "--sandbox", "danger-full-access", "--model", "script:"+script, "wait at the gate")
			p := e.start(args...)
			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(filepath.Join(e.dir, "gate.waiting")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the agent never reached the gate\nstderr:\n%s", p.stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			got := inotifyFds(t, p.cmd.Process.Pid)
			e.write("gate", "")
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
			}
			if c.watch && got != 1 {
				t.Fatalf("%s holds %d inotify instances, want 1: its profiles are not hot-reloaded", c.name, got)
			}
			if !c.watch && got != 0 {
				t.Fatalf("%s holds %d inotify instances, want none: nothing in it can use a profile edit", c.name, got)
			}
		})
	}
}
