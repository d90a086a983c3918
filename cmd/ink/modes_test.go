package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// mode is one way a child runs: where its worker runs and whether it works
// in a worktree. Every scenario of TestModes runs in each mode it applies
// to, with the same assertions.
type mode struct {
	name string
	// worktree: every child works in a worktree of its own.
	worktree bool
	// confined: every child runs through --launcher exec: in a mount
	// namespace where INK_HOME and the checkout are empty (remoteLauncher),
	// so its worker cannot read or write the supervisor's files.
	confined bool
}

var (
	modeLocal    = mode{name: "local"}
	modeWorktree = mode{name: "worktree", worktree: true}
	// modeExec is named as long as modeWorktree: the paths of a run
	// follow from its test's name, and the script model counts the
	// characters of the calls it makes, paths included.
	modeExec = mode{name: "confined", worktree: true, confined: true}
	allModes = []mode{modeLocal, modeWorktree, modeExec}
)

// runFlags are the supervisor flags of m for `ink run` and `ink task
// --resume`, and the probe directory the children may write.
func (m mode) runFlags(e *env) []string {
	f := []string{"--writable", probeDir(e)}
	if m.confined {
		f = append(f, "--launcher", remoteLauncher(e))
	}
	return f
}

// taskFlags are m's flags for a new `ink task`.
func (m mode) taskFlags(e *env) []string {
	f := m.runFlags(e)
	if m.worktree {
		f = append(f, "--worktree")
	}
	return f
}

// script fills a script's {{wt}}: in a worktree mode the main agent asks
// for its children's worktrees, so the main transcripts of the worktree
// and exec modes ask for the same.
func (m mode) script(body string) string {
	wt := ""
	if m.worktree {
		wt = ", worktree: true"
	}
	return strings.ReplaceAll(body, "{{wt}}", wt)
}

// probeDir is the directory beside the checkout that children may write
// (--writable) and the test reads: the probe's reports and the files
// scenarios signal with.
func probeDir(e *env) string {
	return filepath.Join(filepath.Dir(e.dir), "probe")
}

// rel is path (under the directory beside the checkout) as a child of m
// reaches it from where it works: relative, so that a child's calls are
// as long in the worktree and the exec modes, whose test directories'
// names differ in length (the script model counts the characters of the
// calls it makes). A worktree is $INK_HOME/worktrees/<repo>/<child>.
func (m mode) rel(e *env, path string) string {
	r, err := filepath.Rel(filepath.Dir(e.dir), path)
	if err != nil {
		e.t.Fatal(err)
	}
	if m.worktree {
		return "../../../../" + r
	}
	return "../" + r
}

// probe writes the probe script for m and returns the bash command that
// runs it as name. The probe reports, into probeDir and not into the
// transcript (which must read the same in every mode), what the child can
// read of the checkout (a.txt) and of INK_HOME (its sessions); a confined
// child also tries to write both.
func probe(t *testing.T, e *env, m mode, name string) string {
	t.Helper()
	if err := os.MkdirAll(probeDir(e), 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("cat '%s/a.txt'\nls '%s/sessions' >/dev/null && echo 'sessions: listed'\n", e.dir, e.home)
	if m.confined {
		body += fmt.Sprintf("echo probe > '%s/.probe' && echo 'wrote the checkout'\necho probe > '%s/.probe' && echo 'wrote INK_HOME'\n", e.dir, e.home)
	}
	script := filepath.Join(filepath.Dir(e.dir), "probe.sh")
	// It exits 0 whatever it found: its bash result must read the same in
	// every mode.
	full := fmt.Sprintf("{\necho \"== $1\"\n%s} >> '%s'/\"$1\".out 2>&1\nexit 0\n", body, probeDir(e))
	if err := os.WriteFile(script, []byte(full), 0o755); err != nil {
		t.Fatal(err)
	}
	return "sh " + m.rel(e, script) + " " + name
}

// checkProbes asserts what the children's probes found: a local child
// reads the checkout and INK_HOME; a confined one neither reads them nor
// changes them on the supervisor's disk. want is how many probes ran at
// least.
func checkProbes(t *testing.T, e *env, m mode, want int) {
	t.Helper()
	outs, _ := filepath.Glob(filepath.Join(probeDir(e), "*.out"))
	ran := 0
	for _, out := range outs {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		ran += strings.Count(s, "== ")
		sees := strings.Contains(s, "hello\n") || strings.Contains(s, "sessions: listed")
		switch {
		case m.confined && (sees || !strings.Contains(s, "a.txt: No such file") || !strings.Contains(s, "sessions': No such file")):
			t.Errorf("the confined worker could read the supervisor's files; its probe %s said:\n%s", filepath.Base(out), s)
		case !m.confined && !sees:
			t.Errorf("the local child's probe %s could not read the checkout or INK_HOME, so it proves nothing:\n%s", filepath.Base(out), s)
		}
	}
	if ran < want {
		t.Errorf("%d probes ran, want at least %d", ran, want)
	}
	if m.confined {
		for _, f := range []string{filepath.Join(e.dir, ".probe"), filepath.Join(e.home, ".probe")} {
			if _, err := os.Lstat(f); !os.IsNotExist(err) {
				t.Errorf("the confined worker wrote %s on the supervisor's disk (%v)", f, err)
			}
		}
	}
}

// modeTranscripts is every transcript of e — each shell or main session
// and its children — normalised, sorted.
func modeTranscripts(t *testing.T, e *env) []string {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	read := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, normalise(string(b), e))
	}
	for _, s := range list {
		read(s.Path)
		kids, err := session.ListChildren(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			read(k.Path)
		}
	}
	slices.Sort(out)
	return out
}

