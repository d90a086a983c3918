package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
)

// replies is a provider that answers turn n with the nth reply (the last
// one repeats) and counts its calls. Safe for concurrent use.
type replies struct {
	mu    sync.Mutex
	list  []model.Message
	calls int
}

func (p *replies) Stream(_ context.Context, _ model.Request, _ func(model.Delta)) (model.Message, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.list[min(p.calls, len(p.list)-1)]
	p.calls++
	m.Role = model.RoleAssistant
	m.Usage = &model.Usage{Input: 10, Output: 10}
	return m, nil
}

// sleepCalls returns n calls of the sleep tool, labelled c0, c1, ….
func sleepCalls(n int) []model.ToolCall {
	calls := make([]model.ToolCall, n)
	for i := range calls {
		calls[i] = model.ToolCall{ID: fmt.Sprintf("call-%d", i), Name: "sleep", Args: json.RawMessage(fmt.Sprintf(`{"label":"c%d"}`, i))}
	}
	return calls
}

func TestCallsPerTurnBound(t *testing.T) {
	t.Parallel()
	const total = 1000
	rec := newRecorder()
	var s sink
	p := &replies{list: []model.Message{
		{Content: []model.Block{{Type: "text", Text: "many"}}, ToolCalls: sleepCalls(total)},
		{Content: []model.Block{{Type: "text", Text: "finished"}}},
	}}
	res, err := loop.Run(context.Background(), s.options(p, &sleepTool{name: "sleep", safe: true, rec: rec}))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalText != "finished" {
		t.Fatalf("final text %q", res.FinalText)
	}
	if n := len(rec.started()); n != loop.MaxCallsPerTurn {
		t.Errorf("%d calls ran; want the per-turn call bound, %d", n, loop.MaxCallsPerTurn)
	}
	// Every call has exactly one result; the ones past the bound come in
	// one message, as errors naming the bound.
	answered := map[string]model.ToolResult{}
	var lines int
	for _, m := range s.messages() {
		if m.Role != model.RoleToolResult {
			continue
		}
		lines++
		for _, r := range m.Results {
			if _, dup := answered[r.ToolCallID]; dup {
				t.Fatalf("call %s answered twice", r.ToolCallID)
			}
			answered[r.ToolCallID] = r
		}
	}
	if len(answered) != total || lines != loop.MaxCallsPerTurn+1 {
		t.Fatalf("%d calls answered in %d messages; want %d in %d", len(answered), lines, total, loop.MaxCallsPerTurn+1)
	}
	first := answered[fmt.Sprintf("call-%d", loop.MaxCallsPerTurn)]
	if !first.IsError || !strings.Contains(first.Content, "per-turn call bound") || !strings.Contains(first.Content, "Batch the work") ||
		!strings.Contains(first.Content, fmt.Sprintf("made %d tool calls", total)) {
		t.Errorf("first call past the bound answered %+v", first)
	}
	if last := answered[fmt.Sprintf("call-%d", total-1)]; !last.IsError || !strings.Contains(last.Content, "per-turn call bound") {
		t.Errorf("last call answered %+v", last)
	}
	if r := answered["call-0"]; r.IsError || r.Content != "c0 done" {
		t.Errorf("a call within the bound answered %+v", r)
	}
	warned := false
	for _, e := range s.eventsOf(loop.EventWarning) {
		warned = warned || strings.Contains(e.Text, "per-turn call bound")
	}
	if !warned {
		t.Error("no warning names the per-turn call bound")
	}
}

// A model that repeats a reply of many calls runs at most the bound a
// turn, for at most its turn cap, and still lands.
func TestCallsPerTurnBoundRepeated(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	p := &replies{list: []model.Message{{Content: []model.Block{{Type: "text", Text: "again"}}, ToolCalls: sleepCalls(300)}}}
	opts := s.options(p, &sleepTool{name: "sleep", safe: true, rec: rec})
	opts.MaxTurns = 3
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capped != loop.CappedTurns || res.Turns != 4 {
		t.Fatalf("capped %q after %d turns", res.Capped, res.Turns)
	}
	// Call ids repeat across turns and are renamed; count runs instead.
	if n := len(rec.started()); n > 3*loop.MaxCallsPerTurn {
		t.Errorf("%d calls ran in 3 turns; the bound allows %d", n, 3*loop.MaxCallsPerTurn)
	}
}

func TestUnusableArgsNotRun(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	big := json.RawMessage(`{"label":"` + strings.Repeat("x", model.MaxToolArgBytes) + `"}`)
	p := &replies{list: []model.Message{
		{ToolCalls: []model.ToolCall{
			{ID: "deep", Name: "sleep", Args: json.RawMessage(`"[[["`), Invalid: "its arguments are not valid JSON (exceeded max depth)"},
			{ID: "big", Name: "sleep", Args: big},
			{ID: "ok", Name: "sleep", Args: json.RawMessage(`{"label":"ok"}`)},
		}},
		{Content: []model.Block{{Type: "text", Text: "finished"}}},
	}}
	if _, err := loop.Run(context.Background(), s.options(p, &sleepTool{name: "sleep", safe: true, rec: rec})); err != nil {
		t.Fatal(err)
	}
	got := results(t, s.messages())
	if len(got) != 3 {
		t.Fatalf("results = %+v", got)
	}
	if r := got[0]; !r.IsError || !strings.Contains(r.Content, "not run: its arguments are not valid JSON (exceeded max depth)") {
		t.Errorf("invalid call answered %+v", r)
	}
	if r := got[1]; !r.IsError || !strings.Contains(r.Content, "tool-argument bound of 1 MiB") {
		t.Errorf("oversized call answered %.300q", r.Content)
	}
	if started := rec.started(); len(started) != 1 || started[0] != "ok" {
		t.Errorf("calls that ran: %v; want only ok", started)
	}
}

func TestReplyBound(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	huge := strings.Repeat("y", model.MaxReplyBytes+100)
	p := &replies{list: []model.Message{{
		Content:   []model.Block{{Type: "text", Text: huge}},
		ToolCalls: []model.ToolCall{{ID: "x", Name: "sleep", Args: json.RawMessage(`{"label":"x"}`)}},
	}}}
	res, err := loop.Run(context.Background(), s.options(p, &sleepTool{name: "sleep", safe: true, rec: rec}))
	if !model.IsReplyTooLarge(err) || !strings.Contains(err.Error(), "reply bound of 8 MiB") {
		t.Fatalf("err = %v; want the reply bound named", err)
	}
	if len(rec.started()) != 0 {
		t.Error("a call of an oversized reply ran")
	}
	msgs := s.messages()
	if len(msgs) != 1 || len(msgs[0].ToolCalls) != 0 || len(msgs[0].Text()) != model.MaxReplyBytes || res.Turns != 1 {
		t.Fatalf("kept %d messages; the first with %d calls and %d bytes of text", len(msgs), len(msgs[0].ToolCalls), len(msgs[0].Text()))
	}
}
