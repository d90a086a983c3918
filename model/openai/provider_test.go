package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/connect"
	"github.com/inkdev/ink/model/openai"
)

func newProvider(f *fakeAPI) *openai.Provider {
	return openai.New(openai.Config{Name: "openai", APIKey: "sk-test", KeyVar: "OPENAI_API_KEY", BaseURL: f.URL + "/v1", Model: "gpt-5.4"})
}

// openProvider opens a binding the way ink does, retry policy included.
func openProvider(t *testing.T, f *fakeAPI, provider, modelID string, env map[string]string) model.Provider {
	t.Helper()
	p, err := connect.Open(model.Binding{Provider: provider, Model: modelID, BaseURL: f.URL + "/v1"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var openaiEnv = map[string]string{"OPENAI_API_KEY": "sk-test"}

func userAsks(text string) model.Request {
	return model.Request{System: "You are ink.", Messages: []model.Message{model.UserText(text)}}
}

func TestTextAnswer(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	var rec recorder
	req := userAsks("where is the entry point?")
	req.MaxTokens = 2000
	msg, err := newProvider(f).Stream(context.Background(), req, rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() != "The entry point is src/main.go." || rec.Text("text") != msg.Text() {
		t.Errorf("text = %q, streamed %q", msg.Text(), rec.Text("text"))
	}
	if msg.Role != model.RoleAssistant || msg.StopReason != "stop" || msg.Model != "gpt-5.4" {
		t.Errorf("role/stop/model = %q/%q/%q", msg.Role, msg.StopReason, msg.Model)
	}
	req0 := f.Requests(t)[0]
	if req0["stream"] != true || req0["model"] != "gpt-5.4" {
		t.Errorf("stream/model = %v/%v", req0["stream"], req0["model"])
	}
	if so, _ := req0["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage", req0["stream_options"])
	}
	if req0["max_completion_tokens"] != float64(2000) || req0["max_tokens"] != nil {
		t.Errorf("max_completion_tokens %v, max_tokens %v", req0["max_completion_tokens"], req0["max_tokens"])
	}
	sys := req0["messages"].([]any)[0].(map[string]any)
	if sys["role"] != "system" || sys["content"] != "You are ink." {
		t.Errorf("first message = %v", sys)
	}
	if got := f.Header(0).Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("authorization = %q", got)
	}
}

func TestUsageFromFinalChunk(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	msg, err := newProvider(f).Stream(context.Background(), userAsks("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1500 prompt tokens of which 1024 cached: ink counts cached ones as
	// cache reads, as Anthropic does.
	want := model.Usage{Input: 476, Output: 12, CacheRead: 1024}
	if msg.Usage == nil || *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
}

func TestParallelToolCallsAssembledByIndex(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "tools.sse")})
	var rec recorder
	req := userAsks("look at main")
	req.Tools = []model.ToolSpec{
		{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "grep", Description: "Search", Schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
	}
	msg, err := newProvider(f).Stream(context.Background(), req, rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_A", Name: "read", Args: json.RawMessage(`{"path": "src/main.go", "limit": 40}`)},
		{ID: "call_B", Name: "grep", Args: json.RawMessage(`{"pattern": "func main", "path": "cmd"}`)},
	}
	if !reflect.DeepEqual(msg.ToolCalls, want) {
		t.Errorf("tool calls = %s\nwant %s", dump(msg.ToolCalls), dump(want))
	}
	calls := rec.OfType("toolCall")
	if len(calls) != 2 || calls[0].ToolCall.ID != "call_A" || calls[1].ToolCall.ID != "call_B" {
		t.Errorf("toolCall deltas = %s", dump(calls))
	}
	if msg.StopReason != "tool_calls" || msg.Text() != "I'll look at both." {
		t.Errorf("stop %q text %q", msg.StopReason, msg.Text())
	}
	tools := f.Requests(t)[0]["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if tools[0].(map[string]any)["type"] != "function" || fn["name"] != "read" || fn["description"] != "Read a file" ||
		!reflect.DeepEqual(fn["parameters"].(map[string]any)["required"], []any{"path"}) {
		t.Errorf("tool sent as %s", dump(tools[0]))
	}
}

func TestCallsThatReuseAnIndex(t *testing.T) {
	t.Parallel()
	// Some local servers send every call whole, each numbered 0.
	f := newFakeAPI(t, reply{Body: fixture(t, "reused_index.sse")})
	msg, err := newProvider(f).Stream(context.Background(), userAsks("look"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "call_x1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
		{ID: "call_x2", Name: "ls", Args: json.RawMessage(`{"path":"."}`)},
	}
	if !reflect.DeepEqual(msg.ToolCalls, want) {
		t.Errorf("tool calls = %s\nwant %s", dump(msg.ToolCalls), dump(want))
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	req := model.Request{Messages: []model.Message{
		model.UserText("look at main"),
		{Role: model.RoleAssistant, Content: []model.Block{{Type: "thinking", Text: "plan"}, {Type: "text", Text: "I'll look at both."}},
			ToolCalls: []model.ToolCall{
				{ID: "call_A", Name: "read", Args: json.RawMessage(`{"path":"src/main.go"}`)},
				{ID: "call_B", Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)},
			}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "call_A", ToolName: "read", Content: "package main"}}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "call_B", ToolName: "grep", Content: "regexp: missing )", IsError: true}}},
		{Role: model.RoleAssistant}, // an empty turn left by a cut stream
		model.UserText("also check the tests"),
	}}
	if _, err := newProvider(f).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got := f.Requests(t)[0]["messages"].([]any)
	want := []any{
		map[string]any{"role": "user", "content": "look at main"},
		map[string]any{"role": "assistant", "content": "I'll look at both.", "tool_calls": []any{
			map[string]any{"id": "call_A", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":"src/main.go"}`}},
			map[string]any{"id": "call_B", "type": "function", "function": map[string]any{"name": "grep", "arguments": `{"pattern":"func main"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_A", "content": "package main"},
		map[string]any{"role": "tool", "tool_call_id": "call_B", "content": "Error: regexp: missing )"},
		map[string]any{"role": "user", "content": "also check the tests"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages sent:\n%s\nwant:\n%s", dump(got), dump(want))
	}
}

func TestReasoningAndCacheOfDeepSeek(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "reasoning.sse")})
	var rec recorder
	p := openProvider(t, f, "deepseek", "deepseek-reasoner", map[string]string{"DEEPSEEK_API_KEY": "sk-ds"})
	req := userAsks("where?")
	req.MaxTokens = 1000
	msg, err := p.Stream(context.Background(), req, rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Text("thinking") != "Check main first." || msg.Text() != "It is in cmd/ink." {
		t.Errorf("thinking %q, text %q", rec.Text("thinking"), msg.Text())
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" {
		t.Errorf("content = %+v", msg.Content)
	}
	if want := (model.Usage{Input: 260, Output: 40, CacheRead: 640}); *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", *msg.Usage, want)
	}
	r := f.Requests(t)[0]
	if r["max_tokens"] != float64(1000) || r["max_completion_tokens"] != nil {
		t.Errorf("a compatible server got max_tokens %v, max_completion_tokens %v", r["max_tokens"], r["max_completion_tokens"])
	}
	if f.Header(0).Get("Authorization") != "Bearer sk-ds" {
		t.Errorf("authorization = %q", f.Header(0).Get("Authorization"))
	}
}

func TestStreamCutMidway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    reply
	}{
		{"connection dropped", reply{Body: fixture(t, "cut.sse"), Cut: true}},
		{"body ended without finish", reply{Body: fixture(t, "cut.sse")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, tc.r)
			var rec recorder
			msg, err := openProvider(t, f, "openai", "gpt-5.4", openaiEnv).Stream(context.Background(), userAsks("go"), rec.Add)
			if err == nil {
				t.Fatal("no error for a cut stream")
			}
			if !strings.Contains(err.Error(), "stream was cut") {
				t.Errorf("error %q does not say the stream was cut", err)
			}
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Kind != model.KindStreamCut {
				t.Errorf("kind = %v, want stream-cut", err)
			}
			if msg.Usage == nil || !msg.Usage.Incomplete {
				t.Errorf("usage = %+v, want incomplete", msg.Usage)
			}
			if msg.Text() != "Half of an ans" || len(msg.ToolCalls) != 0 || len(rec.OfType("toolCall")) != 0 {
				t.Errorf("partial = %q, calls %s: an unfinished call must not survive", msg.Text(), dump(msg.ToolCalls))
			}
			if n := len(f.Requests(t)); n != 1 {
				t.Errorf("%d requests: a stream that already showed text must not be retried", n)
			}
		})
	}
}

func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t,
		reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"error":{"message":"Rate limit reached for gpt-5.4 on tokens per min (TPM)","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
		reply{Body: fixture(t, "text.sse")},
	)
	var rec recorder
	start := time.Now()
	msg, err := openProvider(t, f, "openai", "gpt-5.4", openaiEnv).Stream(context.Background(), userAsks("hi"), rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %v; Retry-After asked for 1s", waited)
	}
	if msg.Text() != "The entry point is src/main.go." {
		t.Errorf("text after retry = %q", msg.Text())
	}
	retries := rec.OfType("retry")
	if len(retries) != 1 || retries[0].Text != "openai: 429 rate limited; retrying in 1s (attempt 2/5)" {
		t.Errorf("retry deltas = %s", dump(retries))
	}
}

func TestErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, provider string
		env            map[string]string
		r              reply
		kind           model.ErrorKind
		want           string
	}{
		{"401 names the variable", "openai", openaiEnv,
			reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			model.KindAuth, "openai: the API key was rejected (401): set OPENAI_API_KEY to a valid key (Incorrect API key provided: sk-test.)"},
		{"openrouter 401 names its variable", "openrouter", map[string]string{"OPENROUTER_API_KEY": "k"},
			reply{Status: 401, Body: `{"error":{"message":"No auth credentials found","code":401}}`},
			model.KindAuth, "openrouter: the API key was rejected (401): set OPENROUTER_API_KEY to a valid key (No auth credentials found)"},
		{"context length", "openai", openaiEnv,
			reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
			model.KindContextLength, "openai: the conversation is longer than the model's context window (400): This model's maximum context length is 128000 tokens."},
		{"ollama error body", "ollama", nil,
			reply{Status: 404, Body: `{"error":"model \"llama9\" not found, try pulling it first"}`},
			model.KindOther, `ollama: not found (404): model "llama9" not found, try pulling it first; check the model name "llama9" and the base URL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, tc.r)
			modelID := "gpt-5.4"
			if tc.provider == "ollama" {
				modelID = "llama9"
			}
			_, err := openProvider(t, f, tc.provider, modelID, tc.env).Stream(context.Background(), userAsks("hi"), nil)
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Kind != tc.kind {
				t.Fatalf("error = %v (%T), want kind %v", err, err, tc.kind)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %q\nwant    %q", err, tc.want)
			}
			if n := len(f.Requests(t)); n != 1 {
				t.Errorf("%d requests; this error must not be retried", n)
			}
		})
	}
}

// TestHostKeyNotSentToOtherServers checks that an OPENAI_API_KEY in the
// process environment never reaches an Ollama server.
func TestHostKeyNotSentToOtherServers(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	p := openProvider(t, f, "ollama", "llama3.2", map[string]string{})
	if _, err := p.Stream(context.Background(), userAsks("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.Header(0).Get("Authorization"); got != "" {
		t.Errorf("ollama got authorization %q", got)
	}
}

func TestCancelReturnsPromptly(t *testing.T) {
	t.Parallel()
	partial := strings.Join(strings.SplitAfter(fixture(t, "cut.sse"), "\n\n")[:2], "")
	f := newFakeAPI(t, reply{Body: partial, Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan model.Delta, 10)
	done := make(chan error, 1)
	var msg model.Message
	go func() {
		var err error
		msg, err = openProvider(t, f, "openai", "gpt-5.4", openaiEnv).Stream(ctx, userAsks("hi"), func(d model.Delta) { got <- d })
		done <- err
	}()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no delta arrived")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		if msg.Text() != "Half of an ans" || msg.Usage == nil || !msg.Usage.Incomplete {
			t.Errorf("partial message = %+v", msg)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Stream did not return within 2s of cancel")
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestConnectionLostAfterFinishKeepsTheReply(t *testing.T) {
	t.Parallel()
	body := fixture(t, "tools.sse")
	body = body[:strings.Index(body, `"choices":[]`)]
	body = body[:strings.LastIndex(body, "data: ")]
	f := newFakeAPI(t, reply{Body: body, Cut: true})
	msg, err := newProvider(f).Stream(context.Background(), userAsks("go"), nil)
	if err != nil {
		t.Fatalf("error %v after the turn had finished", err)
	}
	if len(msg.ToolCalls) != 2 || msg.Usage == nil || !msg.Usage.Incomplete {
		t.Errorf("calls %s, usage %+v: want both calls and usage marked incomplete", dump(msg.ToolCalls), msg.Usage)
	}
}
