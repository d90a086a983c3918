package main

import (
	"strings"
	"testing"
)

// TestRejectedTaskHasAnEnd: a task call refused before anything ran (an
// unknown agent) is visible to scripts and people alike: a task.end with
// status rejected and the reason in --json, a line on stderr, and run.end
// counting it.
func TestRejectedTaskHasAnEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "review it", agent: "nosuchagent"}}]
  - reply: {text: "handled the refusal"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	ends := ofType(evs, "task.end")
	if len(ends) != 1 || ends[0]["status"] != "rejected" || ends[0]["agent"] != "main/1" ||
		!strings.Contains(ends[0]["reason"].(string), `unknown agent "nosuchagent"`) {
		t.Fatalf("task.end %v, want one rejected end naming the unknown agent", ends)
	}
	if starts := ofType(evs, "task.start"); len(starts) != 0 {
		t.Fatalf("a rejected task started: %v", starts)
	}
	if end := ofType(evs, "run.end"); end[0]["rejected"] != 1.0 {
		t.Fatalf("run.end does not count the rejection: %v", end[0])
	}
	if !strings.Contains(p.stderr.String(), `main/1 rejected: task: unknown agent "nosuchagent"`) {
		t.Fatalf("stderr does not say the task was rejected:\n%s", p.stderr.String())
	}
}
