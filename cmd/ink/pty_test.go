package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// onTerminal is ink started on a pseudo-terminal, as a user's shell starts
// it: stdin, stdout and stderr are the terminal, and ink leads the
// terminal's foreground process group, so Ctrl-C typed there reaches it.
type onTerminal struct {
	cmd  *exec.Cmd
	tty  *os.File // the terminal's master side
	out  syncBuffer
	done chan struct{}
}

func (e *env) startOnTerminal(args ...string) *onTerminal {
	e.t.Helper()
	o := &onTerminal{cmd: exec.Command(inkBin, args...), done: make(chan struct{})}
	o.cmd.Dir = e.dir
	o.cmd.Env = append(e.vars, "TERM=xterm")
	tty, err := pty.StartWithSize(o.cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		e.t.Fatal(err)
	}
	o.tty = tty
	pid := o.cmd.Process.Pid
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			o.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	go func() { o.cmd.Wait(); close(exited) }()
	go func() {
		<-exited
		// The reader sees EIO once the last writer is gone; give it a
		// moment to drain what is buffered before the test reads it.
		time.Sleep(100 * time.Millisecond)
		close(o.done)
	}()
	e.t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		<-o.done
		tty.Close()
	})
	return o
}

// await waits until the terminal shows text matching re.
func (o *onTerminal) await(t *testing.T, re string) {
	t.Helper()
	r := regexp.MustCompile(re)
	deadline := time.Now().Add(time.Minute)
	for !r.MatchString(o.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %s:\n%q", re, o.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for ink to exit and returns its exit code.
func (o *onTerminal) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-o.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("ink did not exit:\n%q", o.out.String())
	}
	return o.cmd.ProcessState.ExitCode()
}

// TestRunOnATerminal: on a terminal, `ink run` draws a live row per
// running agent (redrawn in place) above its plain lines, and prints the
// answer.
func TestRunOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "look around"}}]
      usage: {input: 1200, output: 40}
  - when: {depth: 0}
    reply: {text: "the answer, on stdout"}
  - when: {depth: 1}
    reply: {text: "looked", delay: 1500ms, usage: {input: 300, output: 9}}
`)
	o := e.startOnTerminal("run", "--model", "script:"+script, "go")
	if code := o.wait(t); code != 0 {
		t.Fatalf("exit %d\n%q", code, o.out.String())
	}
	out := o.out.String()
	for _, want := range []string{
		`ink: main started \(session [a-z0-9]+, model script:`,
		// A live row of the running child: label, status, elapsed, turns.
		`  main/1 +running +\d+s +1 turn +`,
		// Rows are erased before they are drawn again: the cursor goes
		// back up over them and everything below is erased.
		`\r\x1b\[\d*A\x1b\[J`,
		`ink: main/1 completed after [0-9.]+m?s: 1 turn, 300 in / 9 out`,
		`the answer, on stdout\r\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the terminal lacks %s:\n%q", want, out)
		}
	}
}

// TestDoubleCtrlCOnATerminal: Ctrl-C twice on the terminal while two
// children run bash commands: ink cancels, then kills every agent, exits
// 130, and the end line it shows for each agent agrees with that agent's
// transcript: the turns it spent, and how it ended when the transcript
// recorded it. Child "one" is stopped (SIGSTOP) before the first Ctrl-C,
// so that it cannot act on the cancel and the second Ctrl-C kills it
// before it reports anything; child "two" stops at once and records it.
func TestDoubleCtrlCOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "one"}}, {tool: task, args: {prompt: "two"}}]
      usage: {input: 1500, output: 60}
  - when: {depth: 0}
    reply: {text: "main done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 60"}}]
      usage: {input: 700, output: 20}
  - when: {depth: 1}
    reply: {text: "child done"}
`)
	o := e.startOnTerminal("run", "--model", "script:"+script, "go")
	o.await(t, `ink: main/2 started`)
	// Both children are inside their bash call once their transcripts
	// hold it; find each one's label and worker pid.
	type child struct {
		path, label string
		pid         int
	}
	children := map[string]*child{} // by prompt
	for deadline := time.Now().Add(time.Minute); len(children) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the children never ran bash:\n%q", o.out.String())
		}
		paths, _ := filepath.Glob(filepath.Join(e.home, "sessions", "*", "*", "children", "*.jsonl"))
		for _, p := range paths {
			tr, err := session.Open(p)
			if err != nil || len(tr.Messages) < 2 || len(tr.Messages[1].ToolCalls) == 0 {
				continue
			}
			id := strings.TrimSuffix(filepath.Base(p), ".jsonl")
			m := regexp.MustCompile(`ink: (main/\d) started \(pid (\d+), child ` + id + `\)`).FindStringSubmatch(o.out.String())
			if m == nil {
				continue
			}
			pid, _ := strconv.Atoi(m[2])
			children[tr.Messages[0].Text()] = &child{path: p, label: m[1], pid: pid}
		}
	}
	one, two := children["one"], children["two"]
	if one == nil || two == nil {
		t.Fatalf("children %v", children)
	}
	if err := syscall.Kill(one.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(one.pid, syscall.SIGKILL) })
	o.tty.Write([]byte{3})
	o.await(t, `ink: cancelling every agent \(press Ctrl-C again to kill them\)`)
	o.await(t, `ink: `+two.label+` aborted after`)
	o.tty.Write([]byte{3})
	if code := o.wait(t); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%q", code, exitInterrupted, o.out.String())
	}
	out := o.out.String()
	if !strings.Contains(out, "ink: killing every agent") {
		t.Errorf("the second Ctrl-C is not acknowledged:\n%q", out)
	}
	for _, c := range []*child{one, two} {
		tr, err := session.Open(c.path)
		if err != nil {
			t.Fatal(err)
		}
		turns := 0
		for _, m := range tr.Messages {
			if m.Role == model.RoleAssistant {
				turns++
			}
		}
		end, ended := tr.LastAttemptEnd()
		if c == two && (!ended || end.Status != "aborted" || end.Turns != turns) {
			t.Errorf("child two's transcript ends %+v, want aborted after %d turns", end, turns)
		}
		if c == one && ended {
			t.Errorf("child one recorded an end although it was stopped: %+v", end)
		}
		m := regexp.MustCompile(`ink: ` + c.label + ` (\w+) after [0-9.]+m?s: (\d+) turns?, [^\r]*`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no end line for %s:\n%q", c.label, out)
		}
		if n, _ := strconv.Atoi(m[2]); n != turns || turns != 1 {
			t.Errorf("%s: the terminal says %s turns, the transcript holds %d: %s", c.label, m[2], turns, m[0])
		}
		if m[1] != "aborted" {
			t.Errorf("%s: the terminal says %s, want aborted: %s", c.label, m[1], m[0])
		}
		if c == one && !strings.Contains(m[0], fmt.Sprintf("the worker process (pid %d) was killed by signal SIGKILL", one.pid)) {
			t.Errorf("%s: the end line does not say the worker was killed: %s", c.label, m[0])
		}
	}
	if m := regexp.MustCompile(`ink: main (\w+) after`).FindStringSubmatch(out); m == nil || m[1] != "aborted" {
		t.Errorf("main's end line %q, want aborted", m)
	}
	if !gone(one.pid, 10*time.Second) {
		t.Errorf("the stopped worker %d outlived ink", one.pid)
	}
	noSocketDirs(t, e.home)
}
