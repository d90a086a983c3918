package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// faultScript is the run every fault trial starts: a main agent fans out
// three children — one of them in its own worktree, where it commits — in a
// window of two, then writes its answer slowly; every agent answers "go on"
// at once, which is how a recovery continues it.
const faultScript = `rules:
  - when: {user: "^go on$"}
    reply: {text: "recovered"}
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "alpha"}}
        - {tool: task, args: {prompt: "beta", worktree: true}}
        - {tool: task, args: {prompt: "gamma"}}
  - when: {depth: 0, tool: task}
    reply: {text: "all three reported", delay: 1500ms}
  - when: {depth: 1, user: "^beta$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo b > b.txt && git add b.txt && git commit -qm beta && sleep 1"}}]
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 1"}}]
  - when: {depth: 1}
    reply: {text: "child done"}
`

// faultPoint is where a trial kills: the supervisor ("ink") or one worker
// ("main", or the child whose prompt is child), once the event when
// matches.
type faultPoint struct {
	name   string
	victim string // "ink", "main" or "child"
	child  string // the child's prompt, for victim "child"
	when   func(seen []map[string]any, m map[string]any) bool
}

// after matches the n-th event of type typ (1-based) whose fields include
// want.
func after(typ string, n int, want map[string]any) func([]map[string]any, map[string]any) bool {
	return func(seen []map[string]any, m map[string]any) bool {
		if m["type"] != typ {
			return false
		}
		for k, v := range want {
			if m[k] != v {
				return false
			}
		}
		count := 0
		for _, s := range seen {
			if s["type"] == typ {
				ok := true
				for k, v := range want {
					if s[k] != v {
						ok = false
					}
				}
				if ok {
					count++
				}
			}
		}
		return count+1 == n
	}
}

// TestFaultMatrix kills the supervisor, or one worker, at ten points of a
// fan-out with a worktree child, then recovers the way the documentation
// says — every interrupted child with `ink task --resume`, the main
// session with `ink run --session` — in both orders. Every recovery must
// complete, every transcript must read back whole with every tool call
// answered, the worktree child's commit must survive, and no process and no
// worktree without a child may remain.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	points := []faultPoint{
		{name: "ink after worker.start", victim: "ink", when: after("worker.start", 1, nil)},
		{name: "ink after the fan-out message", victim: "ink", when: func(_ []map[string]any, m map[string]any) bool {
			msg, _ := m["message"].(map[string]any)
			return m["type"] == "message" && m["agent"] == "main" && msg["toolCalls"] != nil
		}},
		{name: "ink after the first child started", victim: "ink", when: after("task.start", 1, nil)},
		{name: "ink with a child queued", victim: "ink", when: after("task.queued", 1, nil)},
		{name: "ink during the worktree child's bash", victim: "ink", when: func(seen []map[string]any, m map[string]any) bool {
			return m["type"] == "tool.start" && m["name"] == "bash" && childOf(seen, m["agent"]) == "beta"
		}},
		{name: "ink after the first child ended", victim: "ink", when: after("task.end", 1, nil)},
		{name: "ink during the main's last turn", victim: "ink", when: after("task.end", 3, nil)},
		{name: "a child's worker mid-bash", victim: "child", child: "alpha", when: func(seen []map[string]any, m map[string]any) bool {
			return m["type"] == "tool.start" && m["name"] == "bash" && childOf(seen, m["agent"]) == "alpha"
		}},
		{name: "the worktree child's worker mid-bash", victim: "child", child: "beta", when: func(seen []map[string]any, m map[string]any) bool {
			return m["type"] == "tool.start" && m["name"] == "bash" && childOf(seen, m["agent"]) == "beta"
		}},
		{name: "the main worker in its last turn", victim: "main", when: after("task.end", 3, nil)},
	}
	for _, m := range []mode{modeLocal, modeExec} {
		for i, p := range points {
			orders := []string{"children first", "main first"}
			name := p.name
			if m.confined {
				// Through the exec launcher every point runs once, the two
				// recovery orders taking turns: the orders exercise the
				// supervisor's resume logic, which is the same for both
				// launchers.
				orders = orders[i%2 : i%2+1]
				name = "exec: " + name
			}
			for _, order := range orders {
				t.Run(name+", "+order, func(t *testing.T) {
					t.Parallel()
					faultTrial(t, m, p, order == "children first")
				})
			}
		}
	}
}

