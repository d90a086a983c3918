package main

import (
	"strings"
	"testing"

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
