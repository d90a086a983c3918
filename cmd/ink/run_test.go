package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

const threeChildren = `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "child one"}}
        - {tool: task, args: {prompt: "child two"}}
        - {tool: task, args: {prompt: "child three"}}
  - when: {depth: 0, tool: task}
    reply: {text: "all three reported"}
  - when: {depth: 1, user: "child one"}
    reply: {text: "report one", delay: 1s, usage: {input: 100, output: 10}}
  - when: {depth: 1, user: "child two"}
    reply: {text: "report two", delay: 1s, usage: {input: 200, output: 20}}
  - when: {depth: 1, user: "child three"}
    reply: {text: "report three", delay: 1s, usage: {input: 300, output: 30}}
`

// TestRunParallelChildren: three task calls in one message run as three
// worker processes at once; results come back in call order; every
// transcript has a valid header, the children launch records, and the main
// transcript TaskRecords.
func TestRunParallelChildren(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", threeChildren)
	p, code := e.run("run", "--json", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	starts, ends := ofType(evs, "task.start"), ofType(evs, "task.end")
	if len(starts) != 3 || len(ends) != 3 {
		t.Fatalf("want 3 task.start and 3 task.end, got %d and %d", len(starts), len(ends))
	}
	pids := map[float64]bool{}
	for _, s := range starts {
		pids[s["pid"].(float64)] = true
	}
	if len(pids) != 3 {
		t.Fatalf("children did not run in three distinct processes: pids %v", pids)
	}
	// Parallel: every child started before any ended.
	lastStart, firstEnd := 0.0, 1e18
	for _, s := range starts {
		lastStart = max(lastStart, s["seq"].(float64))
	}
	for _, s := range ends {
		firstEnd = min(firstEnd, s["seq"].(float64))
	}
	if lastStart > firstEnd {
		t.Fatalf("children ran one after another, not in parallel")
	}
	t0, _ := time.Parse(time.RFC3339Nano, starts[0]["time"].(string))
	t1, _ := time.Parse(time.RFC3339Nano, ends[len(ends)-1]["time"].(string))
	if span := t1.Sub(t0); span >= 3*time.Second {
		t.Fatalf("three 1 s children took %s: not parallel", span)
	}
	runEnd := ofType(evs, "run.end")
	if len(runEnd) != 1 || runEnd[0]["status"] != "completed" || runEnd[0]["text"] != "all three reported" {
		t.Fatalf("run.end = %v", runEnd)
	}

	// The main transcript: results in call order, each with a TaskRecord.
	mainPath := runEnd[0]["transcript"].(string)
	tr, err := session.Open(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	var results []string
	var records []session.TaskRecord
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		for _, r := range m.Results {
			results = append(results, r.ToolCallID)
			if !strings.HasPrefix(r.Content, "report ") {
				t.Errorf("task result %q does not start with the child's text", r.Content)
			}
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatalf("task result without a valid TaskRecord: %v", err)
			}
			records = append(records, rec)
		}
	}
	if strings.Join(calls, ",") != strings.Join(results, ",") {
		t.Fatalf("results %v not in call order %v", results, calls)
	}
	wantText := []string{"report one", "report two", "report three"}
	for i, m := range resultMessages(tr) {
		if !strings.HasPrefix(m, wantText[i]) {
			t.Errorf("result %d = %q, want it to start with %q", i, m, wantText[i])
		}
	}
	for _, rec := range records {
		if !rec.Launched || rec.Status != "completed" || rec.ChildID == "" || rec.Transcript == nil || !rec.Transcript.Present {
			t.Fatalf("bad TaskRecord %+v", rec)
		}
		ctr, err := session.Open(rec.Transcript.Path)
		if err != nil {
			t.Fatal(err)
		}
		h := ctr.Header
		if h.ID != rec.ChildID || h.Parent != tr.Header.ID || h.Launch == nil || h.Launch.ChildID != rec.ChildID || h.Launch.Depth != 1 {
			t.Fatalf("child header %+v does not match record %+v", h, rec)
		}
		if filepath.Dir(rec.Transcript.Path) != session.ChildrenDir(mainPath) {
			t.Fatalf("child transcript %s not under %s", rec.Transcript.Path, session.ChildrenDir(mainPath))
		}
		raw, _ := json.Marshal(h.Launch)
		if _, err := session.ParseLaunchRecord(raw); err != nil {
			t.Fatalf("launch record does not parse: %v", err)
		}
		if end, ok := ctr.LastAttemptEnd(); !ok || end.Status != "completed" {
			t.Fatalf("child transcript lacks a completed attempt end: %+v", end)
		}
		assertWorkerLog(t, e, rec.ChildID)
	}
	assertWorkerLog(t, e, tr.Header.ID)
	// Workers print nothing: stdout holds only events, and stderr only
	// ink's own progress lines.
	for _, line := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		if line != "" && !strings.HasPrefix(line, "ink: ") {
			t.Fatalf("stderr has a line that is not ink's: %q", line)
		}
	}
}