// sameTranscripts compares the transcripts of two modes, which must be the
// same but for ids, times and paths.
func sameTranscripts(t *testing.T, aName string, a []string, bName string, b []string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s left %d transcripts, %s %d", aName, len(a), bName, len(b))
		return
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		al, bl := strings.Split(a[i], "\n"), strings.Split(b[i], "\n")
		for j := range min(len(al), len(bl)) {
			if al[j] != bl[j] {
				k := 0
				for k < min(len(al[j]), len(bl[j])) && al[j][k] == bl[j][k] {
					k++
				}
				from := max(0, k-100)
				t.Errorf("transcript %d differs at line %d, byte %d:\n%s: …%s\n%s: …%s", i, j+1, k, aName, al[j][from:], bName, bl[j][from:])
				break
			}
		}
		if len(al) != len(bl) {
			t.Errorf("transcript %d: %s has %d lines, %s %d", i, aName, len(al), bName, len(bl))
		}
	}
}

// workerAbove is the worker above the process pid: its first ancestor (or
// itself) running `ink worker`, local or --remote.
func workerAbove(t *testing.T, pid int) int {
	t.Helper()
	for p := pid; p > 1; {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if strings.HasPrefix(string(cmdline), inkBin+"\x00worker\x00") {
			return p
		}
		ppid, ok := parentOf(p)
		if !ok {
			break
		}
		p = ppid
	}
	t.Fatalf("no ink worker above pid %d", pid)
	return 0
}

// scenario is one piece of work TestModes runs in each of its modes. run
// does the work and asserts its result; it returns how many probes its
// children ran at least.
type scenario struct {
	name  string
	modes []mode
	run   func(t *testing.T, e *env, m mode) (probes int)
	// lost: the scenario kills a worker, which the two launchers tell
	// apart by design — a local worker's death is seen (crash, naming the
	// signal), a remote one's stream just ends (interrupted, worker lost)
	// — so the killed attempt's status and reason are masked (lostMask)
	// before the transcripts are compared, and nothing else.
	lost bool
}

// lostREs match what lostMask masks: the killed attempt's status and
// reason in the task result's text, in its TaskRecord and in its end
// entry.
var lostREs = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`task (?:failed|interrupted) after (\d+) turns: .*?\.\\n`), `task LOST after $1 turns.\n`},
	{regexp.MustCompile(`"status":"(?:crash|interrupted)"`), `"status":"LOST"`},
	{regexp.MustCompile(`"reason":"[^"]*(?:SIGKILL|worker lost|host lost)[^"]*"`), `"reason":"LOST"`},
}

// lostMask masks in s the status and reason of a killed attempt.
func lostMask(s string) string {
	for _, r := range lostREs {
		s = r.re.ReplaceAllString(s, r.to)
	}
	return s
}

