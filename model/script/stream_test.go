package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
)

func parse(t *testing.T, src string) *script.Script {
	t.Helper()
	s, err := script.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func assistant(calls ...string) model.Message {
	m := model.Message{Role: model.RoleAssistant}
	for i, c := range calls {
		m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: fmt.Sprint("c", i), Name: c})
	}
	return m
}

func toolResult(tool, content string) model.Message {
	return model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c", ToolName: tool, Content: content}}}
}

// TestConditions checks each `when` condition on its own: a rule with the
// condition comes first, a fallback rule second.
func TestConditions(t *testing.T) {
	t.Parallel()
	history := []model.Message{
		model.UserText("please fix the login page"),
		assistant("grep"),
		toolResult("grep", "src/auth/login.go:12: func Login"),
		model.UserText("now look at logout"),
		assistant("grep", "read"),
		toolResult("grep", "src/auth/logout.go:3: func Logout"),
		toolResult("read", "package auth"),
	}
	base := model.Request{Agent: "scout", Depth: 1, Turn: 3, Messages: history}
	tests := []struct {
		name  string
		when  string
		req   func(r *model.Request)
		match bool
	}{
		{"no conditions", `{}`, nil, true},
		{"agent equal", `{agent: scout}`, nil, true},
		{"agent differs", `{agent: scou}`, nil, false},
		{"agent empty means no profile", `{agent: ""}`, func(r *model.Request) { r.Agent = "" }, true},
		{"agent empty refuses a profile", `{agent: ""}`, nil, false},
		{"absent agent matches no profile", `{depth: 1}`, func(r *model.Request) { r.Agent = "" }, true},
		{"depth equal", `{depth: 1}`, nil, true},
		{"depth differs", `{depth: 0}`, nil, false},
		{"turn equal", `{turn: 3}`, nil, true},
		{"turn differs", `{turn: 1}`, nil, false},
		{"user on newest user message", `{user: "logout$"}`, nil, true},
		{"user ignores older user messages", `{user: "login"}`, nil, false},
		{"user without any user message", `{user: ""}`, func(r *model.Request) { r.Messages = []model.Message{assistant()} }, false},
		{"tool in trailing results", `{tool: read}`, nil, true},
		{"tool in first of trailing results", `{tool: grep}`, nil, true},
		{"tool not among results", `{tool: ls}`, nil, false},
		{"tool only before last assistant", `{tool: grep}`, func(r *model.Request) { r.Messages = history[:5] }, false},
		{"result on any trailing result", `{result: "^package"}`, nil, true},
		{"results before a newer user message do not count", `{tool: read, result: "^package"}`, func(r *model.Request) {
			r.Messages = append(append([]model.Message(nil), history...), model.UserText("go on"))
		}, false},
		{"a newer user message hides every older result", `{tool: read}`, func(r *model.Request) {
			r.Messages = append(append([]model.Message(nil), history...), model.UserText("go on"))
		}, false},
		{"result ignores older results", `{result: "login.go"}`, nil, false},
		{"tool and result on the same result", `{tool: grep, result: "logout.go"}`, nil, true},
		{"result of another tool does not count", `{tool: read, result: "logout.go"}`, nil, false},
		{"all together", `{agent: scout, depth: 1, turn: 3, user: logout, tool: read, result: auth}`, nil, true},
		{"all but one", `{agent: scout, depth: 1, turn: 4, user: logout, tool: read, result: auth}`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := parse(t, fmt.Sprintf("rules:\n  - when: %s\n    reply: {text: matched}\n  - reply: {text: fallback}\n", tc.when))
			req := base
			if tc.req != nil {
				tc.req(&req)
			}
			msg, err := s.Stream(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := msg.Text() == "matched", tc.match; got != want {
				t.Errorf("when %s: matched = %v, want %v", tc.when, got, want)
			}
		})
	}
}

func TestFirstMatchingRuleWins(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 2}
    reply: {text: second turn}
  - when: {depth: 0}
    reply: {text: main agent}
  - reply: {text: anyone}
