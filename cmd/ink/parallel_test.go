package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// barrierScript is a main agent that calls task n times in one message.
// Each child's first turn runs a bash barrier: it adds a file to a shared
// directory and waits until n files are there (giving up after about a
// minute), so that no child can finish before every one of them runs.
// A child whose barrier saw all n answers "together"; one that gave up
// answers "alone".
func barrierScript(n int) string {
	var calls strings.Builder
	for i := range n {
		fmt.Fprintf(&calls, "        - {tool: task, args: {prompt: \"child %d\"}}\n", i+1)
	}
	barrier := fmt.Sprintf(`mkdir -p barrier && mktemp barrier/x.XXXXXX >/dev/null && i=0; `+
		`while [ "$(ls barrier | wc -l)" -lt %d ]; do i=$((i+1)); if [ $i -gt 600 ]; then echo gave up; exit 0; fi; sleep 0.1; done; echo all %d present`, n, n)
	return `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
` + calls.String() + `  - when: {depth: 0}
    reply: {text: "fan-out done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls:
        - {tool: bash, args: {command: ` + fmt.Sprintf("%q", barrier) + `, timeout: 300}}
  - when: {depth: 1, tool: bash, result: "all ` + fmt.Sprint(n) + ` present"}
    reply: {text: "together"}
  - when: {depth: 1}
    reply: {text: "alone"}
`
}

// TestMaxParallelInOneMessage: sixteen task calls in one assistant message
// with --max-parallel 16 run as sixteen workers at once. The children meet
// at a barrier that only opens when all sixteen run, and the event stream
// shows every task.start before the first task.end.
func TestMaxParallelInOneMessage(t *testing.T) {
	t.Parallel()
	const n = 16
	e := newEnv(t)
	script := e.write("s.yaml", barrierScript(n))
	// A window that admits only some of the children runs them in waves,
	// each held at the barrier until it gives up: allow for that, so that
	// the failure says what went wrong.
	p := e.start("run", "--json", "--max-parallel", fmt.Sprint(n), "--sandbox", "danger-full-access", "--model", "script:"+script, "go")
	code := p.wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	live, peak := 0, 0
	pids := map[float64]bool{}
	var together int
	for _, ev := range evs {
		switch ev["type"] {
		case "task.start":
			live++
			peak = max(peak, live)
			pids[ev["pid"].(float64)] = true
		case "task.end":
			live--
			if ev["status"] != "completed" {
				t.Errorf("child %v ended %v: %v", ev["childId"], ev["status"], ev["reason"])
			}
		}
	}
	if len(ofType(evs, "task.queued")) != 0 {
		t.Errorf("a child was queued although --max-parallel %d leaves room for all %d", n, n)
	}
	if peak != n || len(pids) != n {
		t.Fatalf("%d children ran at once in %d processes, want %d: --max-parallel %d is not honoured inside one message", peak, len(pids), n, n)
	}
	for _, ev := range ofType(evs, "message") {
		msg, _ := ev["message"].(map[string]any)
		if msg == nil || msg["role"] != "assistant" || ev["agent"] == "main" {
			continue
		}
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if b, _ := b.(map[string]any); b["text"] == "together" {
				together++
			}
		}
	}
	if together != n {
		t.Fatalf("%d of %d children passed the barrier together\nstderr:\n%s", together, n, p.stderr.String())
	}
	if run := ofType(evs, "run.end"); len(run) != 1 || run[0]["text"] != "fan-out done" {
		t.Fatalf("run.end = %v", run)
	}
}
