package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// blobTool answers every call with size bytes naming the path it was
// given, so that results have a known weight in the context.
type blobTool struct {
	name string
	size int
}

var _ tools.Tool = (*blobTool)(nil)

func (b *blobTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: b.name, Description: "returns a blob", Schema: json.RawMessage(`{"type":"object"}`)}
}

func (b *blobTool) Safe() bool { return true }

func (b *blobTool) Run(_ context.Context, raw json.RawMessage) tools.Result {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(raw, &a)
	head := "contents of " + a.Path + ": "
	return tools.Result{Content: head + strings.Repeat("x", max(0, b.size-len(head)))}
}

// compactions collects what OnCompaction saw.
type compactions struct {
	mu   sync.Mutex
	list []loop.Compaction
	fail error
}

func (c *compactions) on(x loop.Compaction) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.list = append(c.list, x)
	return nil
}

// checkPaired fails the test when a request splits a tool call from its
// result: every result must answer a call made earlier in the same
// request, and every call but those of the last message must be answered.
func checkPaired(t *testing.T, i int, msgs []model.Message) {
	t.Helper()
	calls := map[string]bool{}
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		for _, r := range m.Results {
			if !calls[r.ToolCallID] {
				t.Errorf("request %d holds the result of call %s without the call", i, r.ToolCallID)
			}
			answered[r.ToolCallID] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			t.Errorf("request %d holds call %s without its result", i, id)
		}
	}
}

// TestCompactsTwiceAndFinishes runs a script model with a 1000-token
// window whose usage reports pass 85% of it twice: the loop compacts before
// turns 4 and 7, keeps the last turn each time, and finishes with the
// right answer.
func TestCompactsTwiceAndFinishes(t *testing.T) {
	t.Parallel()
	inputs := map[int]int{1: 200, 2: 400, 3: 900, 4: 300, 5: 500, 6: 880, 7: 300}
	var src strings.Builder
	src.WriteString("contextWindow: 1000\nrules:\n")
	src.WriteString("  - when: {compaction: true}\n    reply: {text: \"Summary: the files read so far.\", usage: {input: 500, output: 20}}\n")
	for turn := 1; turn <= 7; turn++ {
		fmt.Fprintf(&src, "  - when: {turn: %d}\n    reply: {calls: [{tool: read, args: {path: f%d}}], usage: {input: %d, output: 10}}\n", turn, turn, inputs[turn])
	}
	src.WriteString("  - when: {turn: 8}\n    reply: {text: \"All 7 files read.\", usage: {input: 400, output: 10}}\n")
	prov := &requestLog{Provider: parseScript(t, src.String())}
	var s sink
	var got compactions
	opts := s.options(prov, &blobTool{name: "read", size: 600})
	opts.OnCompaction = got.on

	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.FinalText != "All 7 files read." || res.Turns != 8 || res.Compactions != 2 {
		t.Fatalf("final %q after %d turns and %d compactions; want the answer after 8 turns and 2 compactions", res.FinalText, res.Turns, res.Compactions)
	}
	// Usage counts every call: 8 turns and 2 summaries.
	wantIn := int64(500 * 2)
	for _, in := range inputs {
		wantIn += int64(in)
	}
	if res.Usage.Input != wantIn+400 || res.Usage.Output != 8*10+2*20 {
		t.Errorf("usage %+v; want %d in and %d out, the summaries included", res.Usage, wantIn+400, 8*10+2*20)
	}
	if len(got.list) != 2 {
		t.Fatalf("OnCompaction saw %d compactions, want 2", len(got.list))
	}
	for i, c := range got.list {
		wantTurn := []int{4, 7}[i]
		if c.Turn != wantTurn || c.Trigger != loop.TriggerThreshold || c.Kept != 2 || c.Window != 1000 ||
			c.TokensBefore <= 850 || c.TokensAfter >= 850 || c.Summary != "Summary: the files read so far." || c.Usage.Input != 500 {
			t.Errorf("compaction %d = %+v; want one before turn %d that keeps the last turn", i+1, c, wantTurn)
		}
	}
	if ev := s.eventsOf(loop.EventCompaction); len(ev) != 2 || ev[0].Compaction.Turn != 4 {
		t.Errorf("compaction events = %d, want 2", len(ev))
	}

	// The messages handed to OnMessage are every original message: the
	// summaries are not among them.
	for _, m := range s.messages() {
		if strings.HasPrefix(m.Text(), "[ink]") {
			t.Errorf("OnMessage got %q; a summary is recorded by OnCompaction only", m.Text())
		}
	}
	if len(s.messages()) != 8+7 {
		t.Errorf("OnMessage got %d messages, want 15 (8 replies, 7 results)", len(s.messages()))
	}

	prov.mu.Lock()
	reqs := append([]model.Request(nil), prov.reqs...)
	prov.mu.Unlock()
	if len(reqs) != 10 {
		t.Fatalf("the model got %d requests, want 10 (8 turns, 2 summaries)", len(reqs))
	}
	var summaries, afterSummary int
	for i, req := range reqs {
		checkPaired(t, i, req.Messages)
		if req.Compaction {
			summaries++
			last := req.Messages[len(req.Messages)-1]
			if !req.TextOnly || last.Text() != model.CompactionInstruction || len(req.Tools) != 1 {
				t.Errorf("summary request %d: textOnly %v, tools %d, last message %q", i, req.TextOnly, len(req.Tools), last.Text())
			}
			if summaries == 2 && req.Messages[0].Text() != model.SummaryMessage("Summary: the files read so far.").Text() {
				t.Errorf("the second summary request does not start from the first summary: %q", req.Messages[0].Text())
			}
			continue
		}
		if req.TextOnly {
			t.Errorf("turn %d was sent text-only", req.Turn)
		}
		if req.Turn == 4 || req.Turn == 7 {
			afterSummary++
			if len(req.Messages) != 3 || req.Messages[0].Text() != model.SummaryMessage("Summary: the files read so far.").Text() ||
				req.Messages[1].Role != model.RoleAssistant || req.Messages[2].Role != model.RoleToolResult {
				t.Errorf("turn %d after a compaction got %d messages starting %q; want the summary and the last turn", req.Turn, len(req.Messages), req.Messages[0].Text())
			}
		}
	}
	if summaries != 2 || afterSummary != 2 {
		t.Errorf("%d summary requests, %d turns after one; want 2 and 2", summaries, afterSummary)
	}
}