// The fault points through the exec launcher (mode exec): the children
// run on workers that cannot see INK_HOME or the checkout, each in a
// worktree (a remote child always works in one), and the supervisor holds
// their leases and writes their transcripts. A local worker's own file
// writes — its appends, its heartbeat in the lease record — are the
// supervisor's for a remote child, so there is no point inside them to
// kill the worker at; their remote equivalent is the worker killed with
// work it has not had acknowledged (mid-bash: its commit, its bash result
// and the snapshot before it), which never lands. A killed "child" is its
// worker process (`ink worker --remote`), not the command that reached
// it, and the supervisor's kill ("ink") leaves every remote worker without
// its stream.

// sessionWorker is the worker behind the pid of a task.start event: that
// pid when it runs `ink worker` (a local worker, or a launch command that
// became the remote worker); else the `ink worker --remote` in the launch
// command's session. It is 0 when there is none (yet).
func sessionWorker(pid int) int {
	isWorker := func(p int) bool {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		return strings.HasPrefix(string(cmdline), inkBin+"\x00worker\x00")
	}
	if isWorker(pid) {
		return pid
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(pid) && isWorker(p) {
			return p
		}
	}
	return 0
}

// childOf is the prompt of the child whose display label is label, from the
// main's fan-out message and the children's task.start events.
func childOf(seen []map[string]any, label any) string {
	for _, s := range seen {
		if s["type"] == "message" && s["agent"] == label {
			msg, _ := s["message"].(map[string]any)
			if msg["role"] == "user" {
				for _, b := range asList(msg["content"]) {
					if text, _ := b["text"].(string); text != "" {
						return text
					}
				}
			}
		}
	}
	return ""
}

