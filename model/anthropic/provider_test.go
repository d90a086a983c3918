package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/anthropic"
	"github.com/inkdev/ink/model/connect"
)

const testModel = "claude-sonnet-4-5-20250929"

func newProvider(f *fakeAPI) *anthropic.Provider {
	return anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: f.URL, Model: testModel})
}

// openProvider opens the provider the way ink does, retry policy included.
func openProvider(t *testing.T, f *fakeAPI) model.Provider {
	t.Helper()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"}
	p, err := connect.Open(model.Binding{Provider: "anthropic", Model: testModel, BaseURL: f.URL}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userAsks(text string) model.Request {
	return model.Request{System: "You are ink.", Messages: []model.Message{model.UserText(text)}}
}

func TestTextAnswerWithThinking(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	var rec recorder
	msg, err := newProvider(f).Stream(context.Background(), userAsks("where is the entry point?"), rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Text(); got != "The entry point is src/main.go." {
		t.Errorf("text = %q", got)
	}
	if got := rec.Text("text"); got != msg.Text() {
		t.Errorf("streamed text %q, message text %q", got, msg.Text())
	}
	if got := rec.Text("thinking"); got != "The user wants the entry point." {
		t.Errorf("streamed thinking = %q", got)
	}
	want := model.Block{Type: "thinking", Text: "The user wants the entry point.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxjh+2g=="}
	if len(msg.Content) != 2 || msg.Content[0] != want {
		t.Errorf("content = %+v, want the signed thinking block first", msg.Content)
	}
	if msg.Role != model.RoleAssistant || msg.StopReason != "end_turn" || msg.Model != testModel {
		t.Errorf("role/stop/model = %q/%q/%q", msg.Role, msg.StopReason, msg.Model)
	}

	req := f.Requests(t)[0]
	if req["stream"] != true || req["model"] != testModel {
		t.Errorf("request stream/model = %v/%v", req["stream"], req["model"])
	}
	sys := req["system"].([]any)[0].(map[string]any)
	if sys["text"] != "You are ink." || sys["cache_control"] == nil {
		t.Errorf("system = %v, want the prompt with a cache breakpoint", sys)
	}
	if req["max_tokens"] != float64(16384) {
		t.Errorf("max_tokens = %v, want the model default 16384", req["max_tokens"])
	}
	if _, ok := req["thinking"]; ok {
		t.Errorf("thinking = %v, want it absent (off by default)", req["thinking"])
	}
	if h := f.Header(0); h.Get("X-Api-Key") != "sk-ant-test" && h.Get("Authorization") != "Bearer sk-ant-test" {
		t.Errorf("the key was not sent: x-api-key %q, authorization %q", h.Get("X-Api-Key"), h.Get("Authorization"))
	}
}

func TestUsageCountsCache(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	msg, err := newProvider(f).Stream(context.Background(), userAsks("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{Input: 120, Output: 42, CacheRead: 800, CacheWrite: 300}
	if msg.Usage == nil || *msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
}

func TestParallelToolCallsFromSplitJSON(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "tools.sse")})
	var rec recorder
	req := userAsks("look at main")
	req.Tools = []model.ToolSpec{
		{Name: "read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)},
		{Name: "grep", Description: "Search", Schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
	}
	msg, err := newProvider(f).Stream(context.Background(), req, rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{ID: "toolu_01A", Name: "read", Args: json.RawMessage(`{"path": "src/main.go", "limit": 40}`)},
		{ID: "toolu_01B", Name: "grep", Args: json.RawMessage(`{"pattern": "func main", "path": "cmd"}`)},
	}
	if !reflect.DeepEqual(msg.ToolCalls, want) {
		t.Errorf("tool calls = %s\nwant %s", dump(msg.ToolCalls), dump(want))
	}
	calls := rec.OfType("toolCall")
	if len(calls) != 2 || calls[0].ToolCall.ID != "toolu_01A" || calls[1].ToolCall.ID != "toolu_01B" {
		t.Errorf("toolCall deltas = %s, want both calls in order", dump(calls))
	}
	if msg.StopReason != "tool_use" || msg.Text() != "I'll look at both." {
		t.Errorf("stop %q text %q", msg.StopReason, msg.Text())
	}
	tools := f.Requests(t)[0]["tools"].([]any)
	read := tools[0].(map[string]any)
	schema := read["input_schema"].(map[string]any)
	if read["name"] != "read" || read["description"] != "Read a file" || schema["type"] != "object" ||
		schema["additionalProperties"] != false || !reflect.DeepEqual(schema["required"], []any{"path"}) {
		t.Errorf("tool sent as %s", dump(read))
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	history := []model.Message{
		model.UserText("look at main"),
		{Role: model.RoleAssistant, Content: []model.Block{
			{Type: "thinking", Text: "plan", Signature: "sig-1"},
			{Type: "thinking", Text: "unsigned, from elsewhere"},
			{Type: "text", Text: "I'll look at both."},
		}, ToolCalls: []model.ToolCall{
			{ID: "toolu_01A", Name: "read", Args: json.RawMessage(`{"path":"src/main.go"}`)},
			{ID: "toolu_01B", Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)},
		}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "toolu_01A", ToolName: "read", Content: "package main"}}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "toolu_01B", ToolName: "grep", Content: "regexp: missing )", IsError: true}}},
		model.UserText("also check the tests"),
	}
	req := model.Request{Messages: history}
	if _, err := newProvider(f).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	msgs := f.Requests(t)[0]["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("sent %d messages, want 3 (user, assistant, one user turn of results): %s", len(msgs), dump(msgs))
	}
	assistant := msgs[1].(map[string]any)
	content := assistant["content"].([]any)
	var types []string
	for _, c := range content {
		types = append(types, c.(map[string]any)["type"].(string))
	}
	if want := []string{"thinking", "text", "tool_use", "tool_use"}; !reflect.DeepEqual(types, want) {
		t.Errorf("assistant blocks = %v, want %v (unsigned thinking dropped)", types, want)
	}
	use := content[2].(map[string]any)
	if use["id"] != "toolu_01A" || use["name"] != "read" || !reflect.DeepEqual(use["input"], map[string]any{"path": "src/main.go"}) {
		t.Errorf("tool_use = %s", dump(use))
	}
	results := msgs[2].(map[string]any)
	if results["role"] != "user" {
		t.Errorf("results role = %v", results["role"])
	}
	blocks := results["content"].([]any)
	if len(blocks) != 3 {
		t.Fatalf("results turn has %d blocks, want 2 tool_result + 1 text: %s", len(blocks), dump(blocks))
	}
	first, second := blocks[0].(map[string]any), blocks[1].(map[string]any)
	if first["type"] != "tool_result" || first["tool_use_id"] != "toolu_01A" || first["is_error"] != nil {
		t.Errorf("first result = %s", dump(first))
	}
	if got := first["content"].([]any)[0].(map[string]any)["text"]; got != "package main" {
		t.Errorf("first result text = %v", got)
	}
	if second["tool_use_id"] != "toolu_01B" || second["is_error"] != true {
		t.Errorf("second result = %s", dump(second))
	}
	last := blocks[2].(map[string]any)
	if last["type"] != "text" || last["text"] != "also check the tests" || last["cache_control"] == nil {
		t.Errorf("trailing user text = %s, want it last with the cache breakpoint", dump(last))
	}
}