`)
	for _, tc := range []struct {
		turn, depth int
		want        string
	}{{2, 0, "second turn"}, {1, 0, "main agent"}, {1, 1, "anyone"}, {2, 1, "second turn"}} {
		msg, err := s.Stream(context.Background(), model.Request{Turn: tc.turn, Depth: tc.depth}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Text() != tc.want {
			t.Errorf("turn %d depth %d: got %q, want %q", tc.turn, tc.depth, msg.Text(), tc.want)
		}
	}
}

func TestReplyText(t *testing.T) {
	t.Parallel()
	s := parse(t, "rules:\n  - reply:\n      text: |\n        line one\n        line two\n")
	var deltas []model.Delta
	msg, err := s.Stream(context.Background(), model.Request{Turn: 1}, func(d model.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if msg.Role != model.RoleAssistant || msg.Model != "script" || msg.StopReason != "stop" || len(msg.ToolCalls) != 0 {
		t.Errorf("message = %+v; want an assistant message of model script with stop reason stop", msg)
	}
	if msg.Text() != "line one\nline two\n" {
		t.Errorf("text = %q", msg.Text())
	}
	if len(deltas) != 1 || deltas[0].Type != "text" || deltas[0].Text != msg.Text() {
		t.Errorf("deltas = %+v; want one text delta with the whole text", deltas)
	}
	if msg.Usage == nil {
		t.Error("usage not set")
	}
}

func TestReplyCalls(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - reply:
      text: looking
      calls:
        - {tool: grep, args: {pattern: "func Login", path: src, glob: "*.go"}}
        - tool: task
          args:
            prompt: find the tests
            timeoutMs: 60000
            worktree: true
            tags: [a, 1, 2.5, null]
            nested: {k: v}
        - tool: ls
`)
	var deltas []model.Delta
	msg, err := s.Stream(context.Background(), model.Request{Turn: 4}, func(d model.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "toolUse" || len(msg.ToolCalls) != 3 {
		t.Fatalf("message = %+v; want 3 calls with stop reason toolUse", msg)
	}
	wantArgs := []map[string]any{
		{"pattern": "func Login", "path": "src", "glob": "*.go"},
		{"prompt": "find the tests", "timeoutMs": float64(60000), "worktree": true, "tags": []any{"a", float64(1), 2.5, nil}, "nested": map[string]any{"k": "v"}},
		{},
	}
	idPattern := regexp.MustCompile(`^call_4_[123]_[0-9a-f]{8}$`)
	ids := map[string]bool{}
	for i, c := range msg.ToolCalls {
		if want := []string{"grep", "task", "ls"}[i]; c.Name != want {
			t.Errorf("call %d tool = %q, want %q", i, c.Name, want)
		}
		var got map[string]any
		if err := json.Unmarshal(c.Args, &got); err != nil {
			t.Fatalf("call %d args %s: %v", i, c.Args, err)
		}
		if !reflect.DeepEqual(got, wantArgs[i]) {
			t.Errorf("call %d args = %v, want %v", i, got, wantArgs[i])
		}
		if !idPattern.MatchString(c.ID) || !strings.HasPrefix(c.ID, fmt.Sprintf("call_4_%d_", i+1)) {
			t.Errorf("call %d id %q does not look like call_<turn>_<n>_<random>", i, c.ID)
		}
		ids[c.ID] = true
	}
	if len(deltas) != 4 || deltas[0].Type != "text" {
		t.Fatalf("deltas = %+v; want text then 3 calls", deltas)
	}
	for i, d := range deltas[1:] {
		if d.Type != "toolCall" || d.ToolCall == nil || d.ToolCall.ID != msg.ToolCalls[i].ID {
			t.Errorf("delta %d = %+v; want call %s", i+1, d, msg.ToolCalls[i].ID)
		}
	}
	// The same rule on the same turn again (a second attempt) gets new ids.
	again, err := s.Stream(context.Background(), model.Request{Turn: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range again.ToolCalls {
		if ids[c.ID] {
			t.Errorf("call id %s repeated across requests", c.ID)
		}
	}
}

func TestReplyUsage(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 1}
    reply:
      text: hi there
      usage: {input: 1200, output: 80, cacheRead: 300, cacheWrite: 40}
  - when: {turn: 2}
    reply:
      text: partial
      usage: {output: 7}
  - reply:
      text: hi there
`)
	req := model.Request{System: "abcd", Messages: []model.Message{model.UserText("hello world!")}}
	for _, tc := range []struct {
		turn int
		want model.Usage
	}{
		{1, model.Usage{Input: 1200, Output: 80, CacheRead: 300, CacheWrite: 40}},
		{2, model.Usage{Output: 7}},
		// estimate: ceil(bytes/4): input "abcd"+"hello world!" = 16 -> 4; output "hi there" = 8 -> 2
		{3, model.Usage{Input: 4, Output: 2}},
	} {
		req.Turn = tc.turn
		msg, err := s.Stream(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Usage == nil || *msg.Usage != tc.want {
			t.Errorf("turn %d usage = %+v, want %+v", tc.turn, msg.Usage, tc.want)
		}
	}
}

func TestReplyError(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 1}
    reply: {error: overloaded}
  - reply: {text: "half an answer", error: "connection reset by peer", usage: {input: 10, output: 3}}
`)
	msg, err := s.Stream(context.Background(), model.Request{Turn: 1}, nil)
	if err == nil || err.Error() != "overloaded" {
		t.Fatalf("err = %v, want overloaded", err)
	}
	if msg.Text() != "" || len(msg.ToolCalls) != 0 {
		t.Errorf("message = %+v; want nothing", msg)
	}
	var deltas []model.Delta
	msg, err = s.Stream(context.Background(), model.Request{Turn: 2}, func(d model.Delta) { deltas = append(deltas, d) })
	if err == nil || err.Error() != "connection reset by peer" {
		t.Fatalf("err = %v", err)
	}
	if msg.Text() != "half an answer" || len(deltas) != 1 {
		t.Errorf("partial text = %q, deltas %+v; want the text streamed and returned", msg.Text(), deltas)
	}
	if msg.Usage == nil || !msg.Usage.Incomplete || msg.Usage.Input != 10 {
		t.Errorf("usage = %+v; want the given usage marked incomplete", msg.Usage)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 1}
    reply: {text: slow, delay: 80ms}
  - reply: {text: stuck, delay: 1h}
`)
	start := time.Now()
	msg, err := s.Stream(context.Background(), model.Request{Turn: 1}, nil)
	if err != nil || msg.Text() != "slow" {
		t.Fatalf("Stream = %q, %v", msg.Text(), err)
	}
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Errorf("reply came after %v, before its 80ms delay", el)
	}

	t.Run("cancelled during delay", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		var deltas int
		_, err := s.Stream(ctx, model.Request{Turn: 2}, func(model.Delta) { deltas++ })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("Stream returned %v after the cancel; want promptly", el)
		}
		if deltas != 0 {
			t.Errorf("%d deltas streamed after cancellation", deltas)
		}
	})
	t.Run("deadline during delay", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := s.Stream(ctx, model.Request{Turn: 2}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Stream(ctx, model.Request{Turn: 1}, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestNoRuleMatches(t *testing.T) {
	t.Parallel()
	s := parse(t, "rules:\n  - when: {agent: scout}\n    reply: {text: hi}\n")
	long := strings.Repeat("é", 150) // 300 bytes
	req := model.Request{Agent: "reviewer", Depth: 1, Turn: 2, Messages: []model.Message{
		model.UserText("review\n  the diff " + long), assistant("grep"), toolResult("grep", "x"),
	}}
	_, err := s.Stream(context.Background(), req, nil)
	if err == nil {
		t.Fatal("no error for a request no rule matches")
	}
	msg := err.Error()
	for _, want := range []string{"test.yaml", "no rule matches", `agent "reviewer"`, "depth 1", "turn 2", `"review the diff éé`, "…", "results of grep", "add a rule"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Count(msg, "é") > 100 {
		t.Errorf("user text not truncated to about 200 bytes:\n%s", msg)
	}
	if !strings.Contains(msg, "é…") {
		t.Errorf("truncation split a UTF-8 character:\n%s", msg)
	}
}

