package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// requestLog wraps a provider and keeps a copy of every request.
type requestLog struct {
	model.Provider
	mu   sync.Mutex
	reqs []model.Request
}

func (l *requestLog) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	l.mu.Lock()
	cp := req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	l.reqs = append(l.reqs, cp)
	l.mu.Unlock()
	return l.Provider.Stream(ctx, req, onDelta)
}

// ContextWindow passes on the window of the wrapped provider.
func (l *requestLog) ContextWindow() int64 {
	if wr, ok := l.Provider.(model.WindowReporter); ok {
		return wr.ContextWindow()
	}
	return 0
}

var (
	_ model.Provider       = (*requestLog)(nil)
	_ model.WindowReporter = (*requestLog)(nil)
)

func TestMultiTurnRun(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	echo := &sleepTool{name: "echo", safe: true, rec: rec}
	other := &sleepTool{name: "other", safe: false, rec: rec}
	prov := &requestLog{Provider: parseScript(t, `
rules:
  - when: {agent: scout, depth: 1, turn: 1, user: "the thing"}
    reply:
      text: first I look
      calls: [{tool: echo, args: {label: a}}]
  - when: {agent: scout, tool: echo, result: "a done"}
    reply:
      calls: [{tool: other, args: {label: b}}]
  - when: {agent: scout, tool: other, turn: 3}
    reply: {text: "all done: a and b"}
`)}
	var s sink
	opts := s.options(prov, echo, other)
	opts.Request.Agent, opts.Request.Depth = "scout", 1
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Turns != 3 || res.FinalText != "all done: a and b" {
		t.Errorf("turns %d, final %q; want 3 turns ending in the last text", res.Turns, res.FinalText)
	}
	roles := []model.Role{}
	for _, m := range res.Messages {
		roles = append(roles, m.Role)
	}
	want := []model.Role{model.RoleAssistant, model.RoleToolResult, model.RoleAssistant, model.RoleToolResult, model.RoleAssistant}
	if !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	if !reflect.DeepEqual(s.messages(), res.Messages) {
		t.Error("OnMessage did not see exactly the messages of the Result, in order")
	}
	calls := res.Messages[0].ToolCalls
	if rs := results(t, res.Messages); rs[0].ToolCallID != calls[0].ID || rs[0].ToolName != "echo" || rs[0].Content != "a done" || rs[0].IsError {
		t.Errorf("first result = %+v; want echo's answer to %s", rs[0], calls[0].ID)
	}
	if sp, _ := rec.get("a"); sp.callID != calls[0].ID {
		t.Errorf("tool saw call id %q, want %q (tools.WithCallID)", sp.callID, calls[0].ID)
	}

	// Every request carries the template, the tools, the turn and the whole
	// conversation so far.
	if len(prov.reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(prov.reqs))
	}
	for i, req := range prov.reqs {
		if req.Turn != i+1 || req.System != "You are a test agent." || req.Model != "script" || req.Agent != "scout" || req.Depth != 1 {
			t.Errorf("request %d = turn %d system %q model %q agent %q depth %d", i, req.Turn, req.System, req.Model, req.Agent, req.Depth)
		}
		if len(req.Tools) != 2 || req.Tools[0].Name != "echo" || req.Tools[1].Name != "other" {
			t.Errorf("request %d tools = %+v", i, req.Tools)
		}
		if wantLen := 1 + 2*i; len(req.Messages) != wantLen {
			t.Errorf("request %d has %d messages, want %d", i, len(req.Messages), wantLen)
		}
	}
	if len(opts.History) != 1 {
		t.Errorf("Run changed History: %d messages", len(opts.History))
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	res, err := loop.Run(context.Background(), s.options(
		twoTurns(t, call("echo", "a", 1), call("echo", "b", 1)),
		&sleepTool{name: "echo", safe: true, rec: rec},
	))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	s.mu.Lock()
	for _, e := range s.events {
		types = append(types, e.Type)
	}
	s.mu.Unlock()
	got := strings.Join(types, " ")
	// turn 1: text and two calls streamed, the assistant message, both
	// calls read before either runs, then results in call order.
	prefix := "turn.start delta delta delta message tool.start tool.start tool.running tool.running"
	suffix := "turn.start delta message"
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Errorf("events = %s", got)
	}
	ends := s.eventsOf(loop.EventToolEnd)
	if len(ends) != 2 || ends[0].Result.Content != "a done" || ends[1].Result.Content != "b done" || ends[0].Turn != 1 {
		t.Errorf("tool.end events = %+v", ends)
	}
	if msgs := s.eventsOf(loop.EventMessage); len(msgs) != len(res.Messages) {
		t.Errorf("%d message events for %d messages", len(msgs), len(res.Messages))
	}
	if starts := s.eventsOf(loop.EventTurnStart); len(starts) != 2 || starts[1].Turn != 2 {
		t.Errorf("turn.start events = %+v", starts)
	}
}