func TestThinkingLevels(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, model, level string
		maxTokens          int
		wantThinking       map[string]any
		wantEffort         string
		wantMax            float64
	}{
		{"off by default on a budget model", "claude-sonnet-4-5", "", 0, nil, "", 16384},
		{"high on a budget model", "claude-sonnet-4-5", "high", 0, map[string]any{"type": "enabled", "budget_tokens": float64(20000)}, "", 36384},
		{"max is clamped to the model cap", "claude-opus-4-1", "max", 0, map[string]any{"type": "enabled", "budget_tokens": float64(16000)}, "", 32000},
		{"caller max_tokens kept", "claude-sonnet-4-5", "low", 8000, map[string]any{"type": "enabled", "budget_tokens": float64(4096)}, "", 8000},
		{"adaptive model off is explicit", "claude-opus-4-6", "off", 0, map[string]any{"type": "disabled"}, "", 16384},
		{"adaptive model uses effort", "claude-opus-4-6", "medium", 0, map[string]any{"type": "adaptive"}, "medium", 32000},
		{"no thinking on claude 3.5", "claude-3-5-haiku-latest", "high", 0, nil, "", 8192},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
			req := userAsks("think")
			req.Model, req.Thinking, req.MaxTokens = tc.model, tc.level, tc.maxTokens
			if _, err := newProvider(f).Stream(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got := f.Requests(t)[0]
			th, _ := got["thinking"].(map[string]any)
			if !reflect.DeepEqual(th, tc.wantThinking) {
				t.Errorf("thinking = %v, want %v", got["thinking"], tc.wantThinking)
			}
			effort := ""
			if oc, ok := got["output_config"].(map[string]any); ok {
				effort, _ = oc["effort"].(string)
			}
			if effort != tc.wantEffort {
				t.Errorf("effort = %q, want %q", effort, tc.wantEffort)
			}
			if got["max_tokens"] != tc.wantMax {
				t.Errorf("max_tokens = %v, want %v", got["max_tokens"], tc.wantMax)
			}
		})
	}
}

