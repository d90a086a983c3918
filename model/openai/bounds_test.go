package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// chunks renders Chat Completions stream chunks.
type chunks struct{ strings.Builder }

func (b *chunks) delta(delta map[string]any, finish any) {
	data, err := json.Marshal(map[string]any{"id": "chatcmpl-b", "object": "chat.completion.chunk", "model": "gpt-5.4",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(b, "data: %s\n\n", data)
}

func (b *chunks) done() { b.WriteString("data: [DONE]\n\n") }

func TestReplyBoundStopsTheStream(t *testing.T) {
	t.Parallel()
	var body chunks
	piece := strings.Repeat("t", 64<<10)
	for sent := 0; sent <= model.MaxReplyBytes; sent += len(piece) {
		body.delta(map[string]any{"content": piece}, nil)
	}
	body.delta(map[string]any{}, "stop")
	body.done()
	f := newFakeAPI(t, reply{Body: body.String()})
	msg, err := openProvider(t, f, "openai", "gpt-5.4", openaiEnv).Stream(context.Background(), userAsks("write"), nil)
	if !model.IsReplyTooLarge(err) || model.Retryable(err) || !strings.Contains(err.Error(), "reply bound of 8 MiB") {
		t.Fatalf("err = %v; want the reply bound named, not retried", err)
	}
	if n := len(f.Requests(t)); n != 1 || len(msg.Text()) != model.MaxReplyBytes {
		t.Errorf("%d requests, %d bytes kept; want 1 and %d", n, len(msg.Text()), model.MaxReplyBytes)
	}
}

func TestToolArgumentBound(t *testing.T) {
	t.Parallel()
	var body chunks
	call := func(index int, id, name, args string) {
		first := true
		for sent := 0; sent < len(args) || first; sent += 32 << 10 {
			fn := map[string]any{"arguments": args[sent:min(sent+32<<10, len(args))]}
			tc := map[string]any{"index": index, "function": fn}
			if first {
				tc["id"], tc["type"], fn["name"] = id, "function", name
				first = false
			}
			body.delta(map[string]any{"tool_calls": []any{tc}}, nil)
		}
	}
	call(0, "call_big", "write", `{"content":"`+strings.Repeat("x", model.MaxToolArgBytes)+`"}`)
	call(1, "call_bad", "read", `{"path": "a"`)
	call(2, "call_ok", "read", `{"path":"a"}`)
	body.delta(map[string]any{}, "tool_calls")
	body.done()
	f := newFakeAPI(t, reply{Body: body.String()})
	msg, err := openProvider(t, f, "openai", "gpt-5.4", openaiEnv).Stream(context.Background(), userAsks("write"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.ToolCalls) != 3 {
		t.Fatalf("calls = %s", dump(msg.ToolCalls))
	}
	if c := msg.ToolCalls[0]; string(c.Args) != "{}" || !strings.Contains(c.Invalid, "tool-argument bound of 1 MiB") {
		t.Errorf("oversized call: args %.80s, invalid %q", c.Args, c.Invalid)
	}
	if c := msg.ToolCalls[1]; !json.Valid(c.Args) || !strings.Contains(c.Invalid, "not valid JSON") {
		t.Errorf("cut call: args %s, invalid %q", c.Args, c.Invalid)
	}
	if c := msg.ToolCalls[2]; string(c.Args) != `{"path":"a"}` || c.Invalid != "" {
		t.Errorf("good call: %s", dump(c))
	}
}
