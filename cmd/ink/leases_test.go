package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/session"
)

// testHeartbeat is the heartbeat the lease tests give ink through
// INK_HEARTBEAT, so that a stopped worker is hung after 3 × 200ms + 2s.
const testHeartbeat = 200 * time.Millisecond

// fastHeartbeat makes every ink process of e beat every testHeartbeat.
func (e *env) fastHeartbeat() {
	e.vars = append(e.vars, HeartbeatEnv+"="+testHeartbeat.String())
}

// jsonLines runs ink with args, wants exit code want, and decodes every
// stdout line as a JSON object.
func (e *env) jsonLines(want int, args ...string) []map[string]any {
	e.t.Helper()
	p, code := e.run(args...)
	if code != want {
		e.t.Fatalf("ink %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, p.stdout.String(), p.stderr.String())
	}
	var rows []map[string]any
	if out := strings.TrimSpace(p.stdout.String()); strings.HasPrefix(out, "[") {
		// A command that prints one JSON document: a list.
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			e.t.Fatalf("ink %s printed a list that is not JSON: %v", strings.Join(args, " "), err)
		}
		return rows
	}
	sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.t.Fatalf("ink %s printed a line that is not JSON: %q", strings.Join(args, " "), sc.Text())
		}
		rows = append(rows, m)
	}
	return rows
}

// leaseRows is `ink leases ls --all --json` keyed by transcript path.
func (e *env) leaseRows() map[string]map[string]any {
	e.t.Helper()
	out := map[string]map[string]any{}
	for _, r := range e.jsonLines(0, "leases", "ls", "--all", "--json") {
		out[r["path"].(string)] = r
	}
	return out
}

