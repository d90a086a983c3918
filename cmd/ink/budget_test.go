package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// landingScript is a script whose children call bash every turn until they
// are told to write their final answer, and whose main agent delegates one
// task and reports its result.
const landingScript = `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "dig forever"}}]
      usage: {input: 1000, output: 100}
  - when: {depth: 0, tool: task}
    reply: {text: "main done", usage: {input: 1000, output: 100}}
  - when: {depth: 0, user: "Write your final answer now"}
    reply: {text: "main wraps up", usage: {input: 10, output: 10}}
  - when: {depth: 1, user: "Write your final answer now"}
    reply: {text: "partial findings, unfinished", usage: {input: 10, output: 10}}
  - when: {depth: 1}
    reply:
      calls: [{tool: bash, args: {command: "true"}}]
      usage: {input: 1000, output: 100}
`

// TestMaxTurnsSoftLanding: a child that reaches --max-turns gets one last
// turn without tools; its result is its wrap-up answer, marked as capped in
// the text and the TaskRecord.
func TestMaxTurnsSoftLanding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", landingScript)
	p, code := e.run("task", "--max-turns", "3", "--model", "script:"+script, "dig forever")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	if rec.Status != "completed" || rec.Capped != "turns" || rec.Turns != 4 {
		t.Fatalf("TaskRecord %s capped %q after %d turns, want completed, capped by turns after 3 + 1 wrap-up turn", rec.Status, rec.Capped, rec.Turns)
	}
	res := p.stdout.String()
	if !strings.HasPrefix(res, "partial findings, unfinished") || !strings.Contains(res, "[task] hit the 3-turn cap; this is the child's wrap-up answer, not a confirmed completion.") {
		t.Fatalf("result:\n%s", res)
	}
}

// TestBudgetSoftLanding: with --budget, the tree's agents land softly as
// it runs out (a child's result says it was capped by the budget), children
// that were still waiting for a slot do not start, and run.end reports the
// budget and what was spent.
func TestBudgetSoftLanding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "dig forever"}}
        - {tool: task, args: {prompt: "dig again"}}
      usage: {input: 1000, output: 100}
  - when: {depth: 0, user: "Write your final answer now"}
    reply: {text: "main wraps up", usage: {input: 10, output: 10}}
  - when: {depth: 0, tool: task}
    reply: {text: "main done", usage: {input: 10, output: 10}}
  - when: {depth: 1, user: "Write your final answer now"}
    reply: {text: "partial findings, unfinished", usage: {input: 10, output: 10}}
  - when: {depth: 1}
    reply:
      calls: [{tool: bash, args: {command: "true"}}]
      usage: {input: 10000, output: 1000}