func TestStreamCutMidway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    reply
	}{
		{"connection dropped", reply{Body: fixture(t, "cut.sse"), Cut: true}},
		{"body ended without message_stop", reply{Body: fixture(t, "cut.sse")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, tc.r)
			var rec recorder
			msg, err := openProvider(t, f).Stream(context.Background(), userAsks("go"), rec.Add)
			if err == nil {
				t.Fatal("no error for a cut stream")
			}
			if !strings.Contains(err.Error(), "stream was cut") {
				t.Errorf("error %q does not say the stream was cut", err)
			}
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Kind != model.KindStreamCut {
				t.Errorf("error kind = %v, want stream-cut", err)
			}
			if msg.Usage == nil || !msg.Usage.Incomplete || msg.Usage.Input != 700 {
				t.Errorf("usage = %+v, want input 700 marked incomplete", msg.Usage)
			}
			if msg.Text() != "Half of an ans" {
				t.Errorf("partial text = %q", msg.Text())
			}
			if len(msg.ToolCalls) != 0 {
				t.Errorf("an unfinished tool call was kept: %s", dump(msg.ToolCalls))
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
		reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
		reply{Body: fixture(t, "text.sse")},
	)
	var rec recorder
	start := time.Now()
	msg, err := openProvider(t, f).Stream(context.Background(), userAsks("hi"), rec.Add)
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
	if len(retries) != 1 || retries[0].Text != "anthropic: 429 rate limited; retrying in 1s (attempt 2/5)" {
		t.Errorf("retry deltas = %s", dump(retries))
	}
	if n := len(f.Requests(t)); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
}

func TestOverloadedEventBeforeContentIsRetried(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "overloaded.sse")}, reply{Body: fixture(t, "text.sse")})
	var rec recorder
	msg, err := openProvider(t, f).Stream(context.Background(), userAsks("hi"), rec.Add)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() == "" || len(rec.OfType("retry")) != 1 {
		t.Errorf("text %q, retry deltas %s", msg.Text(), dump(rec.OfType("retry")))
	}
	if !strings.Contains(rec.OfType("retry")[0].Text, "overloaded_error") {
		t.Errorf("retry notice %q does not say why", rec.OfType("retry")[0].Text)
	}
}