// waitLease polls `ink leases ls --json` until the lease of path is in state,
// within a generous liveness bound, and returns its row.
func (e *env) waitLease(path, state string, limit time.Duration) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	var last map[string]any
	for time.Now().Before(deadline) {
		if r, ok := e.leaseRows()[path]; ok {
			last = r
			if r["state"] == state {
				return r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("the lease of %s did not become %s within %s; last row %v", path, state, limit, last)
	return nil
}

// stop sends SIGSTOP to pid; the test's cleanup continues and kills it, so
// no stopped process outlives a failed test.
func stop(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGCONT)
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// killLater kills a worker (its own session, so not in the test's process
// group) when the test ends, in case the test failed before ink did.
func killLater(t *testing.T, pid int) {
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// num reads a JSON number field as an int.
func num(m map[string]any, k string) int {
	f, _ := m[k].(float64)
	return int(f)
}

// gone waits up to limit for pid to disappear.
func gone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// allFree checks that every lease under e's INK_HOME is free and returns
// the listed transcript paths.
func (e *env) allFree() map[string]map[string]any {
	e.t.Helper()
	rows := e.leaseRows()
	for p, r := range rows {
		if r["state"] != "free" {
			e.t.Errorf("after the run the lease of %s is %v, want free: %v", p, r["state"], r)
		}
	}
	return rows
}

// transcripts lists every transcript file under e's sessions directory.
func (e *env) transcripts() []string {
	e.t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(e.home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// checkAttemptsUnderLease checks that every attempt start entry of the
// transcript at path carries a fencing epoch, no two share one, and the
// last one matches the lease metadata's epoch and pid.
func checkAttemptsUnderLease(t *testing.T, path string, wantPid int) {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var last session.AttemptEntry
	seen := map[int64]bool{}
	for _, a := range tr.Attempts() {
		if a.Phase != session.PhaseStart {
			continue
		}
		if a.Epoch < 1 || seen[a.Epoch] {
			t.Errorf("%s: attempt %s started under epoch %d (epochs so far %v)", path, a.AttemptID, a.Epoch, seen)
		}
		seen[a.Epoch], last = true, a
	}
	if last.AttemptID == "" {
		t.Fatalf("%s has no attempt start entry", path)
	}
	st, err := lease.Probe(path)
	if err != nil || st.Meta == nil {
		t.Fatalf("probe %s: %+v, %v", path, st, err)
	}
	if st.Meta.Epoch != last.Epoch || st.Meta.AttemptID != last.AttemptID || last.Pid != wantPid || st.Meta.Pid != wantPid {
		t.Errorf("%s: last attempt %+v, lease %+v; want both from pid %d under one epoch", path, last, *st.Meta, wantPid)
	}
}

// TestHungWorkerIsCancelled: a child worker whose lease heartbeat can no
// longer be written (its beat file replaced by a directory) while its
// stream heartbeats still come is listed hung by `ink leases ls`; the
// orchestrator sees its lease hung, warns naming it and cancels it, and the
// task ends saying it hung, its bash command gone. (A worker that stops
// altogether is lost sooner, from its stream heartbeats:
// TestStoppedWorkerIsLost.)
func TestHungWorkerIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fastHeartbeat()
	pidFile := filepath.Join(e.dir, "sleep.pid")
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 300 & echo $! > `+pidFile+`; wait"}}]
  - reply: {text: "too late"}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "work slowly")
	start := waitForEvent(t, p, "task.start")
	pid := num(start, "pid")
	killLater(t, pid)
	var sleepPid int
	for deadline := time.Now().Add(30 * time.Second); sleepPid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child's bash command never started")
		}
		if data, err := os.ReadFile(pidFile); err == nil {
			fmt.Sscan(strings.TrimSpace(string(data)), &sleepPid)
		}
	}
	killLater(t, sleepPid)
	transcript := session.ChildPath(waitForEvent(t, p, "run.start")["transcript"].(string), start["childId"].(string))
	if r := e.waitLease(transcript, "held", 30*time.Second); num(r, "pid") != pid {
		t.Fatalf("the child's lease is held by %v, want the worker %d", r["pid"], pid)
	}

	// The orchestrator is stopped while the beat file turns unwritable,
	// so that the hung lease can be seen before it acts.
	stop(t, p.cmd.Process.Pid)
	beat := lease.BeatPath(transcript)
	for tries := 0; ; tries++ {
		os.Remove(beat) // a beat may land between the removal and the mkdir: retry
		if err := os.Mkdir(beat, 0o700); err == nil {
			break
		} else if tries == 100 {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(beat, "in-the-way"), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := e.waitLease(transcript, "hung", lease.HungAfter(testHeartbeat)+20*time.Second); num(r, "pid") != pid {
		t.Errorf("hung row %v does not name the worker %d", r, pid)
	}
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	warn := waitFor(t, p, func(m map[string]any) bool {
		return m["type"] == "warning" && strings.Contains(fmt.Sprint(m["text"]), "is hung")
	})
	if !strings.Contains(warn["text"].(string), fmt.Sprintf("worker pid %d is hung", pid)) {
		t.Errorf("warning %q does not name the worker", warn["text"])
	}
	code := p.wait(t, time.Minute)
	if !gone(pid, 5*time.Second) {
		t.Fatalf("the hung worker %d is still alive after the task ended", pid)
	}
	if !gone(sleepPid, 5*time.Second) {
		t.Errorf("the hung worker's bash command (pid %d) outlived it", sleepPid)
	}
	evs := events(t, p.stdout.Bytes())
	end := ofType(evs, "task.end")
	if len(end) != 1 || !strings.HasPrefix(fmt.Sprint(end[0]["reason"]), "the worker hung (no heartbeat for") {
		t.Fatalf("task.end = %v, want one saying the worker hung", end)
	}
	if strings.Contains(p.stdout.String(), "worker lost") {
		t.Errorf("a worker whose stream heartbeats came was reported lost:\n%s", p.stdout.String())
	}
	if code == 0 {
		t.Errorf("exit 0 for a hung child\nstderr:\n%s", p.stderr.String())
	}
	if rec := shellRecord(t, e); string(rec.Status) != end[0]["status"] || !strings.Contains(rec.Reason, "the worker hung") {
		t.Errorf("TaskRecord %+v, want %v saying the worker hung (task.end %v)", rec, end[0]["status"], end[0])
	}
	if err := os.RemoveAll(beat); err != nil {
		t.Fatal(err)
	}
	e.allFree()
}

// TestLeasesWhileRunning: while `ink run` and its child work, every
// transcript's lease is held by the process that writes it (`ink leases ls`
// and `ink status` show them, with the child's tokens); a stopped child is
// listed hung; `ink leases break` refuses the healthy main lease, refuses
// without --force when stdin is not a terminal, and with --force frees the
// hung one by ending the holder's process group. The run then goes on, and
// afterwards every lease is free.
func TestLeasesWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fastHeartbeat()
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "look around slowly"}}]
  - when: {depth: 0, tool: task, result: "killed by signal SIGTERM"}
    reply: {text: "the child was stopped from outside"}
  - when: {depth: 0}
    reply: {text: "unexpected task result"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: ls, args: {path: "."}}]
      usage: {input: 1200, output: 80}
  - when: {depth: 1}
    reply: {text: "too late", delay: 120s}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "go")
	mainPid := num(waitForEvent(t, p, "worker.start"), "pid")
	killLater(t, mainPid)
	mainPath := waitForEvent(t, p, "run.start")["transcript"].(string)
	start := waitForEvent(t, p, "task.start")
	childPid := num(start, "pid")
	killLater(t, childPid)
	childPath := session.ChildPath(mainPath, start["childId"].(string))
	// The child is in its second, slow turn once its ls result is out.
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.end" && m["agent"] == "main/1" })

	// Every transcript is held by its writer, and its attempt entries carry
	// the lease's epoch.
	rows := e.leaseRows()
	for path, want := range map[string]struct {
		pid   int
		agent string
	}{mainPath: {mainPid, "main"}, childPath: {childPid, "main/1"}} {
		r, ok := rows[path]
		if !ok || r["state"] != "held" || num(r, "pid") != want.pid || r["agent"] != want.agent || num(r, "epoch") != 1 {
			t.Errorf("lease of %s = %v, want held by %s pid %d at epoch 1", path, r, want.agent, want.pid)
		}
		checkAttemptsUnderLease(t, path, want.pid)
	}
	if len(rows) != 2 {
		t.Errorf("ink leases ls lists %d leases, want 2: %v", len(rows), rows)
	}

	// ink status shows both workers, with the child's tokens so far.
	status := e.jsonLines(0, "status", "--json")
	if len(status) != 2 {
		t.Fatalf("ink status --json = %v, want 2 live workers", status)
	}
	for _, s := range status {
		if s["lease"] != "held" {
			t.Errorf("status row %v, want lease held", s)
		}
		if s["agent"] == "main/1" {
			tok, _ := s["tokens"].(map[string]any)
			if num(s, "pid") != childPid || tok == nil || num(tok, "input") != 1200 || num(tok, "output") != 80 {
				t.Errorf("child status %v, want pid %d and 1200 in / 80 out", s, childPid)
			}
		}
	}
	sp, code := e.run("status")
	if code != 0 || !strings.Contains(sp.stdout.String(), "1.2k in / 80 out") || !strings.Contains(sp.stdout.String(), fmt.Sprint(childPid)) {
		t.Errorf("ink status: exit %d\n%s", code, sp.stdout.String())
	}

	// Stop the orchestrator, so that it cannot kill the child, then the
	// child: its lease turns hung while the main agent's stays held.
	stop(t, p.cmd.Process.Pid)
	stop(t, childPid)
	hung := e.waitLease(childPath, "hung", lease.HungAfter(testHeartbeat)+20*time.Second)
	if num(hung, "pid") != childPid {
		t.Errorf("hung row %v does not name the child %d", hung, childPid)
	}
	if r := e.leaseRows()[mainPath]; r["state"] != "held" {
		t.Errorf("the main lease is %v while its worker runs", r)
	}
	lsp, code := e.run("leases", "ls")
	if code != 0 || !regexpMatch(`(?m)^hung\s+`+fmt.Sprint(childPid)+`\s+main/1\s+1\s+\d+\.\ds ago\s+`+regexp.QuoteMeta(childPath)+`$`, lsp.stdout.String()) {
		t.Errorf("ink leases ls: exit %d, want a hung row for %d\n%s", code, childPid, lsp.stdout.String())
	}
	sp, _ = e.run("status")
	if !strings.Contains(sp.stdout.String(), "ink leases break "+childPath) {
		t.Errorf("ink status does not say how to stop the hung worker:\n%s", sp.stdout.String())
	}

	// A healthy lease is refused, and nothing changes.
	mainBefore, _ := os.ReadFile(mainPath)
	bp, code := e.run("leases", "break", "--force", mainPath)
	if code != exitRefused || !strings.Contains(bp.stderr.String(), "healthy") || !strings.Contains(bp.stderr.String(), mainPath) {
		t.Errorf("break of the healthy main lease: exit %d, stderr %q", code, bp.stderr.String())
	}
	if after, _ := os.ReadFile(mainPath); !bytes.Equal(mainBefore, after) || !alive(mainPid) {
		t.Error("refused break changed the main transcript or stopped its worker")
	}
	// Without a terminal, and without --force, nothing is signalled.
	bp, code = e.run("leases", "break", childPath)
	if code != exitRefused || !strings.Contains(bp.stderr.String(), "not a terminal") || !strings.Contains(bp.stderr.String(), "--force") {
		t.Errorf("break without a terminal: exit %d, stderr %q", code, bp.stderr.String())
	}
	if !alive(childPid) {
		t.Fatal("break without --force ended the child")
	}
	// --force frees it: the child's process group is gone. --json says
	// what was done (the words are package lease's, tested there).
	bp, code = e.run("leases", "break", "--force", "--json", childPath+".lease")
	var broke struct {
		Path    string   `json:"path"`
		State   string   `json:"state"`
		Pid     int      `json:"pid"`
		Pgid    int      `json:"pgid"`
		Signals []string `json:"signals"`
		Freed   bool     `json:"freed"`
	}
	if err := json.Unmarshal(bp.stdout.Bytes(), &broke); code != 0 || err != nil || broke.Path != childPath || broke.State != "hung" ||
		broke.Pid != childPid || broke.Pgid != childPid || !broke.Freed || len(broke.Signals) == 0 || broke.Signals[0] != "SIGTERM" {
		t.Fatalf("break --force --json: exit %d (%v)\nstdout %q\nstderr %q", code, err, bp.stdout.String(), bp.stderr.String())
	}
	if !gone(childPid, 5*time.Second) {
		t.Fatalf("the child %d outlived the break", childPid)
	}
	if r := e.leaseRows()[childPath]; r["state"] != "free" {
		t.Errorf("child lease after break = %v", r)
	}

	// The orchestrator goes on: the main agent sees the child's end.
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("run exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	if got := ofType(events(t, p.stdout.Bytes()), "run.end")[0]["text"]; got != "the child was stopped from outside" {
		t.Errorf("main agent's answer = %q", got)
	}
	rows = e.allFree()
	for _, tr := range e.transcripts() {
		if _, ok := rows[tr]; !ok {
			t.Errorf("transcript %s has no lease: it was written without one", tr)
		}
	}
	if sp, _ := e.run("status"); strings.TrimSpace(sp.stdout.String()) != "no live workers" {
		t.Errorf("ink status after the run:\n%s", sp.stdout.String())
	}
}