func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {user: "^a"}
    reply: {text: A, calls: [{tool: read, args: {path: a}}], delay: 1ms}
  - reply: {text: B}
`)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user, want := "b", "B"
			if i%2 == 0 {
				user, want = "a", "A"
			}
			msg, err := s.Stream(context.Background(), model.Request{Turn: i + 1, Messages: []model.Message{model.UserText(user)}}, nil)
			if err != nil || msg.Text() != want {
				errs <- fmt.Errorf("request %d: %q, %v; want %q", i, msg.Text(), err, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestInvestigateScript walks the example script of testdata through the
// conversation it was written for.
func TestInvestigateScript(t *testing.T) {
	t.Parallel()
	s, err := script.Load("testdata/investigate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != "testdata/investigate.yaml" {
		t.Errorf("Path() = %q", s.Path())
	}
	main, err := s.Stream(context.Background(), model.Request{Turn: 1, Messages: []model.Message{model.UserText("how does login work?")}}, nil)
	if err != nil || len(main.ToolCalls) != 1 || main.ToolCalls[0].Name != "task" {
		t.Fatalf("main agent: %+v, %v; want a task call", main, err)
	}
	conv := []model.Message{model.UserText("find where Login is handled")}
	req := model.Request{Agent: "scout", Depth: 1}
	for turn, step := range []struct{ call, result string }{{"grep", "src/auth/login.go:3:func Login("}, {"read", "package auth"}} {
		req.Turn, req.Messages = turn+1, conv
		msg, err := s.Stream(context.Background(), req, nil)
		if err != nil || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Name != step.call {
			t.Fatalf("turn %d: %+v, %v; want a %s call", turn+1, msg, err, step.call)
		}
		conv = append(conv, msg, model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: msg.ToolCalls[0].ID, ToolName: step.call, Content: step.result}}})
	}
	req.Turn, req.Messages = 3, conv
	msg, err := s.Stream(context.Background(), req, nil)
	if err != nil || msg.Text() != "Entry point is src/auth/login.go" {
		t.Fatalf("turn 3: %q, %v", msg.Text(), err)
	}
}