// TestOverflowCompactsAndRetries makes the model refuse turn 2 as too
// long: the loop compacts and sends turn 2 again, with or without a
// retained tail depending on what it knows of the window.
func TestOverflowCompactsAndRetries(t *testing.T) {
	t.Parallel()
	src := `
rules:
  - when: {compaction: true}
    reply: {text: "Summary: read f1, it is big."}
  - when: {turn: 1}
    reply: {calls: [{tool: read, args: {path: f1}}]}
  - when: {turn: 2, user: "compacted"}
    reply: {text: "done after compaction"}
  - when: {turn: 2}
    reply: {error: "prompt is too long: 210000 tokens > 200000 maximum"}
`
	for _, tc := range []struct {
		name   string
		window int64
		kept   int
	}{
		{"known window keeps the last turn", 100_000, 2},
		{"unknown window keeps only the summary", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prov := &requestLog{Provider: parseScript(t, src)}
			var s sink
			var got compactions
			opts := s.options(prov, &blobTool{name: "read", size: 3000})
			opts.OnCompaction, opts.ContextWindow = got.on, tc.window
			res, err := loop.Run(context.Background(), opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.FinalText != "done after compaction" || res.Turns != 2 || res.Usage.Incomplete {
				t.Errorf("final %q, %d turns, usage %+v; want the retried turn's answer, 2 turns, complete usage", res.FinalText, res.Turns, res.Usage)
			}
			if len(got.list) != 1 || got.list[0].Trigger != loop.TriggerOverflow || got.list[0].Kept != tc.kept || got.list[0].Turn != 2 {
				t.Fatalf("compactions = %+v; want one overflow compaction keeping %d messages", got.list, tc.kept)
			}
			last := prov.reqs[len(prov.reqs)-1]
			if len(last.Messages) != 1+tc.kept || !strings.Contains(last.Messages[0].Text(), "Summary: read f1") {
				t.Errorf("the retried turn got %d messages starting %q", len(last.Messages), last.Messages[0].Text())
			}
		})
	}
}

