package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// startPiped runs ink with args, its stdout a pipe the test reads and may
// close early, as `ink … | head -3` does. The process is killed by pid when
// the test ends.
func (e *env) startPiped(args ...string) (*proc, *bufio.Reader, io.Closer) {
	e.t.Helper()
	p := &proc{cmd: exec.Command(inkBin, args...), done: make(chan struct{})}
	p.cmd.Dir = e.dir
	p.cmd.Env = e.vars
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	p.cmd.Stdout = w
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	w.Close()
	pid := p.cmd.Process.Pid
	e.t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
		<-p.done
		r.Close()
	})
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, bufio.NewReader(r), r
}

// lastEnd is the end entry of the newest attempt of the transcript at path.
func lastEnd(t *testing.T, path string) (session.AttemptEntry, bool) {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return tr.LastAttemptEnd()
}

// noSocketDirs fails when ink left a socket directory behind.
func noSocketDirs(t *testing.T, home string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(home, "run", "*"))
	if len(left) > 0 {
		t.Errorf("socket directories left behind: %v", left)
	}
}

// TestJSONReaderGoesAway: `ink run --json … | head -3`. Once stdout is
// closed, the supervisor stops writing to it and cancels the run as a first
// Ctrl-C would: it is not killed by SIGPIPE (exit 141), every agent records
// how it stopped, no worker or socket directory is left, and the exit code
// is the run's (130, aborted).
func TestJSONReaderGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "slow one"}}, {tool: task, args: {prompt: "slow two"}}]
  - when: {depth: 0}
    reply: {text: "main done"}
  - when: {depth: 1}
    reply: {text: "child done", delay: 60s}
`)
	p, out, closer := e.startPiped("run", "--json", "--model", "script:"+script, "start")
	var pids []int
	var mainPath string
	var children []string
	for len(children) < 2 {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("stdout ended early: %v\nstderr:\n%s", err, p.stderr.String())
		}
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("not an event: %q", line)
		}
		switch ev["type"] {
		case "run.start":
			mainPath = ev["transcript"].(string)
		case "worker.start", "task.start":
			pids = append(pids, int(ev["pid"].(float64)))
			if ev["type"] == "task.start" {
				children = append(children, ev["childId"].(string))
			}
		}
	}
	closer.Close() // the reader goes away, like head after its lines
	code := p.wait(t, 2*time.Minute)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d (the run was cancelled)\nstderr:\n%s", code, exitInterrupted, p.stderr.String())
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "ink: stdout was closed (its reader went away): cancelling every agent; each records how it stopped") {
		t.Errorf("stderr does not say why the run stopped:\n%s", stderr)
	}
	if !strings.Contains(stderr, "the main agent ended aborted: cancelled by the user") || !strings.Contains(stderr, "continue it with `ink run --session ") {
		t.Errorf("stderr lacks the run's end and how to continue it:\n%s", stderr)
	}
	for _, pid := range pids {
		if !gone(pid, 10*time.Second) {
			t.Errorf("worker %d outlived the run", pid)
		}
	}
	if end, ok := lastEnd(t, mainPath); !ok || end.Status != "aborted" {
		t.Errorf("main transcript ends %+v, want an aborted attempt", end)
	}
	for _, id := range children {
		if end, ok := lastEnd(t, session.ChildPath(mainPath, id)); !ok || end.Status != "aborted" {
			t.Errorf("child %s ends %+v, want an aborted attempt", id, end)
		}
	}
	noSocketDirs(t, e.home)
}

// TestAnswerReaderGoesAway: `ink run … | head -1` where head is gone before
// the answer comes. ink is not killed by SIGPIPE: the run completes, ink
// says on stderr where the answer is, and exits 0 as the run did.
func TestAnswerReaderGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - reply: {text: "line one\nline two\nline three", delay: 300ms}
`)
	p, _, closer := e.startPiped("run", "--model", "script:"+script, "answer")
	closer.Close()
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "ink: stdout was closed before the answer could be written (broken pipe); read it with `ink sessions show ") {
		t.Errorf("stderr does not say where the answer is:\n%s", stderr)
	}
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 || list[0].LastStatus != "completed" {
		t.Fatalf("sessions %+v (%v), want one completed", list, err)
	}
	noSocketDirs(t, e.home)
}

// TestDemoReaderGoesAway: `ink demo | head -2`. The demo goes on to its end
// without stdout, removes its scratch directory and exits 0.
func TestDemoReaderGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	p, out, closer := e.startPiped("demo")
	for i := 0; i < 2; i++ {
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatalf("line %d: %v\nstderr:\n%s", i+1, err, p.stderr.String())
		}
	}
	closer.Close()
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "ink: shell completed") {
		t.Errorf("the demo did not play to its end:\n%s", p.stderr.String())
	}
	noDemoDirs(t, tmp)
}

// noDemoDirs fails when a demo's scratch directory is left in tmp.
func noDemoDirs(t *testing.T, tmp string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(tmp, "ink-demo-*")); len(left) > 0 {
		t.Errorf("the demo left %v behind", left)
	}
}
