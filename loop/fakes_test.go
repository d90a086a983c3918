package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
	"github.com/inkdev/ink/tools"
)

// span is when one call of a fake tool ran.
type span struct {
	label      string
	callID     string
	start, end time.Time
	ctxDone    bool // ctx was done when the tool returned
}

// recorder collects the spans of fake tool calls and the peak number of
// calls running at once. Safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	spans   map[string]*span
	running int
	peak    int
}

func newRecorder() *recorder { return &recorder{spans: map[string]*span{}} }

func (r *recorder) begin(label, callID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans[label] = &span{label: label, callID: callID, start: time.Now()}
	r.running++
	r.peak = max(r.peak, r.running)
}

func (r *recorder) finish(label string, ctxDone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans[label]
	s.end = time.Now()
	s.ctxDone = ctxDone
	r.running--
}

func (r *recorder) get(label string) (span, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.spans[label]
	if !ok {
		return span{}, false
	}
	return *s, true
}

func (r *recorder) started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for l := range r.spans {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

func (r *recorder) maxRunning() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

// sleepArgs are the arguments of the fake sleep tools.
type sleepArgs struct {
	Label     string `json:"label"`
	Ms        int    `json:"ms"`
	IgnoreCtx bool   `json:"ignoreCtx"`
	Fail      bool   `json:"fail"`
}

// sleepTool is a fake tool that sleeps for args.ms (until ctx is done,
// unless args.ignoreCtx) and answers "<label> done".
type sleepTool struct {
	name    string
	safe    bool
	rec     *recorder
	release chan struct{} // closed to let tools that ignore ctx return early; may be nil
	record  json.RawMessage
	records []json.RawMessage
}

var _ tools.Tool = (*sleepTool)(nil)

func (s *sleepTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: s.name, Description: "sleeps (test tool)", Schema: json.RawMessage(`{"type":"object"}`)}
}

func (s *sleepTool) Safe() bool { return s.safe }

func (s *sleepTool) Run(ctx context.Context, raw json.RawMessage) tools.Result {
	var a sleepArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Result{Content: "bad args: " + err.Error(), IsError: true}
	}
	if a.Label == "" {
		a.Label = tools.CallID(ctx)
	}
	s.rec.begin(a.Label, tools.CallID(ctx))
	timer := time.NewTimer(time.Duration(a.Ms) * time.Millisecond)
	defer timer.Stop()
	interrupted := false
	if a.IgnoreCtx {
		select {
		case <-timer.C:
		case <-s.release:
		}
	} else {
		select {
		case <-timer.C:
		case <-ctx.Done():
			interrupted = true
		}
	}
	s.rec.finish(a.Label, ctx.Err() != nil)
	if interrupted {
		return tools.Result{Content: a.Label + " stopped: " + ctx.Err().Error(), IsError: true}
	}
	return tools.Result{Content: a.Label + " done", IsError: a.Fail, Record: s.record, Records: s.records}
}

// call renders one scripted call of tool with the given sleep args.
func call(tool, label string, ms int, extra ...string) string {
	fields := []string{fmt.Sprintf("label: %s", label), fmt.Sprintf("ms: %d", ms)}
	fields = append(fields, extra...)
	return fmt.Sprintf("{tool: %s, args: {%s}}", tool, strings.Join(fields, ", "))
}

// twoTurns is a script whose first turn makes calls and whose second turn
// (after any tool result) ends with text "finished".
func twoTurns(t *testing.T, calls ...string) *script.Script {
	t.Helper()
	src := fmt.Sprintf(`
rules:
  - when: {turn: 1}
    reply:
      text: working
      calls: [%s]
  - reply: {text: finished}
`, strings.Join(calls, ", "))
	return parseScript(t, src)
}

func parseScript(t testing.TB, src string) *script.Script {
	t.Helper()
	s, err := script.Parse(t.Name()+".yaml", []byte(src))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return s
}

// sink collects what a run hands to OnMessage and OnEvent. Safe for
// concurrent use so that tests can read it while a run goes on.
type sink struct {
	mu     sync.Mutex
	msgs   []model.Message
	events []loop.Event
	fail   func(model.Message) error
}

func (s *sink) onMessage(m model.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(m); err != nil {
			return err
		}
	}
	s.msgs = append(s.msgs, m)
	return nil
}

func (s *sink) onEvent(e loop.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *sink) messages() []model.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.Message(nil), s.msgs...)
}

func (s *sink) eventsOf(typ string) []loop.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []loop.Event
	for _, e := range s.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// options returns Options wired to s, with the user prompt as History.
func (s *sink) options(p model.Provider, pool ...tools.Tool) loop.Options {
	return loop.Options{
		Provider:  p,
		Request:   model.Request{System: "You are a test agent.", Model: "script"},
		Tools:     pool,
		History:   []model.Message{model.UserText("do the thing")},
		OnMessage: s.onMessage,
		OnEvent:   s.onEvent,
	}
}

// results returns the tool results among msgs, checking that each
// toolResult message holds exactly one.
func results(t *testing.T, msgs []model.Message) []model.ToolResult {
	t.Helper()
	var out []model.ToolResult
	for _, m := range msgs {
		if m.Role != model.RoleToolResult {
			continue
		}
		if len(m.Results) != 1 {
			t.Fatalf("toolResult message holds %d results, want 1", len(m.Results))
		}
		out = append(out, m.Results[0])
	}
	return out
}

// resultContents lists the content of every tool result among msgs.
func resultContents(t *testing.T, msgs []model.Message) []string {
	t.Helper()
	var out []string
	for _, r := range results(t, msgs) {
		out = append(out, r.Content)
	}
	return out
}