// TestModes runs the task, resume, background, budget and worktree
// scenarios in every mode — local, local in a worktree, and through
// --launcher exec: with a worker that cannot see the supervisor's INK_HOME
// or checkout — with the same assertions. The worktree and exec modes
// must then leave the same transcripts but for ids, times and paths: a
// remote child is a worktree child whose files travel.
func TestModes(t *testing.T) {
	t.Parallel()
	for _, sc := range modeScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			got := map[string][]string{}
			t.Run("in", func(t *testing.T) {
				for _, m := range sc.modes {
					t.Run(m.name, func(t *testing.T) {
						t.Parallel()
						e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "gone.txt": "bye\n"})
						want := sc.run(t, e, m)
						checkProbes(t, e, m, want)
						if !t.Failed() {
							got[m.name] = modeTranscripts(t, e)
						}
					})
				}
			})
			if wt, ex := got[modeWorktree.name], got[modeExec.name]; wt != nil && ex != nil {
				if sc.lost {
					for i := range wt {
						wt[i] = lostMask(wt[i])
					}
					for i := range ex {
						ex[i] = lostMask(ex[i])
					}
					slices.Sort(wt)
					slices.Sort(ex)
				}
				sameTranscripts(t, modeWorktree.name, wt, modeExec.name, ex)
			}
		})
	}
}

// childWorkDir is where rec's child worked: its worktree, else the
// checkout.
func childWorkDir(t *testing.T, e *env, m mode, rec session.TaskRecord) string {
	t.Helper()
	if !m.worktree {
		if rec.Worktree != nil {
			t.Fatalf("a local child got a worktree: %+v", rec.Worktree)
		}
		return e.dir
	}
	if rec.Worktree == nil || rec.Worktree.Path == "" {
		t.Fatalf("the child in mode %s has no worktree: %+v", m.name, rec)
	}
	return rec.Worktree.Path
}