func TestFinalTextIsAttemptScoped(t *testing.T) {
	t.Parallel()
	history := []model.Message{
		model.UserText("first task"),
		{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "the OLD answer"}}},
		model.UserText("continue"),
	}
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"blank answer does not fall back to history", `
rules:
  - reply: {text: "  \n"}
`, ""},
		{"newest non-blank text of this run", `
rules:
  - when: {turn: 1}
    reply: {text: "checking", calls: [{tool: echo, args: {label: a}}]}
  - reply: {text: ""}
`, "checking"},
		{"thinking-free last text wins", `
rules:
  - when: {turn: 1}
    reply: {text: "checking", calls: [{tool: echo, args: {label: a}}]}
  - reply: {text: "new answer"}
`, "new answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s sink
			opts := s.options(parseScript(t, tc.script), &sleepTool{name: "echo", safe: true, rec: newRecorder()})
			opts.History = history
			res, err := loop.Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinalText != tc.want {
				t.Errorf("FinalText = %q, want %q", res.FinalText, tc.want)
			}
			for _, m := range s.messages() {
				if m.Text() == "the OLD answer" {
					t.Error("History was handed to OnMessage")
				}
			}
		})
	}
}

func TestUsageIsSummed(t *testing.T) {
	t.Parallel()
	var s sink
	res, err := loop.Run(context.Background(), s.options(parseScript(t, `
rules:
  - when: {turn: 1}
    reply: {calls: [{tool: echo, args: {label: a}}], usage: {input: 100, output: 10, cacheRead: 50}}
  - when: {turn: 2}
    reply: {calls: [{tool: echo, args: {label: b}}], usage: {input: 200, output: 20, cacheWrite: 7}}
  - reply: {text: done, usage: {input: 300, output: 30}}
`), &sleepTool{name: "echo", safe: true, rec: newRecorder()}))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{Input: 600, Output: 60, CacheRead: 50, CacheWrite: 7}
	if res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
}

func TestProviderErrorKeepsPartialText(t *testing.T) {
	t.Parallel()
	var s sink
	res, err := loop.Run(context.Background(), s.options(parseScript(t, `
rules:
  - when: {turn: 1}
    reply: {text: "step one", calls: [{tool: echo, args: {label: a}}], usage: {input: 10, output: 1}}
  - reply: {text: "I found the bug in", error: "connection reset by peer", usage: {input: 20, output: 2}}
`), &sleepTool{name: "echo", safe: true, rec: newRecorder()}))
	if err == nil || !strings.Contains(err.Error(), "connection reset by peer") || !strings.Contains(err.Error(), "model turn 2") {
		t.Fatalf("err = %v; want the provider error of turn 2", err)
	}
	if res.Turns != 2 || res.FinalText != "I found the bug in" {
		t.Errorf("turns %d final %q; want 2 turns and the partial text", res.Turns, res.FinalText)
	}
	msgs := s.messages()
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleAssistant || last.Text() != "I found the bug in" || len(last.ToolCalls) != 0 || last.Usage == nil || !last.Usage.Incomplete {
		t.Errorf("last persisted message = %+v; want the partial text, incomplete usage", last)
	}
	if want := (model.Usage{Input: 30, Output: 3, Incomplete: true}); res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
}

// failingProvider returns a partial message with text and a tool call,
// then fails.
type failingProvider struct{ text string }

func (p failingProvider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	return model.Message{
		Role:      model.RoleAssistant,
		Content:   []model.Block{{Type: "text", Text: p.text}},
		ToolCalls: []model.ToolCall{{ID: "half", Name: "echo", Args: json.RawMessage(`{"lab`)}},
		Usage:     &model.Usage{Input: 5},
	}, errors.New("stream cut: unexpected EOF")
}

var _ model.Provider = failingProvider{}

func TestProviderErrorStripsCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text      string
		persisted int
	}{{"partial words", 1}, {" \n ", 0}, {"", 0}} {
		var s sink
		res, err := loop.Run(context.Background(), s.options(failingProvider{tc.text}, &sleepTool{name: "echo", safe: true, rec: newRecorder()}))
		if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("err = %v", err)
		}
		msgs := s.messages()
		if len(msgs) != tc.persisted {
			t.Fatalf("text %q: %d messages persisted, want %d", tc.text, len(msgs), tc.persisted)
		}
		if tc.persisted == 1 && (len(msgs[0].ToolCalls) != 0 || msgs[0].StopReason != "error") {
			t.Errorf("partial message keeps its calls or lacks stop reason error: %+v", msgs[0])
		}
		if !res.Usage.Incomplete || res.Usage.Input != 5 {
			t.Errorf("usage = %+v; want the partial usage, incomplete", res.Usage)
		}
	}
}

