package loop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// failingTool always fails, as an edit whose oldText is not in the file.
type failingTool struct{ name string }

var _ tools.Tool = (*failingTool)(nil)

func (f *failingTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: f.name, Description: "fails", Schema: json.RawMessage(`{"type":"object"}`)}
}
func (f *failingTool) Safe() bool { return false }
func (f *failingTool) Run(context.Context, json.RawMessage) tools.Result {
	return tools.Result{Content: "edit: oldText not found in main.go\n(read the file again)", IsError: true}
}

func TestHealthRepeatedCall(t *testing.T) {
	t.Parallel()
	src := `
rules:
  - when: {turn: 7}
    reply: {text: "giving up"}
  - reply: {calls: [{tool: read, args: {path: go.mod, limit: 5}}]}
`
	for _, off := range []bool{false, true} {
		var s sink
		opts := s.options(parseScript(t, src), &blobTool{name: "read", size: 10})
		opts.Health.Off = off
		res, err := loop.Run(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if off {
			if len(res.Health) != 0 || len(s.eventsOf(loop.EventWarning)) != 0 {
				t.Errorf("with the watch off: health %q", res.Health)
			}
			continue
		}
		// Six turns make the same call; the watch reports it once, at the fifth.
		want := `the same call to read {"limit":5,"path":"go.mod"} in 5 consecutive turns (turns 1-5)`
		if len(res.Health) != 1 || res.Health[0] != want {
			t.Errorf("health = %q; want [%q]", res.Health, want)
		}
		if w := s.eventsOf(loop.EventWarning); len(w) != 1 || w[0].Text != want || w[0].Turn != 5 {
			t.Errorf("warnings = %+v; want one on turn 5", w)
		}
	}
}

func TestHealthDifferentCallsAreFine(t *testing.T) {
	t.Parallel()
	// The same tool on five different paths is progress, not a loop.
	var src strings.Builder
	src.WriteString("rules:\n")
	for turn, p := range []string{"a", "b", "c", "d", "e", "f"} {
		src.WriteString("  - when: {turn: " + string(rune('1'+turn)) + "}\n    reply: {calls: [{tool: read, args: {path: " + p + "}}]}\n")
	}
	src.WriteString("  - reply: {text: done}\n")
	var s sink
	res, err := loop.Run(context.Background(), s.options(parseScript(t, src.String()), &blobTool{name: "read", size: 10}))
	if err != nil || len(res.Health) != 0 {
		t.Fatalf("health = %q, %v; want none", res.Health, err)
	}
}

func TestHealthFailedEdits(t *testing.T) {
	t.Parallel()
	var s sink
	opts := s.options(parseScript(t, `
rules:
  - when: {turn: 5}
    reply: {text: "could not edit"}
  - reply: {calls: [{tool: edit, args: {path: main.go, oldText: "func x", newText: "func y"}}]}
`), &failingTool{name: "edit"})
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Four failures: the third is reported and the count starts again.
	want := `3 failed edit/write calls within 5m0s (the last: edit {"path":"main.go"}: edit: oldText not found in main.go)`
	if len(res.Health) != 1 || res.Health[0] != want {
		t.Errorf("health = %q; want [%q]", res.Health, want)
	}
}

func TestHealthToolOpenTooLong(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	opts := s.options(twoTurns(t, call("sleep", "slow", 400), call("sleep", "quick", 0)), &sleepTool{name: "sleep", safe: true, rec: rec})
	opts.Health.ToolOpenLimit = 50 * time.Millisecond
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Health) != 1 || !strings.HasPrefix(res.Health[0], `tool sleep {"label":"slow","ms":400} has been running for more than 50ms`) {
		t.Fatalf("health = %q; want the slow call reported once", res.Health)
	}
	// The warning came while the tool ran, before its result.
	s.mu.Lock()
	defer s.mu.Unlock()
	warned, ended := -1, -1
	for i, e := range s.events {
		if e.Type == loop.EventWarning && warned < 0 {
			warned = i
		}
		if e.Type == loop.EventToolEnd && e.Call.Args != nil && strings.Contains(string(e.Call.Args), "slow") {
			ended = i
		}
	}
	if warned < 0 || ended < 0 || warned > ended {
		t.Errorf("warning at event %d, slow tool's end at %d; want the warning first", warned, ended)
	}
}