// readIn reads dir/name, or says why it could not.
func readIn(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

var modeScenarios = []scenario{
	{name: "task", modes: allModes, run: func(t *testing.T, e *env, m mode) int {
		script := e.wtOutside("s.yaml", wtBashChild(probe(t, e, m, "task")+"; echo more >> a.txt; cat a.txt"))
		p, code := e.run(append(append([]string{"task"}, m.taskFlags(e)...), "--model", "script:"+script, "edit a.txt")...)
		if code != 0 || !strings.HasPrefix(p.snapshot(), "done") {
			t.Fatalf("ink task exited %d with %q\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
		}
		rec := wtLatestRecord(t, e)
		if rec.Status != "completed" {
			t.Errorf("the child ended %s (%s)", rec.Status, rec.Reason)
		}
		if m.worktree && rec.Worktree.Disposition != "kept-work" {
			t.Errorf("worktree %+v, want kept-work", rec.Worktree)
		}
		if got := readIn(childWorkDir(t, e, m, rec), "a.txt"); got != "hello\nmore\n" {
			t.Errorf("a.txt where the child worked = %q", got)
		}
		if out := wtToolOutputs(t, rec.Transcript.Path); !strings.Contains(out, "hello\nmore\n") {
			t.Errorf("the child's bash said %q", out)
		}
		return 1
	}},

	{name: "resume after timeout", modes: allModes, run: func(t *testing.T, e *env, m mode) int {
		script := e.wtOutside("s.yaml", fmt.Sprintf(`rules:
  - when: {user: "^slow$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
  - when: {user: "^slow$", turn: 2}
    reply:
      calls: [{tool: bash, args: {command: "sleep 300"}}]
  - when: {user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "cat a.txt"}}]
  - reply: {text: "finished"}
`, probe(t, e, m, "slow")+"; echo one >> a.txt"))
		p, code := e.run(append(append([]string{"task"}, m.taskFlags(e)...), "--timeout", "8s", "--model", "script:"+script, "slow")...)
		if code != exitTimeout {
			t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitTimeout, p.stderr.String())
		}
		rec := wtLatestRecord(t, e)
		if rec.Status != "timeout" {
			t.Fatalf("the child ended %s (%s), want timeout", rec.Status, rec.Reason)
		}
		if m.worktree && rec.Worktree.Disposition != "kept-work" {
			t.Errorf("worktree %+v, want kept-work", rec.Worktree)
		}
		r, code := e.run(append(append([]string{"task"}, m.runFlags(e)...), "--model", "script:"+script, "--resume", rec.ChildID, "go on")...)
		if code != 0 || !strings.HasPrefix(r.snapshot(), "finished") {
			t.Fatalf("the resume exited %d with %q\nstderr:\n%s", code, r.snapshot(), r.stderr.String())
		}
		if out := wtToolOutputs(t, rec.Transcript.Path); !strings.Contains(out, "hello\none\n") {
			t.Errorf("the resumed child did not find its work; its tools said:\n%s", out)
		}
		return 1
	}},

	{name: "resume after the worker was killed", modes: allModes, lost: true, run: func(t *testing.T, e *env, m mode) int {
		pidFile := filepath.Join(probeDir(e), "bash.pid")
		script := e.wtOutside("s.yaml", fmt.Sprintf(`rules:
  - when: {user: "^work$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
  - when: {user: "^work$", turn: 2}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
  - when: {user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "cat a.txt"}}]
  - reply: {text: "finished"}
`, probe(t, e, m, "work")+"; echo one >> a.txt", "echo $$ > "+m.rel(e, pidFile)+"; sleep 300"))
		p := e.start(append(append([]string{"task"}, m.taskFlags(e)...), "--model", "script:"+script, "work")...)
		worker := workerAbove(t, waitBashPid(t, pidFile))
		if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// A local worker's death is seen (a crash, by SIGKILL); a remote
		// worker's stream just ends, which is all its supervisor can know
		// of it (interrupted: the worker was lost).
		wantCode, wantStatus := exitFailed, session.Status("crash")
		if m.confined {
			wantCode, wantStatus = exitInterrupted, "interrupted"
		}
		if code := p.wait(t, time.Minute); code != wantCode {
			t.Fatalf("exit %d, want %d\nstderr:\n%s", code, wantCode, p.stderr.String())
		}
		rec := wtLatestRecord(t, e)
		if rec.Status != wantStatus {
			t.Fatalf("the child ended %s (%s), want %s", rec.Status, rec.Reason, wantStatus)
		}
		r, code := e.run(append(append([]string{"task"}, m.runFlags(e)...), "--model", "script:"+script, "--resume", rec.ChildID, "go on")...)
		if code != 0 || !strings.HasPrefix(r.snapshot(), "finished") {
			t.Fatalf("the resume exited %d with %q\nstderr:\n%s", code, r.snapshot(), r.stderr.String())
		}
		tr := checkWhole(t, rec.Transcript.Path)
		if end, _ := tr.LastAttemptEnd(); end.Status != "completed" {
			t.Errorf("the resumed child ended %+v", end)
		}
		if out := wtToolOutputs(t, rec.Transcript.Path); !strings.Contains(out, "hello\none\n") {
			t.Errorf("the resumed child did not find its work; its tools said:\n%s", out)
		}
		return 1
	}},

	{name: "background", modes: allModes, run: func(t *testing.T, e *env, m mode) int {
		script := e.wtOutside("s.yaml", m.script(fmt.Sprintf(`rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "child one", background: true{{wt}}}}
        - {tool: task, args: {prompt: "child two", background: true{{wt}}}}
  - when: {depth: 0, turn: 2}
    reply:
      calls:
        - {tool: bash, args: {command: "echo other work"}}
  - when: {depth: 0, turn: 3}
    reply:
      calls:
        - {tool: task_wait, args: {}}
  - when: {depth: 0, tool: task_wait}
    reply: {text: "both collected"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
  - when: {depth: 1, user: "child one"}
    reply: {text: "report one"}
  - when: {depth: 1, user: "child two"}
    reply: {text: "report two"}
`, probe(t, e, m, "bg"))))
		p, code := e.run(append(append([]string{"run", "--json"}, m.runFlags(e)...), "--model", "script:"+script, "go")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
		}
		evs := events(t, p.stdout.Bytes())
		starts, ends := ofType(evs, "task.start"), ofType(evs, "task.end")
		if len(starts) != 2 || len(ends) != 2 {
			t.Fatalf("want 2 task.start and 2 task.end, got %d and %d", len(starts), len(ends))
		}
		for _, ev := range append(starts, ends...) {
			if ev["background"] != true {
				t.Errorf("%s event does not say background: %v", ev["type"], ev)
			}
		}
		runEnd := ofType(evs, "run.end")
		if len(runEnd) != 1 || runEnd[0]["status"] != "completed" || runEnd[0]["text"] != "both collected" {
			t.Fatalf("run.end = %v", runEnd)
		}
		tr, err := session.Open(runEnd[0]["transcript"].(string))
		if err != nil {
			t.Fatal(err)
		}
		var wait string
		var recs []session.TaskRecord
		for _, msg := range tr.Messages {
			if len(msg.Results) == 1 && msg.Results[0].ToolName == "task_wait" {
				wait, recs = msg.Results[0].Content, session.TaskRecordsOf(msg)
			}
		}
		if !strings.Contains(wait, "report one") || !strings.Contains(wait, "report two") {
			t.Errorf("task_wait result lacks the children's answers:\n%s", wait)
		}
		if len(recs) != 2 || recs[0].Status != "completed" || recs[1].Status != "completed" {
			t.Errorf("task_wait result records = %+v", recs)
		}
		for _, rec := range recs {
			if m.worktree != (rec.Worktree != nil) {
				t.Errorf("child %s: worktree %+v in mode %s", rec.ChildID, rec.Worktree, m.name)
			}
		}
		return 2
	}},

	{name: "budget", modes: allModes, run: func(t *testing.T, e *env, m mode) int {
		script := e.wtOutside("s.yaml", m.script(fmt.Sprintf(`rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "dig forever"{{wt}}}}
        - {tool: task, args: {prompt: "dig again"{{wt}}}}
      usage: {input: 1000, output: 100}
  - when: {depth: 0, user: "Write your final answer now"}
    reply: {text: "main wraps up", usage: {input: 10, output: 10}}
  - when: {depth: 0, tool: task}
    reply: {text: "main done", usage: {input: 10, output: 10}}
  - when: {depth: 1, user: "Write your final answer now"}
    reply: {text: "partial findings, unfinished", usage: {input: 10, output: 10}}
  - when: {depth: 1}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
      usage: {input: 10000, output: 1000}
`, probe(t, e, m, "dig"))))
		p, code := e.run(append(append([]string{"run", "--json", "--max-parallel", "1", "--budget", "50k"}, m.runFlags(e)...), "--model", "script:"+script, "go")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
		}
		evs := events(t, p.stdout.Bytes())
		ends := ofType(evs, "task.end")
		if len(ends) != 2 || ends[0]["status"] != "completed" || ends[0]["capped"] != "budget" || ends[1]["status"] != "rejected" ||
			!strings.Contains(fmt.Sprint(ends[1]["reason"]), "the run's token budget of 50k tokens is spent") {
			t.Fatalf("task.end %v, want the first child capped by the budget and the queued one refused", ends)
		}
		runEnd := ofType(evs, "run.end")[0]
		if b, _ := runEnd["budget"].(map[string]any); b == nil || b["limit"] != 50000.0 || runEnd["rejected"] != 1.0 {
			t.Errorf("run.end %v", runEnd)
		}
		list, _ := session.ListSessions(e.home, e.dir)
		main, err := session.Open(list[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		var first string
		for _, msg := range main.Messages {
			for _, r := range msg.Results {
				if first == "" {
					first = r.Content
				}
			}
		}
		if !strings.Contains(first, "partial findings, unfinished") || !strings.Contains(first, "[task] the run's token budget ran out") {
			t.Errorf("the capped child's result:\n%s", first)
		}
		return 1
	}},

	{name: "budget in ink status", modes: allModes, run: func(t *testing.T, e *env, m mode) int {
		release := filepath.Join(probeDir(e), "release")
		script := e.wtOutside("s.yaml", m.script(fmt.Sprintf(`rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "count"{{wt}}}}]
      usage: {input: 1000, output: 100}
  - when: {depth: 0}
    reply: {text: "done", usage: {input: 1, output: 1}}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: %q}}]
      usage: {input: 2000, output: 200}
  - when: {depth: 1, turn: 2}
    reply:
      calls: [{tool: bash, args: {command: "while [ ! -e %s ]; do sleep 0.05; done"}}]
      usage: {input: 1, output: 1}
  - when: {depth: 1}
    reply: {text: "counted", usage: {input: 1, output: 1}}
`, probe(t, e, m, "count"), m.rel(e, release))))
		p := e.start(append(append([]string{"run", "--json", "--budget", "100k"}, m.runFlags(e)...), "--model", "script:"+script, "go")...)
		// The child waits in its second bash call, having spent 2.2k and 2
		// tokens of what the main agent's 1.1k left.
		waitFor(t, p, func(ev map[string]any) bool {
			return ev["type"] == "tool.start" && ev["agent"] == "main/1" && strings.Contains(fmt.Sprint(ev["args"]), "while")
		})
		// The main agent's row shows the same count once its next
		// heartbeat wrote it (a lease record carries what is left): the
		// child's own row is the one that must.
		want := int64(100_000 - 1_100 - 2_200 - 2)
		var child, main map[string]any
		for deadline := time.Now().Add(20 * time.Second); (child == nil || main == nil) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			for _, row := range e.jsonLines(0, "status", "--json") {
				if b, _ := row["budget"].(map[string]any); b != nil && int64(num(b, "remaining")) == want && num(b, "limit") == 100_000 {
					switch row["agent"] {
					case "main/1":
						child = row
					case "main":
						main = row
					}
				}
			}
		}
		if child == nil || main == nil {
			t.Errorf("ink status --json never showed the main agent and its child main/1 with %d of 100000 left: %v", want, e.jsonLines(0, "status", "--json"))
		}
		line := fmt.Sprintf("budget %s of %s left", orchestrator.CompactTokens(want), orchestrator.CompactTokens(100_000))
		if sp, _ := e.run("status"); strings.Count(sp.stdout.String(), line) != 2 {
			t.Errorf("ink status shows %q %d times, want for the main agent and its child:\n%s", line, strings.Count(sp.stdout.String(), line), sp.stdout.String())
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, time.Minute); code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
		}
		return 1
	}},

	// A local child without a worktree edits the checkout itself: there
	// is no worktree to review.
	{name: "worktree", modes: []mode{modeWorktree, modeExec}, run: func(t *testing.T, e *env, m mode) int {
		before := e.wtMainState()
		script := e.wtOutside("s.yaml", wtBashChild(probe(t, e, m, "wt")+"; echo new > new.txt && git add new.txt && git commit -qm child-commit && "+
			"echo changed >> a.txt && rm gone.txt && printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh && echo scratch > scratch.txt && echo staged > staged.txt && git add staged.txt"))
		p, code := e.run(append(append([]string{"task"}, m.taskFlags(e)...), "--model", "script:"+script, "edit in a worktree")...)
		if code != 0 {
			t.Fatalf("ink task exited %d\nstderr:\n%s", code, p.stderr.String())
		}
		rec := wtLatestRecord(t, e)
		w := rec.Worktree
		if w == nil || w.Disposition != "kept-work" {
			t.Fatalf("worktree %+v, want kept-work", w)
		}
		if got := readIn(w.Path, "a.txt") + readIn(w.Path, "scratch.txt"); got != "hello\nchanged\nscratch\n" {
			t.Errorf("the worktree's a.txt and scratch.txt: %q", got)
		}
		if fi, err := os.Stat(filepath.Join(w.Path, "run.sh")); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("run.sh lost its executable bit: %v %v", fi, err)
		}
		// What the child staged is staged in the worktree on the
		// supervisor's disk, and only that.
		if staged := e.wtGitIn(w.Path, "diff", "--cached", "--name-status"); staged != "A\tstaged.txt" {
			t.Errorf("staged in the worktree: %q, want the child's staged.txt", staged)
		}
		if log := e.wtGit("log", "--format=%s", w.Branch); !strings.HasPrefix(log, "child-commit\n") {
			t.Errorf("%s: %q, want the child's commit on top", w.Branch, log)
		}
		if after := e.wtMainState(); after != before {
			t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		d, code := e.run("worktrees", "diff", rec.ChildID)
		if diff := d.stdout.String(); code != 0 || !strings.Contains(diff, "+changed") || !strings.Contains(diff, "scratch.txt") || !strings.Contains(diff, "gone.txt") {
			t.Errorf("ink worktrees diff exited %d:\n%s\n%s", code, diff, d.stderr.String())
		}
		mr, code := e.run("worktrees", "merge", "--commit", rec.ChildID)
		if code != 0 {
			t.Fatalf("ink worktrees merge exited %d:\n%s\n%s", code, mr.stdout.String(), mr.stderr.String())
		}
		if got := readIn(e.dir, "new.txt") + readIn(e.dir, "a.txt"); got != "new\nhello\nchanged\n" {
			t.Errorf("after the merge the checkout's new.txt and a.txt: %q", got)
		}
		return 1
	}},
}