func TestAuthFailureNamesTheVariable(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`})
	_, err := openProvider(t, f).Stream(context.Background(), userAsks("hi"), nil)
	if err == nil {
		t.Fatal("no error for 401")
	}
	want := "anthropic: the API key was rejected (401): set ANTHROPIC_API_KEY to a valid key (invalid x-api-key)"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if n := len(f.Requests(t)); n != 1 {
		t.Errorf("a 401 was retried (%d requests)", n)
	}
}

func TestContextLengthError(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212000 tokens > 200000 maximum"}}`})
	_, err := openProvider(t, f).Stream(context.Background(), userAsks("hi"), nil)
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Kind != model.KindContextLength {
		t.Fatalf("error = %v, want a context-length error", err)
	}
	if !strings.Contains(err.Error(), "the conversation is longer than the model's context window") || !strings.Contains(err.Error(), "212000 tokens") {
		t.Errorf("error = %q", err)
	}
}

func TestRetriesExhaustedKeepProviderMessage(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Status: 529, Header: map[string]string{"retry-after-ms": "10"}, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	var rec recorder
	_, err := openProvider(t, f).Stream(context.Background(), userAsks("hi"), rec.Add)
	if err == nil {
		t.Fatal("no error after every attempt failed")
	}
	if !strings.Contains(err.Error(), "Overloaded") || !strings.Contains(err.Error(), "gave up after 5 attempts") {
		t.Errorf("error = %q", err)
	}
	if n := len(f.Requests(t)); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
	if got := len(rec.OfType("retry")); got != 4 {
		t.Errorf("%d retry notices, want 4", got)
	}
}

func TestCancelReturnsPromptly(t *testing.T) {
	t.Parallel()
	partial := strings.Join(strings.SplitAfter(fixture(t, "cut.sse"), "\n\n")[:3], "")
	f := newFakeAPI(t, reply{Body: partial, Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan model.Delta, 10)
	done := make(chan error, 1)
	var msg model.Message
	go func() {
		var err error
		msg, err = openProvider(t, f).Stream(ctx, userAsks("hi"), func(d model.Delta) { got <- d })
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

func TestBaseURLWithV1IsAccepted(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	p := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: f.URL + "/v1/", Model: testModel})
	if _, err := p.Stream(context.Background(), userAsks("hi"), nil); err != nil {
		t.Fatalf("a base URL ending in /v1 failed: %v", err)
	}
}

func TestConnectionLostAfterFinalUsageLosesNothing(t *testing.T) {
	t.Parallel()
	body := fixture(t, "text.sse")
	body = body[:strings.Index(body, "event: message_stop")]
	f := newFakeAPI(t, reply{Body: body, Cut: true})
	msg, err := newProvider(f).Stream(context.Background(), userAsks("hi"), nil)
	if err != nil {
		t.Fatalf("error %v after the stop reason and final usage had arrived", err)
	}
	if msg.Text() != "The entry point is src/main.go." || msg.Usage.Incomplete || msg.Usage.Output != 42 {
		t.Errorf("message = %q, usage %+v", msg.Text(), *msg.Usage)
	}
}

func TestRedactedThinkingRoundTrip(t *testing.T) {
	t.Parallel()
	sse := strings.Join([]string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_r","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}, "\n\n") + "\n\n"
	f := newFakeAPI(t, reply{Body: sse})
	p := newProvider(f)
	msg, err := p.Stream(context.Background(), userAsks("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Text != "" || msg.Text() != "ok" {
		t.Fatalf("content = %+v", msg.Content)
	}
	next := model.Request{Messages: []model.Message{model.UserText("hi"), msg, model.UserText("more")}}
	if _, err := p.Stream(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	sent := f.Requests(t)[1]["messages"].([]any)[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	if sent["type"] != "redacted_thinking" || sent["data"] != "EmwKAhgBEgy3va3pzix" {
		t.Errorf("redacted thinking sent back as %s", dump(sent))
	}
}
