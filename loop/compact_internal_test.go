package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

func asst(ids ...string) model.Message {
	m := model.Message{Role: model.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: id, Name: "read"})
	}
	return m
}

func result(id string, size int) model.Message {
	return model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: strings.Repeat("r", size)}}}
}

func TestTailStart(t *testing.T) {
	t.Parallel()
	big := 3000 // about 1000 tokens
	cases := []struct {
		name   string
		conv   []model.Message
		budget int64
		want   int
	}{
		{"nothing to summarise", []model.Message{model.UserText("p")}, 1000, 0},
		{"empty", nil, 1000, 0},
		{"the last turn fits",
			[]model.Message{model.UserText("p"), asst("a"), result("a", big), asst("b"), result("b", 30)}, 100, 3},
		{"two turns fit",
			[]model.Message{model.UserText("p"), asst("a"), result("a", big), asst("b"), result("b", 30), asst("c"), result("c", 30)}, 100, 3},
		{"nothing fits: summary only",
			[]model.Message{model.UserText("p"), asst("a"), result("a", big)}, 100, 3},
		{"never at a result, never splitting a call from its result",
			// Calls b and c in one message, their results after it. The
			// results alone would fit the budget, the message with the
			// calls does not; a tail cannot start at a result, so only the
			// summary remains.
			[]model.Message{model.UserText("p"), asst("a"), result("a", big), asst("b", "c"), result("b", 30), result("c", 30)}, 32, 6},
		{"a user message may start it",
			[]model.Message{model.UserText("p"), asst("a"), result("a", big), model.UserText("now this")}, 100, 3},
		{"never the summary at index 0",
			[]model.Message{model.SummaryMessage("s"), asst("a"), result("a", 3)}, 1 << 30, 1},
		{"a result answering a call before the tail bars that start",
			// An out-of-order history (a repaired tail): the result of a
			// sits after the user message, so the tail cannot start there.
			[]model.Message{model.UserText("p"), asst("a"), model.UserText("later"), result("a", 3)}, 1 << 30, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tailStart(tc.conv, tc.budget); got != tc.want {
				t.Errorf("tailStart = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestClipForSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 500) // 1000 bytes, two to a character
	bigArgs := json.RawMessage(`{"content":"` + strings.Repeat("x", 1000) + `"}`)
	msgs := []model.Message{
		model.UserText(long),
		{Role: model.RoleAssistant, Content: []model.Block{{Type: "thinking", Text: long, Signature: "sig"}, {Type: "text", Text: "short"}},
			ToolCalls: []model.ToolCall{{ID: "a", Name: "write", Args: bigArgs}, {ID: "b", Name: "ls", Args: json.RawMessage(`{}`)}}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "a", Content: long}, {ToolCallID: "b", Content: "short"}}},
	}
	out := clipForSummary(msgs, 101)
	for _, c := range []struct {
		got, what string
	}{{out[0].Text(), "text"}, {out[1].Content[0].Text, "thinking"}, {out[2].Results[0].Content, "result"}} {
		if len(c.got) >= len(long) || !strings.Contains(c.got, "bytes of this "+c.what+" left out of the summary request") || !strings.HasPrefix(c.got, "éé") || !strings.HasSuffix(c.got, "éé") {
			t.Errorf("clipped %s = %q", c.what, c.got)
		}
		if !json.Valid([]byte(`"`+strings.ReplaceAll(c.got, "\n", `\n`)+`"`)) || strings.ContainsRune(c.got, '\uFFFD') {
			t.Errorf("the clipped %s is not valid UTF-8", c.what)
		}
	}
	if out[1].Content[0].Signature != "" {
		t.Error("a clipped thinking block kept its signature")
	}
	if args := string(out[1].ToolCalls[0].Args); !json.Valid(out[1].ToolCalls[0].Args) || !strings.Contains(args, "bytes of arguments left out") {
		t.Errorf("clipped arguments = %s", args)
	}
	if out[1].Content[1].Text != "short" || out[2].Results[1].Content != "short" || string(out[1].ToolCalls[1].Args) != `{}` {
		t.Error("a short piece was clipped")
	}
	if msgs[0].Text() != long || msgs[1].Content[0].Text != long || msgs[2].Results[0].Content != long || string(msgs[1].ToolCalls[0].Args) != string(bigArgs) {
		t.Error("the input was changed")
	}
}

func TestCanonicalArgs(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"path":"a","limit":5}`:                `{"limit":5,"path":"a"}`,
		` { "limit": 5, "path": "a" } `:         `{"limit":5,"path":"a"}`,
		`{"n":1.50,"big":12345678901234567890}`: `{"big":12345678901234567890,"n":1.50}`,
		`{"html":"<b>&</b>"}`:                   `{"html":"<b>&</b>"}`,
		``:                                      `{}`,
		`not json`:                              `not json`,
	}
	for in, want := range cases {
		if got := canonicalArgs(json.RawMessage(in)); got != want {
			t.Errorf("canonicalArgs(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFailedEditsWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h := newHealthWatch(HealthOptions{Now: func() time.Time { return now }})
	edit := model.ToolCall{Name: "edit", Args: json.RawMessage(`{"path":"a.go","oldText":"x","newText":"y"}`)}
	fail := model.ToolResult{IsError: true, Content: "edit: oldText not found"}
	step := func(d time.Duration, call model.ToolCall, res model.ToolResult) []string {
		now = now.Add(d)
		return h.result(call, res)
	}
	if step(0, edit, fail) != nil || step(3*time.Minute, edit, fail) != nil {
		t.Fatal("reported before the third failure")
	}
	// The first failure is more than five minutes old by now.
	if got := step(3*time.Minute, edit, fail); got != nil {
		t.Fatalf("reported %q with only two failures in the window", got)
	}
	// Successes, other tools and failures of other tools do not count.
	step(0, edit, model.ToolResult{Content: "ok"})
	step(0, model.ToolCall{Name: "bash"}, fail)
	got := step(time.Minute, model.ToolCall{Name: "write", Args: json.RawMessage(`{"path":"b.go","content":"..."}`)}, fail)
	if len(got) != 1 || !strings.Contains(got[0], `the last: write {"path":"b.go"}: edit: oldText not found`) {
		t.Fatalf("report = %q", got)
	}
	// The count starts again after a report.
	if step(0, edit, fail) != nil {
		t.Error("reported again right after a report")
	}
	if (&healthWatch{off: true}).result(edit, fail) != nil {
		t.Error("a watch that is off reported")
	}
}