// assertWorkerLog checks that the worker of a session logged JSON lines to
// $INK_HOME/logs/<sessionId>.log.
func assertWorkerLog(t *testing.T, e *env, sessionID string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.home, "logs", sessionID+".log"))
	if err != nil {
		t.Fatalf("worker log: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("worker log line is not JSON: %q", lines[0])
	}
	if !strings.Contains(string(data), `"msg":"Attempt end"`) {
		t.Fatalf("worker log of %s lacks the attempt end:\n%s", sessionID, data)
	}
}

func resultMessages(tr *session.Transcript) []string {
	var out []string
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			out = append(out, r.Content)
		}
	}
	return out
}

// TestTaskTimeout: a child over its timeout ends `timeout`, its process
// group is gone, the TaskRecord says timeout, and `ink task` exits 124.
func TestTaskTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo $$ > `+filepath.Join(e.dir, "bash.pid")+`; sleep 300"}}]
  - reply: {text: "never"}
`)
	p, code := e.run("task", "--json", "--timeout", "2s", "--model", "script:"+script, "sleep for a long time")
	if code != 124 {
		t.Fatalf("exit %d, want 124\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	ends := ofType(evs, "task.end")
	if len(ends) != 1 || ends[0]["status"] != "timeout" {
		t.Fatalf("task.end = %v", ends)
	}
	pid := int(ofType(evs, "task.start")[0]["pid"].(float64))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Fatalf("worker %d still alive after timeout", pid)
	}
	if data, err := os.ReadFile(filepath.Join(e.dir, "bash.pid")); err == nil {
		var bpid int
		if _, err := fmt.Sscan(strings.TrimSpace(string(data)), &bpid); err == nil && alive(bpid) {
			t.Fatalf("the bash command (pid %d) outlived its timed-out worker", bpid)
		}
	}
	rec := shellRecord(t, e)
	if rec.Status != "timeout" || rec.TimeoutMs != 2000 || !rec.Launched {
		t.Fatalf("TaskRecord %+v, want a launched timeout record with timeoutMs 2000", rec)
	}
}

// shellRecord returns the TaskRecord of the only shell session of e.
func shellRecord(t *testing.T, e *env) session.TaskRecord {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("want one shell session, got %v (%v)", list, err)
	}
	return firstRecord(t, list[0].Path)
}

// firstRecord returns the first TaskRecord in the transcript at path.
func firstRecord(t *testing.T, path string) session.TaskRecord {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
	}
	t.Fatalf("session %s has no TaskRecord", path)
	return session.TaskRecord{}
}

// TestChildSIGKILL: a child killed with SIGKILL mid-run is a crash naming
// the signal; the main agent goes on and sees the handoff.
func TestChildSIGKILL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "slow child"}}]
  - when: {depth: 0, tool: task, result: "killed by signal SIGKILL"}
    reply: {text: "the child crashed; I saw the handoff"}
  - when: {depth: 0, tool: task}
    reply: {text: "unexpected task result"}
  - when: {depth: 1}
    reply: {text: "too late", delay: 60s}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "go")
	pid := waitForEvent(t, p, "task.start")["pid"]
	// Kill it mid-run: once its first model turn has started.
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "turn.start" && m["agent"] == "main/1" })
	if err := syscall.Kill(int(pid.(float64)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	end := ofType(evs, "task.end")[0]
	if end["status"] != "crash" || !strings.Contains(end["reason"].(string), "SIGKILL") {
		t.Fatalf("task.end = %v", end)
	}
	if got := ofType(evs, "run.end")[0]["text"]; got != "the child crashed; I saw the handoff" {
		t.Fatalf("main agent's answer = %q", got)
	}
	tr, err := session.Open(ofType(evs, "run.end")[0]["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	res := resultMessages(tr)
	if len(res) != 1 || !strings.Contains(res[0], "work is preserved in the full transcript") || !strings.Contains(res[0], "child session id:") {
		t.Fatalf("task result lacks the handoff: %q", res)
	}
}

// waitForEvent reads the process's --json stdout until an event of typ.
func waitForEvent(t *testing.T, p *proc, typ string) map[string]any {
	t.Helper()
	return waitFor(t, p, func(m map[string]any) bool { return m["type"] == typ })
}

// waitFor reads the process's --json stdout until an event matches.
func waitFor(t *testing.T, p *proc, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	find := func() map[string]any {
		sc := bufio.NewScanner(strings.NewReader(p.snapshot()))
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && match(m) {
				return m
			}
		}
		return nil
	}
	for time.Now().Before(deadline) {
		if m := find(); m != nil {
			return m
		}
		select {
		case <-p.done:
			// The event may have come with the exit, after the look above.
			if m := find(); m != nil {
				return m
			}
			t.Fatalf("ink exited before the awaited event\nstdout:\n%s\nstderr:\n%s", p.snapshot(), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the awaited event did not come within a minute")
	return nil
}

// TestHostLoss: SIGKILL of the orchestrator while a child runs a long bash
// command: the child kills the command, records interrupted / host lost and
// exits within 2 s; no worker or tool process remains and no transcript has
// a torn interior line.
func TestHostLoss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pidFile := filepath.Join(e.dir, "sleep.pid")
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "long command"}}]
  - when: {depth: 0}
    reply: {text: "done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 300 & echo $! > `+pidFile+`; wait"}}]
  - when: {depth: 1}
    reply: {text: "the command finished"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "go")
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	childPid := int(waitForEvent(t, p, "task.start")["pid"].(float64))
	var sleepPid int
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			fmt.Sscan(strings.TrimSpace(string(data)), &sleepPid)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sleepPid == 0 {
		t.Fatal("the child's bash command never started")
	}
	killed := time.Now()
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{childPid, mainPid, sleepPid} {
		for alive(pid) && time.Since(killed) < 2*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Fatalf("pid %d still alive 2 s after the orchestrator died (child %d, main %d, sleep %d)", pid, childPid, mainPid, sleepPid)
		}
	}
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %v", list, err)
	}
	mainTr, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatalf("main transcript: %v", err)
	}
	if end, ok := mainTr.LastAttemptEnd(); !ok || end.Status != "interrupted" || end.Reason != "host lost" {
		t.Fatalf("main attempt end = %+v", end)
	}
	children, err := session.ListChildren(list[0].Path)
	if err != nil || len(children) != 1 {
		t.Fatalf("children: %v %v", children, err)
	}
	ctr, err := session.Open(children[0].Path)
	if err != nil {
		t.Fatalf("child transcript: %v", err)
	}
	end, ok := ctr.LastAttemptEnd()
	if !ok || end.Status != "interrupted" || end.Reason != "host lost" {
		t.Fatalf("child attempt end = %+v", end)
	}
	res := resultMessages(ctr)
	if len(res) != 1 || !strings.Contains(res[0], "interrupted: the supervisor was lost") {
		t.Fatalf("the interrupted bash call was recorded as %q", res)
	}
}

// TestMaxParallel: 20 tasks with --max-parallel 4 never run more than 4
// workers at once, queue the rest, and all complete.
func TestMaxParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&calls, "        - {tool: task, args: {prompt: \"job %d\"}}\n", i)
	}
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
`+calls.String()+`  - when: {depth: 0}
    reply: {text: "twenty done"}
  - when: {depth: 1}
    reply: {text: "ok", delay: 300ms}
`)
	p, code := e.run("run", "--json", "--max-parallel", "4", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	live, peak, completed := 0, 0, 0
	for _, ev := range evs {
		switch ev["type"] {
		case "task.start":
			live++
			peak = max(peak, live)
		case "task.end":
			live--
			if ev["status"] == "completed" {
				completed++
			}
		}
	}
	if peak > 4 {
		t.Fatalf("%d workers ran at once with --max-parallel 4", peak)
	}
	if peak < 2 {
		t.Fatalf("peak concurrency %d: the window did not run children in parallel", peak)
	}
	if completed != 20 {
		t.Fatalf("%d of 20 tasks completed", completed)
	}
	if len(ofType(evs, "task.queued")) == 0 {
		t.Fatal("no task.queued event although 16 tasks had to wait")
	}
}