func faultTrial(t *testing.T, md mode, fp faultPoint, childrenFirst bool) {
	e := newWtRepo(t, map[string]string{"a.txt": "a\n"})
	script := e.wtOutside("s.yaml", faultScript)
	model := "script:" + script
	var flags []string
	if md.confined {
		flags = []string{"--launcher", remoteLauncher(e)}
	}
	p := e.start(append(append([]string{"run", "--json", "--max-parallel", "2"}, flags...), "--model", model, "fan out")...)
	seen, trigger := waitPoint(t, p, fp.when)
	var pids []int
	for _, m := range seen {
		if pid, ok := m["pid"].(float64); ok {
			pids = append(pids, int(pid))
			if w := sessionWorker(int(pid)); w > 0 && w != int(pid) {
				pids = append(pids, w)
			}
		}
	}
	switch fp.victim {
	case "ink":
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	case "main":
		pid := int(ofType(seen, "worker.start")[0]["pid"].(float64))
		syscall.Kill(pid, syscall.SIGKILL)
	case "child":
		label := trigger["agent"]
		for _, s := range ofType(seen, "task.start") {
			if s["agent"] == label {
				w := sessionWorker(int(s["pid"].(float64)))
				if w == 0 {
					t.Fatalf("no worker behind the child's pid %v", s["pid"])
				}
				syscall.Kill(w, syscall.SIGKILL)
			}
		}
	}
	code := p.wait(t, 2*time.Minute)
	for _, m := range events(t, p.stdout.Bytes()) {
		if pid, ok := m["pid"].(float64); ok {
			pids = append(pids, int(pid))
		}
	}
	// Every worker is gone within a few seconds: nobody runs for nobody.
	waitDead(t, pids)
	if fp.victim == "child" && code != 0 {
		t.Fatalf("with one child killed the run should still complete, exit %d\n%s", code, p.stderr.String())
	}

	list, err := session.ListSessions(e.home, e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		// Killed before the main worker wrote anything: nothing is left,
		// not even a worktree.
		if wts := e.wtGit("worktree", "list"); strings.Count(wts, "\n") > 0 {
			t.Fatalf("no session, but worktrees:\n%s", wts)
		}
		return
	}
	mainID, mainPath := list[len(list)-1].ID, list[len(list)-1].Path
	mainDone := lastStatus(t, mainPath) == "completed"

	resumeChildren := func() {
		kids, err := session.ListChildren(mainPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			if k.LastStatus == "completed" {
				continue
			}
			t.Logf("resuming child %s (%s)", k.ID, k.LastStatus)
			code, stdout, stderr := e.resumeOut(append(flags, "--parent", mainID, "--model", model, "--resume", k.ID, "go on")...)
			if code != 0 || !strings.HasPrefix(stdout, "recovered") {
				t.Fatalf("resume of child %s (%s): exit %d\nstdout:\n%s\nstderr:\n%s", k.ID, k.LastStatus, code, stdout, stderr)
			}
		}
	}
	continueMain := func() {
		if mainDone {
			return
		}
		t.Logf("continuing the main session %s", mainID)
		r, code := e.run(append(append([]string{"run"}, flags...), "--session", mainID, "--model", model, "go on")...)
		if code != 0 || !strings.HasPrefix(r.stdout.String(), "recovered") {
			t.Fatalf("continuing the main session: exit %d\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), r.stderr.String())
		}
	}
	if childrenFirst {
		resumeChildren()
		continueMain()
	} else {
		continueMain()
		resumeChildren()
	}

	// Nothing lost: every transcript reads back whole, every tool call has
	// its result, and each child still starts with its own prompt.
	checkWhole(t, mainPath)
	kids, _ := session.ListChildren(mainPath)
	for _, k := range kids {
		tr := checkWhole(t, k.Path)
		if k.LastStatus != "completed" {
			t.Errorf("child %s ended %s after recovery", k.ID, k.LastStatus)
		}
		if first := tr.Messages[0]; first.Role != "user" || !strings.Contains("alpha beta gamma", first.Text()) {
			t.Errorf("child %s begins with %q", k.ID, first.Text())
		}
		// Only beta commits; through the exec launcher alpha and gamma
		// work in worktrees too, which end clean and are removed.
		if first := tr.Messages[0]; first.Text() == "beta" && tr.Header.Launch != nil && tr.Header.Launch.Worktree != nil && wasCommitted(tr) {
			wt := tr.Header.Launch.Worktree
			if log := e.wtGitIn(e.dir, "log", "-1", "--format=%s", wt.Branch); log != "beta" {
				t.Errorf("the worktree child's commit is lost: %s is at %q", wt.Branch, log)
			}
		}
	}
	// No worktree without a child: prune removes leftovers of creations
	// that never got a child, and every worktree left belongs to one.
	if r, code := e.run("worktrees", "prune"); code != 0 {
		t.Fatalf("prune: exit %d\n%s", code, r.stderr.String())
	}
	children := map[string]bool{}
	for _, k := range kids {
		children[k.ID] = true
	}
	for _, line := range strings.Split(e.wtGit("worktree", "list", "--porcelain"), "\n") {
		if b, ok := strings.CutPrefix(line, "branch refs/heads/ink/"); ok && !children[b] {
			t.Errorf("worktree of %s remains, with no child", b)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(e.home, "worktrees", "*", ".*.tmp")); len(tmp) > 0 {
		t.Errorf("temporary record files remain: %v", tmp)
	}
}

// waitPoint reads the process's --json stdout until when matches an event,
// given the events before it, and returns those events (the match
// included) and the match.
func waitPoint(t *testing.T, p *proc, when func([]map[string]any, map[string]any) bool) ([]map[string]any, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var seen []map[string]any
		for _, line := range strings.Split(p.snapshot(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			seen = append(seen, m)
			if when(seen[:len(seen)-1], m) {
				return seen, m
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the run ended before the fault point:\n%s\n%s", p.snapshot(), p.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("the fault point did not come within a minute")
	return nil, nil
}

// waitDead waits until every pid is gone.
func waitDead(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still alive 15 s after the fault", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// lastStatus is how the newest attempt recorded in a transcript ended.
func lastStatus(t *testing.T, path string) session.Status {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := tr.LastAttemptEnd()
	if !ok {
		return ""
	}
	return end.Status
}

// checkWhole opens a transcript and checks that every tool call has its
// result.
func checkWhole(t *testing.T, path string) *session.Transcript {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatalf("%s does not read back: %v", path, err)
	}
	if tr.Torn != nil {
		t.Errorf("%s ends in a torn line after recovery", path)
	}
	if scan := session.ScanPairs(tr.Messages); scan.State != session.Consistent {
		t.Errorf("%s: tool calls and results do not pair up: %+v", path, scan)
	}
	if len(tr.Messages) == 0 {
		t.Fatalf("%s holds no message", path)
	}
	return tr
}

// wasCommitted reports whether the transcript's bash call ran to its end
// (its result is not the outcome-unknown repair).
func wasCommitted(tr *session.Transcript) bool {
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			if r.ToolName == "bash" && !r.IsError {
				return true
			}
		}
	}
	return false
}

// TestKilledShellResumeNeverBlocksMain is the second way a shell resume
// used to break a main session for good: the main session is continued
// first, then a shell resume of one of its children is SIGKILLed mid-bash,
// the child is resumed again, and the main session must still continue.
func TestKilledShellResumeNeverBlocksMain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mark := filepath.Join(e.dir, "resumed-once")
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, user: "^go on$"}
    reply: {text: "main recovered"}
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "alpha"}}
        - {tool: task, args: {prompt: "beta"}}
  - when: {depth: 0, tool: task}
    reply: {text: "both reported"}
  - when: {depth: 1, user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "if [ -e `+mark+` ]; then echo again; else touch `+mark+`; sleep 60; fi"}}]
  - when: {depth: 1, user: "^go on$"}
    reply: {text: "child recovered"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 60"}}]
`)
	model := "script:" + script
	p := e.start("run", "--json", "--model", model, "fan out")
	waitPoint(t, p, after("tool.start", 2, map[string]any{"name": "bash"}))
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	p.wait(t, time.Minute)
	list, _ := session.ListSessions(e.home, e.dir)
	mainID := list[0].ID
	var pids []int
	for _, m := range events(t, p.stdout.Bytes()) {
		if pid, ok := m["pid"].(float64); ok {
			pids = append(pids, int(pid))
		}
	}
	waitDead(t, pids)

	// Main first.
	if r, code := e.run("run", "--session", mainID, "--model", model, "go on"); code != 0 {
		t.Fatalf("continuing main: exit %d\n%s", code, r.stderr.String())
	}
	kids, _ := session.ListChildren(list[0].Path)
	child := kids[0].ID
	// A shell resume of the child, SIGKILLed mid-bash.
	q := e.start("task", "--json", "--parent", mainID, "--model", model, "--resume", child, "go on")
	st := waitForEvent(t, q, "task.start")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break // the resumed child is inside its bash call
		}
		if time.Now().After(deadline) {
			t.Fatal("the resumed child never reached its bash call")
		}
	}
	syscall.Kill(q.cmd.Process.Pid, syscall.SIGKILL)
	q.wait(t, time.Minute)
	waitDead(t, []int{int(st["pid"].(float64))})
	// The child resumes again, and then the main session continues.
	if code, stdout, stderr := e.resumeOut("--parent", mainID, "--model", model, "--resume", child, "go on"); code != 0 || !strings.HasPrefix(stdout, "child recovered") {
		t.Fatalf("second resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	r, code := e.run("run", "--session", mainID, "--model", model, "go on")
	if code != 0 || !strings.HasPrefix(r.stdout.String(), "main recovered") {
		t.Fatalf("continuing main after the killed shell resume: exit %d\n%s\n%s", code, r.stdout.String(), r.stderr.String())
	}
	checkWhole(t, list[0].Path)
}