func TestCompactionFailures(t *testing.T) {
	t.Parallel()
	overflowAt2 := `
  - when: {turn: 1}
    reply: {calls: [{tool: read, args: {path: f1}}]}
  - when: {turn: 2}
    reply: {error: "prompt is too long"}
`
	cases := []struct {
		name   string
		src    string
		window int64
		system string
		fail   error // from OnCompaction
		want   []string
	}{
		{"summary request fails", "rules:\n  - when: {compaction: true}\n    reply: {error: overloaded}\n" + overflowAt2, 0, "", nil,
			[]string{"context compaction failed", "the summary request failed: overloaded"}},
		{"empty summary", "rules:\n  - when: {compaction: true}\n    reply: {text: \"\"}\n" + overflowAt2, 0, "", nil,
			[]string{"context compaction failed", "no text"}},
		{"summary request too long as well", "rules:\n  - when: {compaction: true}\n    reply: {error: \"prompt is too long\"}\n" + overflowAt2, 0, "", nil,
			[]string{"context compaction failed", "refused even the summary request"}},
		{"no rule for the summary", "rules:\n" + overflowAt2, 0, "", nil,
			[]string{"context compaction failed", "compaction: true"}},
		{"still too long after it", "rules:\n  - when: {compaction: true}\n    reply: {text: \"s\"}\n" + overflowAt2, 0, "", nil,
			[]string{"still does not fit the model's context window after a compaction", "prompt is too long"}},
		{"the record fails", "rules:\n  - when: {compaction: true}\n    reply: {text: \"s\"}\n" + overflowAt2, 0, "", errors.New("disk full"),
			[]string{"save compaction: disk full"}},
		{"the prompt alone is too long", "rules:\n  - reply: {text: never}\n", 100, strings.Repeat("s", 600), nil,
			[]string{"context compaction failed (the history is about", "for a 100-token window", "nothing before the most recent message"}},
		{"system prompt and tools too large", `rules:
  - when: {compaction: true}
    reply: {text: "short summary"}
  - when: {turn: 1}
    reply: {calls: [{tool: read, args: {path: f1}}], usage: {input: 1700, output: 10}}
  - reply: {text: never}
`, 2000, strings.Repeat("s", 4800), nil, []string{"context compaction failed", "would still take about", "system prompt, tools and most recent messages alone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s sink
			var got compactions
			got.fail = tc.fail
			opts := s.options(parseScript(t, tc.src), &blobTool{name: "read", size: 30})
			opts.OnCompaction, opts.ContextWindow = got.on, tc.window
			if tc.system != "" {
				opts.Request.System = tc.system
			}
			res, err := loop.Run(context.Background(), opts)
			if err == nil {
				t.Fatalf("Run succeeded with %q; want a failed compaction", res.FinalText)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.fail == nil && len(got.list) > 1 {
				t.Errorf("%d compactions recorded; at most one without progress", len(got.list))
			}
		})
	}
}

// fixedIDs is a provider whose every tool call has the id "call_0", as
// some OpenAI-compatible servers do.
type fixedIDs struct{ turns int }

func (f *fixedIDs) Stream(_ context.Context, req model.Request, _ func(model.Delta)) (model.Message, error) {
	if req.Turn > f.turns {
		return model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "done"}}}, nil
	}
	return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "read", Args: json.RawMessage(`{}`)}}}, nil
}

// TestReservedCallIDs: after a resume from a compacted transcript, the ids
// of the summarised calls are not in the history, yet a new call must not
// reuse them.
func TestReservedCallIDs(t *testing.T) {
	t.Parallel()
	var s sink
	opts := s.options(&fixedIDs{turns: 2}, &blobTool{name: "read", size: 10})
	opts.ReservedCallIDs = []string{"call_0"}
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{"call_0": true}
	for _, m := range res.Messages {
		for _, c := range m.ToolCalls {
			if seen[c.ID] {
				t.Errorf("call id %s used twice", c.ID)
			}
			seen[c.ID] = true
		}
	}
}