func TestOnMessageErrorStopsRun(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	diskFull := errors.New("write transcript: no space left on device")
	s := sink{fail: func(m model.Message) error {
		if m.Role == model.RoleToolResult {
			return diskFull
		}
		return nil
	}}
	res, err := loop.Run(context.Background(), s.options(
		twoTurns(t, call("echo", "fast", 1), call("echo", "slow", 5000)),
		&sleepTool{name: "echo", safe: true, rec: rec},
	))
	if !errors.Is(err, diskFull) {
		t.Fatalf("err = %v, want the OnMessage error", err)
	}
	if res.Turns != 1 || len(res.Messages) != 1 {
		t.Errorf("turns %d, messages %d; want the run stopped after the first result failed to save", res.Turns, len(res.Messages))
	}
	sp, ok := rec.get("slow")
	if !ok || sp.end.IsZero() || !sp.ctxDone {
		t.Errorf("the slow tool was not cancelled and waited for: %+v", sp)
	}
}

func TestToolRecordAndPanics(t *testing.T) {
	t.Parallel()
	var s sink
	record := json.RawMessage(`{"version":1,"status":"completed"}`)
	res, err := loop.Run(context.Background(), s.options(
		twoTurns(t, call("task", "child", 1), `{tool: boom}`),
		&sleepTool{name: "task", safe: true, rec: newRecorder(), record: record, records: []json.RawMessage{record, record}},
		panicTool{},
	))
	if err != nil {
		t.Fatal(err)
	}
	var recs []json.RawMessage
	for _, m := range res.Messages {
		if m.Role == model.RoleToolResult {
			recs = append(recs, m.TaskRecord)
			if m.Results[0].ToolName == "task" && len(m.TaskRecords) != 2 {
				t.Errorf("task result carries %d TaskRecords, want the tool's 2", len(m.TaskRecords))
			}
		}
	}
	if len(recs) != 2 || string(recs[0]) != string(record) || recs[1] != nil {
		t.Errorf("task records = %q; want the task's record on its result only", recs)
	}
	rs := results(t, res.Messages)
	if !rs[1].IsError || !strings.Contains(rs[1].Content, "tool boom failed") {
		t.Errorf("panicking tool result = %+v; want an isError result", rs[1])
	}
}

type panicTool struct{}

var _ tools.Tool = panicTool{}

func (panicTool) Spec() model.ToolSpec { return model.ToolSpec{Name: "boom"} }
func (panicTool) Safe() bool           { return false }
func (panicTool) Run(context.Context, json.RawMessage) tools.Result {
	panic("index out of range")
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := loop.Run(context.Background(), loop.Options{}); err == nil || !strings.Contains(err.Error(), "Provider") {
		t.Errorf("no provider: err = %v", err)
	}
	rec := newRecorder()
	_, err := loop.Run(context.Background(), loop.Options{
		Provider: parseScript(t, "rules:\n  - reply: {text: hi}\n"),
		Tools:    []tools.Tool{&sleepTool{name: "echo", rec: rec}, &sleepTool{name: "echo", rec: rec}},
	})
	if err == nil || !strings.Contains(err.Error(), `"echo" twice`) {
		t.Errorf("duplicate tool: err = %v", err)
	}
}

// sloppyIDs answers like a server that reuses or omits tool call ids.
type sloppyIDs struct{}

func (sloppyIDs) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	if req.Turn > 2 {
		return model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "done"}}}, nil
	}
	return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
		{ID: "call_0", Name: "echo", Args: json.RawMessage(`{"label":"` + fmt.Sprint("a", req.Turn) + `"}`)},
		{ID: "", Name: "echo", Args: json.RawMessage(`{"label":"` + fmt.Sprint("b", req.Turn) + `"}`)},
		{ID: "call_0", Name: "echo", Args: json.RawMessage(`{"label":"` + fmt.Sprint("c", req.Turn) + `"}`)},
	}}, nil
}

var _ model.Provider = sloppyIDs{}

func TestCallIDsAreMadeUnique(t *testing.T) {
	t.Parallel()
	var s sink
	opts := s.options(sloppyIDs{}, &sleepTool{name: "echo", safe: true, rec: newRecorder()})
	opts.History = append(opts.History, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "old", Name: "echo"}}})
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{"old": true}
	var callIDs []string
	for _, m := range res.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Errorf("call id %q is empty or repeated", c.ID)
			}
			seen[c.ID] = true
			callIDs = append(callIDs, c.ID)
		}
	}
	if len(callIDs) != 6 || callIDs[0] != "call_0" {
		t.Errorf("call ids = %v; want 6, the first unique one kept", callIDs)
	}
	var resultIDs []string
	for _, r := range results(t, res.Messages) {
		resultIDs = append(resultIDs, r.ToolCallID)
	}
	if !reflect.DeepEqual(resultIDs, callIDs) {
		t.Errorf("results answer %v, calls were %v", resultIDs, callIDs)
	}
}