// TestShellParentUnderLease: `ink task` writes its shell parent session
// under that session's lease, held by the ink process itself, beside the
// child's lease held by the child worker; afterwards both are free.
func TestShellParentUnderLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fastHeartbeat()
	script := e.write("s.yaml", `rules:
  - reply: {text: "finished", delay: 5s}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "work a little")
	parent := waitForEvent(t, p, "run.start")["transcript"].(string)
	start := waitForEvent(t, p, "task.start")
	childPath := session.ChildPath(parent, start["childId"].(string))
	// The child worker takes its lease once it is up; wait for both.
	rows := e.leaseRows()
	// A lease is held a moment before its holder's metadata is written.
	for deadline := time.Now().Add(30 * time.Second); rows[parent]["state"] != "held" || rows[childPath]["state"] != "held" || num(rows[childPath], "pid") == 0; rows = e.leaseRows() {
		if time.Now().After(deadline) {
			t.Fatalf("the shell parent and the child were never both held: %v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := rows[parent]; r["state"] != "held" || num(r, "pid") != p.cmd.Process.Pid || r["agent"] != "shell" {
		t.Errorf("shell parent lease = %v, want held by ink task (pid %d)", r, p.cmd.Process.Pid)
	}
	if r := rows[childPath]; r["state"] != "held" || num(r, "pid") != num(start, "pid") {
		t.Errorf("child lease = %v, want held by the worker %v", r, start["pid"])
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	rows = e.allFree()
	for _, tr := range e.transcripts() {
		if _, ok := rows[tr]; !ok {
			t.Errorf("transcript %s has no lease: it was written without one", tr)
		}
	}
	if len(rows) != 2 {
		t.Errorf("want the leases of the shell parent and the child, got %v", rows)
	}
}

// TestFencedWorkerWritesNothingMore: a stopped main worker whose lease file
// is moved away (breaking the never-delete rule) loses its lock; a second
// `ink run --session` takes the lease at the next epoch and finishes. When
// the first worker continues it notices the takeover, writes nothing more,
// and its run ends crash naming the new holder.
func TestFencedWorkerWritesNothingMore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fastHeartbeat()
	script := e.write("s.yaml", `rules:
  - when: {user: "first"}
    reply: {text: "too late", delay: 120s}
  - when: {user: "second"}
    reply: {text: "second answer"}
`)
	p1 := e.start("run", "--json", "--model", "script:"+script, "first")
	w1 := num(waitForEvent(t, p1, "worker.start"), "pid")
	killLater(t, w1)
	runStart := waitForEvent(t, p1, "run.start")
	path, id := runStart["transcript"].(string), runStart["session"].(string)
	waitFor(t, p1, func(m map[string]any) bool { return m["type"] == "turn.start" && m["agent"] == "main" })
	e.waitLease(path, "held", 30*time.Second)

	stop(t, p1.cmd.Process.Pid)
	stop(t, w1)
	if err := os.Rename(lease.FilePath(path), lease.FilePath(path)+".moved"); err != nil {
		t.Fatal(err)
	}
	p2, code := e.run("run", "--json", "--session", id, "--model", "script:"+script, "second")
	if code != 0 {
		t.Fatalf("second run: exit %d\nstderr:\n%s", code, p2.stderr.String())
	}
	evs2 := events(t, p2.stdout.Bytes())
	w2 := num(ofType(evs2, "worker.start")[0], "pid")
	if got := ofType(evs2, "run.end")[0]["text"]; got != "second answer" {
		t.Fatalf("second run answered %q", got)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	metaBefore, _ := os.ReadFile(lease.MetaPath(path))

	for _, pid := range []int{w1, p1.cmd.Process.Pid} {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	if code := p1.wait(t, time.Minute); code != exitFailed {
		t.Fatalf("first run: exit %d, want %d\nstderr:\n%s", code, exitFailed, p1.stderr.String())
	}
	want := fmt.Sprintf("was taken over by pid %d (epoch 2); this attempt stopped writing", w2)
	if !strings.Contains(p1.stderr.String(), want) {
		t.Errorf("first run's stderr lacks %q:\n%s", want, p1.stderr.String())
	}
	if !gone(w1, 5*time.Second) {
		t.Errorf("the fenced worker %d did not exit", w1)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Errorf("the fenced worker wrote to the transcript:\n%s", after[len(before):])
	}
	if metaAfter, _ := os.ReadFile(lease.MetaPath(path)); !bytes.Equal(metaBefore, metaAfter) {
		t.Errorf("the fenced worker rewrote the lease metadata:\n%s\nwas\n%s", metaAfter, metaBefore)
	}
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range tr.Attempts() {
		got = append(got, fmt.Sprintf("%s/%d/%d/%s", a.Phase, a.Epoch, a.Pid, a.Status))
	}
	wantAttempts := []string{fmt.Sprintf("start/1/%d/", w1), fmt.Sprintf("start/2/%d/", w2), fmt.Sprintf("end/2/%d/completed", w2)}
	if strings.Join(got, " ") != strings.Join(wantAttempts, " ") {
		t.Errorf("attempt entries %v, want %v", got, wantAttempts)
	}
}

// TestBadLeaseFile: a session whose lease file is a directory or a symlink
// is refused by `ink run --session` with a clear message and exit 3, and no
// file changes; `ink leases ls` lists the error and exits 1; `ink
// leases break` refuses it as bad input.
func TestBadLeaseFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - reply: {text: "hello"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "first")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	runEnd := ofType(events(t, p.stdout.Bytes()), "run.end")[0]
	path := runEnd["transcript"].(string)
	id := filepath.Base(strings.TrimSuffix(path, ".jsonl"))
	target := e.write("elsewhere", "not a lock\n")

	for _, c := range []struct {
		name, want string
		make       func(lp string) error
	}{
		{"directory", "is a directory, not a regular file", func(lp string) error { return os.Mkdir(lp, 0o700) }},
		{"symlink", "is a symlink, and ink never follows links for leases", func(lp string) error { return os.Symlink(target, lp) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			lp := lease.FilePath(path)
			if err := os.RemoveAll(lp); err != nil {
				t.Fatal(err)
			}
			if err := c.make(lp); err != nil {
				t.Fatal(err)
			}
			before := treeSnapshot(t, filepath.Join(e.home, "sessions"))
			targetBefore, _ := os.ReadFile(target)

			p, code := e.run("run", "--session", id, "--model", "script:"+script, "second")
			if code != exitRefused || !strings.Contains(p.stderr.String(), "the main agent ended refused: lease acquire: lease file "+lp+" "+c.want) {
				t.Errorf("run --session: exit %d, stderr %q; want %d and %q", code, p.stderr.String(), exitRefused, c.want)
			}
			if strings.Count(strings.TrimSpace(p.stderr.String()), "\n") > 2 {
				t.Errorf("want one clear message, got:\n%s", p.stderr.String())
			}
			if after := treeSnapshot(t, filepath.Join(e.home, "sessions")); after != before {
				t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
			}
			if got, _ := os.ReadFile(target); !bytes.Equal(got, targetBefore) {
				t.Error("the symlink's target changed")
			}

			lsp, code := e.run("leases", "ls")
			if code != exitFailed || !strings.Contains(lsp.stdout.String(), "error: "+path) || !strings.Contains(lsp.stdout.String(), c.want) || !strings.Contains(lsp.stderr.String(), "could not be read") {
				t.Errorf("ink leases ls: exit %d\nstdout %s\nstderr %s", code, lsp.stdout.String(), lsp.stderr.String())
			}
			rows := e.jsonLines(exitFailed, "leases", "ls", "--json")
			if len(rows) != 1 || rows[0]["state"] != "error" || !strings.Contains(fmt.Sprint(rows[0]["error"]), c.want) {
				t.Errorf("ink leases ls --json = %v", rows)
			}
			bp, code := e.run("leases", "break", "--force", path)
			if code != exitUsage || !strings.Contains(bp.stderr.String(), c.want) {
				t.Errorf("ink leases break: exit %d, stderr %q", code, bp.stderr.String())
			}
			if after := treeSnapshot(t, filepath.Join(e.home, "sessions")); after != before {
				t.Errorf("files changed by ls or break:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// treeSnapshot describes every file under dir: path, type and content.
func treeSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, fi.Mode())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", data)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", to)
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// regexpMatch reports whether the regular expression re matches s.
func regexpMatch(re, s string) bool {
	return regexp.MustCompile(re).MatchString(s)
}
