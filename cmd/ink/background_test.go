package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

const backgroundScript = `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "child one", background: true}}
        - {tool: task, args: {prompt: "child two", background: true}}
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
  - when: {depth: 1, user: "child one"}
    reply: {text: "report one", delay: 1s}
  - when: {depth: 1, user: "child two"}
    reply: {text: "report two", delay: 1s}
`

// TestRunBackgroundChildren: the main agent starts two children in the
// background, does other work while they run, then collects both with one
// task_wait, whose result holds both answers and both TaskRecords.
func TestRunBackgroundChildren(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", backgroundScript)
	p, code := e.run("run", "--json", "--model", "script:"+script, "go")
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
			t.Fatalf("%s event does not say background: %v", ev["type"], ev)
		}
	}
	// The other work ran while the children did: the bash call ended
	// before either child.
	bashEnd := 0.0
	for _, ev := range ofType(evs, "tool.end") {
		if ev["name"] == "bash" && ev["agent"] == "main" {
			bashEnd = ev["seq"].(float64)
		}
	}
	for _, ev := range ends {
		if bashEnd == 0 || ev["seq"].(float64) < bashEnd {
			t.Fatalf("the main agent's other work (tool.end seq %v) did not happen while the children ran (task.end seq %v)", bashEnd, ev["seq"])
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
	var order []string
	var wait model.Message
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			order = append(order, c.Name)
		}
		if len(m.Results) == 1 && m.Results[0].ToolName == "task_wait" {
			wait = m
		}
		if len(m.Results) == 1 && m.Results[0].ToolName == "task" && (len(m.TaskRecord) > 0 || !strings.Contains(m.Results[0].Content, "started in the background")) {
			t.Fatalf("a background task result should say it started and carry no record: %+v", m)
		}
	}
	if strings.Join(order, ",") != "task,task,bash,task_wait" {
		t.Fatalf("the main agent's calls = %v", order)
	}
	text := wait.Results[0].Content
	if !strings.Contains(text, "report one") || !strings.Contains(text, "report two") {
		t.Fatalf("task_wait result lacks the children's answers:\n%s", text)
	}
	recs := session.TaskRecordsOf(wait)
	if len(recs) != 2 || recs[0].Status != "completed" || recs[1].Status != "completed" || recs[0].ChildID == recs[1].ChildID {
		t.Fatalf("task_wait result records = %+v", recs)
	}
}

const reminderScript = `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "slow child", background: true}}
  - when: {depth: 0, user: "ink waited for them"}
    reply: {text: "final: the slow child reported"}
  - when: {depth: 0, user: "have not been collected"}
    reply: {text: "I am done anyway"}
  - when: {depth: 0}
    reply: {text: "I am done"}
  - when: {depth: 1}
    reply: {text: "slow report", delay: 1s}
`

// TestRunBackgroundReminder: a main agent that ends its turn while its
// background child runs is told which child (twice); when it still does
// not collect it, ink waits for the child and hands the model its result,
// with its TaskRecord, before the final turn. The run ends after the child.
func TestRunBackgroundReminder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", reminderScript)
	p, code := e.run("run", "--json", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	runEnd := ofType(evs, "run.end")
	if len(runEnd) != 1 || runEnd[0]["text"] != "final: the slow child reported" {
		t.Fatalf("run.end = %v", runEnd)
	}
	// Turn numbers run on across the reminders, so the first turn's rule
	// (start a child) fires once.
	starts := ofType(evs, "task.start")
	if len(starts) != 1 {
		t.Fatalf("%d children started, want 1", len(starts))
	}
	childID := starts[0]["childId"].(string)
	tr, err := session.Open(runEnd[0]["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	reminders, waited := 0, 0
	for _, m := range tr.Messages {
		if m.Role != model.RoleUser {
			continue
		}
		switch text := m.Text(); {
		case strings.Contains(text, "have not been collected"):
			reminders++
			if !strings.Contains(text, childID) || !strings.Contains(text, "task_wait") || !strings.Contains(text, "task_cancel") {
				t.Fatalf("the reminder does not name the child and what to do:\n%s", text)
			}
		case strings.Contains(text, "ink waited for them"):
			waited++
			recs := session.TaskRecordsOf(m)
			if !strings.Contains(text, "slow report") || len(recs) != 1 || recs[0].ChildID != childID {
				t.Fatalf("ink's note lacks the child's result or record (%+v):\n%s", recs, text)
			}
		}
	}
	if reminders != 2 || waited != 1 {
		t.Fatalf("%d reminders and %d notes with results, want 2 and 1", reminders, waited)
	}
	mainEnd, _ := tr.LastAttemptEnd()
	child := e.childTranscript(t, childID)
	if childEnd := lastAttempt(t, child); childEnd.status != "completed" || !childEnd.end.Before(mainEnd.Time) {
		t.Fatalf("the child (%+v) did not end before the run (%s)", childEnd, mainEnd.Time)
	}
	// Turns count across the whole attempt: the turn numbers the model saw
	// went on after the reminders.
	if turns := int(runEnd[0]["turns"].(float64)); turns != 5 {
		t.Fatalf("run.end turns = %d, want 5 (the task call, the first answer, two after reminders, the final one)", turns)
	}
}

// TestRunSessionCollectsBackgroundAfterHostLoss: ink is SIGKILLed after a
// background child reported and before its agent collected it; continuing
// the session hands the child's result, with its record, to the next
// task_wait, and the run after that has nothing left to collect.
func TestRunSessionCollectsBackgroundAfterHostLoss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1, user: "^start$"}
    reply:
      calls: [{tool: task, args: {prompt: "count the files", background: true}}]
  - when: {depth: 0, user: "^start$"}
    reply: {text: "never written", delay: 300s}
  - when: {depth: 1}
    reply: {text: "42 files"}
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task_wait, args: {}}]
  - when: {depth: 0, tool: task_wait, result: "42 files"}
    reply: {text: "collected: 42 files"}
  - when: {depth: 0, tool: task_wait}
    reply: {text: "nothing to collect"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "start")
	mainID := waitForEvent(t, p, "run.start")["session"].(string)
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "task.end" })
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)

	q, code := e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "go on")
	if code != 0 {
		t.Fatalf("continue: exit %d\nstderr:\n%s", code, q.stderr.String())
	}
	end := ofType(events(t, q.stdout.Bytes()), "run.end")
	if len(end) != 1 || end[0]["text"] != "collected: 42 files" {
		t.Fatalf("run.end %v\nstderr:\n%s", end, q.stderr.String())
	}
	tr, err := session.Open(end[0]["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var recs []session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.Results) == 1 && m.Results[0].ToolName == "task_wait" {
			recs = append(recs, session.TaskRecordsOf(m)...)
		}
	}
	if len(recs) != 1 || recs[0].Status != "completed" || !recs[0].Launched {
		t.Fatalf("task_wait records %+v, want the background child's", recs)
	}

	r, code := e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "again")
	if code != 0 {
		t.Fatalf("second continue: exit %d\nstderr:\n%s", code, r.stderr.String())
	}
	if end := ofType(events(t, r.stdout.Bytes()), "run.end"); len(end) != 1 || end[0]["text"] != "nothing to collect" {
		t.Fatalf("second continue's run.end %v", end)
	}
}