`)
	p, code := e.run("run", "--json", "--max-parallel", "1", "--budget", "50k", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	ends := ofType(evs, "task.end")
	if len(ends) != 2 || ends[0]["status"] != "completed" || ends[1]["status"] != "rejected" ||
		!strings.Contains(ends[1]["reason"].(string), "the run's token budget of 50k tokens is spent") {
		t.Fatalf("task.end %v, want the first child completed and the queued one refused by the budget", ends)
	}
	runEnd := ofType(evs, "run.end")[0]
	b, _ := runEnd["budget"].(map[string]any)
	if b == nil || b["limit"] != 50000.0 || b["spent"].(float64) <= 0 || runEnd["rejected"] != 1.0 {
		t.Fatalf("run.end %v", runEnd)
	}
	if !strings.Contains(p.stderr.String(), "of its 50k-token budget") {
		t.Errorf("stderr does not report the budget:\n%s", p.stderr.String())
	}
	list, _ := session.ListSessions(e.home, e.dir)
	main, _ := session.Open(list[0].Path)
	var results []string
	for _, m := range main.Messages {
		for _, r := range m.Results {
			results = append(results, r.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "partial findings, unfinished") ||
		!strings.Contains(results[0], "[task] the run's token budget ran out; this is the child's wrap-up answer, not a confirmed completion.") {
		t.Fatalf("task results:\n%s", strings.Join(results, "\n---\n"))
	}
}

// TestStatusShowsBudget: under --budget, `ink status` shows for each live
// worker what is left of its tree's budget, as its worker last knew it.
func TestStatusShowsBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "count"}}]
      usage: {input: 1000, output: 100}
  - when: {depth: 0}
    reply: {text: "done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "true"}}]
      usage: {input: 2000, output: 200}
  - when: {depth: 1}
    reply: {text: "too late", delay: 120s}
`)
	p := e.start("run", "--json", "--budget", "100k", "--model", "script:"+script, "go")
	killLater(t, num(waitForEvent(t, p, "worker.start"), "pid"))
	killLater(t, num(waitForEvent(t, p, "task.start"), "pid"))
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.end" && m["agent"] == "main/1" })

	// The child spent 2.2k of what the main agent's 1.1k left.
	want := int64(100_000 - 1_100 - 2_200)
	var child map[string]any
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range e.jsonLines(0, "status", "--json") {
			if b, _ := s["budget"].(map[string]any); s["agent"] == "main/1" && b != nil && int64(num(b, "remaining")) == want {
				child = s
			}
		}
		if child != nil {
			break
		}
	}
	if child == nil {
		t.Fatalf("ink status --json never showed the child with %d of its tree's budget left: %v", want, e.jsonLines(0, "status", "--json"))
	}
	if b := child["budget"].(map[string]any); num(b, "limit") != 100_000 {
		t.Errorf("child's budget %v, want the limit 100000", b)
	}
	sp, code := e.run("status")
	line := fmt.Sprintf("budget %s of %s left", orchestrator.CompactTokens(want), orchestrator.CompactTokens(100_000))
	if code != 0 || !strings.Contains(sp.stdout.String(), line) {
		t.Errorf("ink status: exit %d, want %q\n%s", code, line, sp.stdout.String())
	}
}

// TestMaxTurnsNoAnswer: a child stopped by --max-turns whose wrap-up turn
// gives no answer is a failure: ink task says so on stderr and exits 1,
// and its task.end event, like its TaskRecord, says that it was capped.
func TestMaxTurnsNoAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", strings.Replace(landingScript, `reply: {text: "partial findings, unfinished", usage: {input: 10, output: 10}}`, `reply: {text: "", usage: {input: 10, output: 10}}`, 1))
	p, code := e.run("task", "--json", "--max-turns", "2", "--model", "script:"+script, "dig forever")
	if code != exitFailed || !strings.Contains(p.stderr.String(), "without producing a final answer (it hit its turn cap)") {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	ends := ofType(events(t, p.stdout.Bytes()), "task.end")
	if len(ends) != 1 || ends[0]["capped"] != "turns" || ends[0]["status"] != "completed" {
		t.Fatalf("task.end = %v, want completed and capped by turns", ends)
	}
	if rec := wtLatestRecord(t, e); rec.Capped != "turns" || rec.TextPresent {
		t.Fatalf("TaskRecord capped %q, text present %v", rec.Capped, rec.TextPresent)
	}
}

// TestBadTokenCountFlags: a --budget or --context-window that is not a
// token count is refused before anything runs, saying what to give.
func TestBadTokenCountFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", "rules:\n  - reply: {text: never}\n")
	for _, args := range [][]string{{"--budget", "lots"}, {"--budget", "0"}, {"--context-window", "2000000M"}, {"--context-window", "nan"}} {
		p, code := e.run(append(append([]string{"run"}, args...), "--model", "script:"+script, "go")...)
		want := args[0] + ` "` + args[1] + `" is not a token count; give a positive number such as 1500, 200k or 2M`
		if code != exitUsage || !strings.Contains(p.stderr.String(), want) {
			t.Errorf("ink run %v: exit %d, stderr %q; want %d and %q", args, code, p.stderr.String(), exitUsage, want)
		}
	}
}
