package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/session"
)

// TestStoppedWorkerIsLost: a child worker frozen with SIGSTOP in the middle
// of a bash call sends no more heartbeats. Within 5 s `ink task` reports
// the child interrupted — worker lost — with its resume id: the supervisor
// killed the worker and its bash command and wrote the attempt's end
// itself. After SIGCONT nothing more lands in the transcript, and
// `ink task --resume ID "go on"` completes without running the bash call
// again.
func TestStoppedWorkerIsLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	count, pidFile := filepath.Join(e.dir, "count"), filepath.Join(e.dir, "bash.pid")
	script := e.write("s.yaml", `rules:
  - when: {user: "go on"}
    reply: {text: "resumed and finished"}
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo ran >> `+count+`; echo $$ > `+pidFile+`; sleep 300"}}]
  - reply: {text: "the first attempt finished"}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "run the slow command")
	st := waitForEvent(t, p, "task.start")
	id, workerPid := st["childId"].(string), num(st, "pid")
	killLater(t, workerPid)
	bashPid := waitBashPid(t, pidFile)
	child := session.ChildPath(waitForEvent(t, p, "run.start")["transcript"].(string), id)
	if r := e.waitLease(child, "held", 30*time.Second); num(r, "pid") != workerPid {
		t.Fatalf("the child's lease is held by %v, want the worker %d", r["pid"], workerPid)
	}

	stop(t, workerPid)
	stopped := time.Now()
	end := waitForEvent(t, p, "task.end")
	took := time.Since(stopped)
	t.Logf("task.end %s after SIGSTOP", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the stopped worker was reported lost only %s after SIGSTOP, want within 5s", took)
	}
	if end["status"] != "interrupted" || end["reason"] != "worker lost: no heartbeat for 4s" {
		t.Fatalf("task.end = %v, want interrupted / worker lost", end)
	}
	if code := p.wait(t, time.Minute); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupted, p.stdout.String(), p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "continue it with: ink task --resume "+id) {
		t.Errorf("ink task does not say how to resume %s:\n%s", id, p.stderr.String())
	}
	if rec := shellRecord(t, e); rec.Status != "interrupted" || rec.ChildID != id || rec.Reason != "worker lost: no heartbeat for 4s" {
		t.Errorf("TaskRecord %+v", rec)
	}
	// The worker and its bash command were killed, not left stopped.
	if !gone(workerPid, 5*time.Second) {
		t.Fatalf("the lost worker %d is still alive after the task ended", workerPid)
	}
	if !gone(bashPid, 5*time.Second) {
		t.Errorf("the lost worker's bash command (pid %d) outlived it", bashPid)
	}
	syscall.Kill(workerPid, syscall.SIGCONT) // nothing to wake: it is gone
	before, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := session.Open(child)
	if err != nil {
		t.Fatal(err)
	}
	last, ok := tr.LastAttemptEnd()
	if !ok || last.Status != "interrupted" || last.Reason != "worker lost: no heartbeat for 4s" || last.Turns != 1 {
		t.Fatalf("the lost attempt's end = %+v", last)
	}
	if st, err := lease.Probe(child); err != nil || st.State != lease.Free {
		t.Fatalf("the child's lease is %v (%v) after the loss, want free", st.State, err)
	}

	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
	if code != 0 || !strings.HasPrefix(stdout, "resumed and finished\n") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the recorded bash call ran again: count file %q", data)
	}
	after, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the transcript as the loss left it is not a prefix of the resumed one: something rewrote it")
	}
	tr, err = session.Open(child)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, a := range tr.Attempts() {
		phases = append(phases, a.Phase+":"+string(a.Status)+":"+a.Reason)
	}
	if got := strings.Join(phases, ","); got != "start::,end:interrupted:worker lost: no heartbeat for 4s,start::,end:completed:" {
		t.Fatalf("attempt entries %s", got)
	}
}
