package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// sse renders Messages API stream events.
type sse struct{ strings.Builder }

func (b *sse) event(v map[string]any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(b, "event: %s\ndata: %s\n\n", v["type"], data)
}

func (b *sse) start() {
	b.event(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_b", "type": "message", "role": "assistant",
		"model": testModel, "content": []any{}, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
}

func (b *sse) stop(reason string) {
	b.event(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": reason}, "usage": map[string]any{"output_tokens": 5}})
	b.event(map[string]any{"type": "message_stop"})
}

// text streams a text block of n bytes in pieces of piece bytes.
func (b *sse) text(index, n, piece int) {
	b.event(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
	for sent := 0; sent < n; sent += piece {
		b.event(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": strings.Repeat("t", min(piece, n-sent))}})
	}
	b.event(map[string]any{"type": "content_block_stop", "index": index})
}

// toolUse streams a tool_use block whose input JSON is args, in pieces.
func (b *sse) toolUse(index int, id, name, args string, piece int) {
	b.event(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
	for sent := 0; sent < len(args); sent += piece {
		b.event(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": args[sent:min(sent+piece, len(args))]}})
	}
	b.event(map[string]any{"type": "content_block_stop", "index": index})
}

func TestReplyBoundStopsTheStream(t *testing.T) {
	t.Parallel()
	var body sse
	body.start()
	body.text(0, model.MaxReplyBytes+(1<<20), 64<<10)
	body.stop("end_turn")
	f := newFakeAPI(t, reply{Body: body.String()})
	var rec recorder
	msg, err := openProvider(t, f).Stream(context.Background(), userAsks("write"), rec.Add)
	var pe *model.ProviderError
	if !model.IsReplyTooLarge(err) || !errors.As(err, &pe) || model.Retryable(err) {
		t.Fatalf("err = %v; want a reply-too-large error that is not retried", err)
	}
	if !strings.Contains(err.Error(), "reply bound of 8 MiB") {
		t.Errorf("error %q does not name the bound", err)
	}
	if n := len(f.Requests(t)); n != 1 {
		t.Errorf("%d requests; an oversized reply must not be retried", n)
	}
	if len(msg.Text()) != model.MaxReplyBytes {
		t.Errorf("kept %d bytes of text; want the first %d", len(msg.Text()), model.MaxReplyBytes)
	}
	var streamed int
	for _, d := range rec.OfType("text") {
		streamed += len(d.Text)
	}
	if streamed != model.MaxReplyBytes {
		t.Errorf("%d bytes of text deltas; want %d", streamed, model.MaxReplyBytes)
	}
}

func TestReplyBoundOnOneLine(t *testing.T) {
	t.Parallel()
	var body sse
	body.start()
	body.text(0, model.MaxReplyBytes+10, model.MaxReplyBytes+10)
	body.stop("end_turn")
	f := newFakeAPI(t, reply{Body: body.String()})
	_, err := openProvider(t, f).Stream(context.Background(), userAsks("write"), nil)
	if !model.IsReplyTooLarge(err) || !strings.Contains(err.Error(), "one line of the model's response stream passed ink's reply bound of 8 MiB") {
		t.Fatalf("err = %v; want the line bound named", err)
	}
	if strings.Contains(err.Error(), "token too long") || len(f.Requests(t)) != 1 {
		t.Errorf("err = %v after %d requests; want one request and no scanner error", err, len(f.Requests(t)))
	}
}

func TestToolArgumentBound(t *testing.T) {
	t.Parallel()
	big := `{"path":"a","content":"` + strings.Repeat("x", model.MaxToolArgBytes) + `"}`
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	var body sse
	body.start()
	body.toolUse(0, "toolu_big", "write", big, 32<<10)
	body.toolUse(1, "toolu_deep", "write", deep, 32<<10)
	body.toolUse(2, "toolu_ok", "read", `{"path":"a"}`, 4)
	body.stop("tool_use")
	f := newFakeAPI(t, reply{Body: body.String()})
	msg, err := openProvider(t, f).Stream(context.Background(), userAsks("write"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.ToolCalls) != 3 {
		t.Fatalf("calls = %s", dump(msg.ToolCalls))
	}
	bigCall, deepCall, ok := msg.ToolCalls[0], msg.ToolCalls[1], msg.ToolCalls[2]
	if string(bigCall.Args) != "{}" || !strings.Contains(bigCall.Invalid, "tool-argument bound of 1 MiB") {
		t.Errorf("oversized call: args %.80s, invalid %q", bigCall.Args, bigCall.Invalid)
	}
	if !json.Valid(deepCall.Args) || !strings.Contains(deepCall.Invalid, "not valid JSON") || !strings.Contains(deepCall.Invalid, "exceeded max depth") {
		t.Errorf("deep call: invalid %q", deepCall.Invalid)
	}
	if string(ok.Args) != `{"path":"a"}` || ok.Invalid != "" {
		t.Errorf("good call: %s", dump(ok))
	}
}
