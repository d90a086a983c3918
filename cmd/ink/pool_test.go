package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workerChildren lists the `ink worker` processes whose parent is pid.
func workerChildren(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "worker" {
			out = append(out, child)
		}
	}
	return out
}

// warmRun starts `ink run` whose main agent calls task once, then waits
// at a gate before it calls task again, and waits until the supervisor
// keeps the one warm worker its first task call asked for (as many as the
// calls launched), and no more. It returns the process, the main
// worker's pid and the idle workers. A worker counts once the host log
// says the pool holds it (its process exists before its handshake is
// done).
func warmRun(t *testing.T, e *env) (*proc, int, []int) {
	t.Helper()
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "one"}}]}
  - when: {depth: 0, turn: 2}
    reply: {calls: [{tool: bash, args: {command: "touch gate.waiting; while [ ! -e gate ]; do sleep 0.05; done; echo open", timeout: 120}}]}
  - when: {depth: 0, turn: 3}
    reply: {calls: [{tool: task, args: {prompt: "two"}}]}
  - when: {depth: 0}
    reply: {text: "both reported"}
  - when: {depth: 1}
    reply: {text: "report"}
`)
	p := e.start("run", "--json", "--sandbox", "danger-full-access", "--model", "script:"+script, "go")
	start := waitForEvent(t, p, "worker.start")
	mainPid := int(start["pid"].(float64))
	const want = 1
	var idle []int
	deadline := time.Now().Add(time.Minute)
	for {
		_, gateErr := os.Stat(filepath.Join(e.dir, "gate.waiting"))
		idle = slices.DeleteFunc(workerChildren(p.cmd.Process.Pid), func(pid int) bool { return pid == mainPid })
		hostLog, _ := os.ReadFile(filepath.Join(e.home, "logs", "ink.log"))
		if gateErr == nil && len(idle) >= want && bytes.Count(hostLog, []byte(`"msg":"Warm worker ready"`)) >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor keeps %d idle workers, want %d\nstderr:\n%s", len(idle), want, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(idle) != want {
		t.Fatalf("the supervisor keeps %d idle workers, want %d", len(idle), want)
	}
	return p, mainPid, idle
}

// TestWarmWorkers: a running `ink run` starts its first child fresh and
// workers ahead of the next ones beside it (none before: a run that never
// delegates pays for none), the second child runs on one of them, and no
// warm worker is left when the run ends.
func TestWarmWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, _, idle := warmRun(t, e)
	e.write("gate", "")
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	starts := ofType(evs, "task.start")
	if len(starts) != 2 {
		t.Fatalf("%d children started, want 2", len(starts))
	}
	warm := 0
	for _, s := range starts {
		pid := int(s["pid"].(float64))
		if !slices.Contains(idle, pid) {
			if s["childId"] != starts[0]["childId"] {
				t.Errorf("the second child ran in a fresh worker %d, not in a warm one %v", pid, idle)
			}
			continue // the first child starts fresh
		}
		warm++
		// Its log is the session's own, though the worker was started
		// before the session existed.
		data, err := os.ReadFile(filepath.Join(e.home, "logs", s["childId"].(string)+".log"))
		if err != nil || !strings.Contains(string(data), `"msg":"Attempt end"`) || !strings.Contains(string(data), `"pooled":true`) {
			t.Errorf("the warm worker's log for child %v: %v\n%s", s["childId"], err, data)
		}
	}
	if warm != 1 {
		t.Errorf("%d children ran in the warm workers %v, want 1; task.start: %v\nstderr:\n%s", warm, idle, starts, p.stderr.String())
	}
	for _, pid := range idle {
		if alive(pid) {
			t.Errorf("warm worker %d outlived the run", pid)
		}
	}
}

// TestWarmWorkersHostLoss: when the supervisor is SIGKILLed, its idle
// workers exit on their own, like every worker whose host is lost.
func TestWarmWorkersHostLoss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, mainPid, idle := warmRun(t, e)
	for _, pid := range append([]int{mainPid}, idle...) {
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range append([]int{mainPid}, idle...) {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("worker %d (main %d) still runs 30 s after its supervisor was killed; logs:\n%s", pid, mainPid, allLogs(e))
		}
	}
}

// allLogs is every worker log of e, for failure messages.
func allLogs(e *env) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(e.home, "logs", "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}