// TestInterrupt: Ctrl-C once cancels every agent: the child records
// aborted, the main agent records how it stopped, ink exits 130 and no
// worker remains.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "slow"}}]
  - when: {depth: 0}
    reply: {text: "after the child"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 300"}}]
  - when: {depth: 1}
    reply: {text: "never"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "go")
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	childPid := int(waitForEvent(t, p, "task.start")["pid"].(float64))
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.start" && m["agent"] == "main/1" })
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 30*time.Second); code != 130 {
		t.Fatalf("exit %d, want 130\nstderr:\n%s", code, p.stderr.String())
	}
	for _, pid := range []int{mainPid, childPid} {
		if alive(pid) {
			t.Fatalf("worker %d outlived the interrupted run", pid)
		}
	}
	evs := events(t, p.stdout.Bytes())
	end := ofType(evs, "task.end")
	if len(end) != 1 || end[0]["status"] != "aborted" {
		t.Fatalf("task.end = %v", end)
	}
	run := ofType(evs, "run.end")
	if len(run) != 1 || run[0]["status"] != "aborted" {
		t.Fatalf("run.end = %v", run)
	}
	list, _ := session.ListSessions(e.home, e.dir)
	children, _ := session.ListChildren(list[0].Path)
	ctr, err := session.Open(children[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := ctr.LastAttemptEnd(); !ok || a.Status != "aborted" {
		t.Fatalf("child attempt end = %+v", a)
	}
}
