package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/connect"
)

// wireAPI is an httptest server speaking one provider's real wire format.
// It answers by what each request holds: the summary request (its last
// user text is the compaction instruction) with a summary, a request that
// starts from the summary with the final answer, a request holding a tool
// result with the provider's context-overflow error, and the first request
// with a tool call.
type wireAPI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

// wireFormat renders the replies of one provider.
type wireFormat struct {
	path      string
	overflow  func(w http.ResponseWriter)
	toolCall  func(w http.ResponseWriter)
	text      func(w http.ResponseWriter, text string)
	resultKey string // a string that only a request holding a tool result contains
}

func newWireAPI(t *testing.T, f wireFormat) *wireAPI {
	t.Helper()
	api := &wireAPI{}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != f.path {
			http.Error(w, "bad request to "+r.URL.Path, http.StatusBadRequest)
			return
		}
		api.mu.Lock()
		api.bodies = append(api.bodies, body)
		api.mu.Unlock()
		s := string(raw)
		switch {
		case strings.Contains(s, "[ink] Context compaction"):
			f.text(w, "Summary: the user wants the entry point; main.go was read and holds func main.")
		case strings.Contains(s, "was compacted to fit"):
			f.text(w, "The entry point is main.go.")
		case strings.Contains(s, f.resultKey):
			f.overflow(w)
		default:
			f.toolCall(w)
		}
	}))
	t.Cleanup(api.Close)
	return api
}

func (a *wireAPI) requests() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.bodies...)
}

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		io.WriteString(w, e+"\n\n")
	}
}

func jsonError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

var anthropicWire = wireFormat{
	path:      "/v1/messages",
	resultKey: `"tool_result"`,
	overflow: func(w http.ResponseWriter) {
		jsonError(w, http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210403 tokens > 200000 maximum"},"request_id":"req_011"}`)
	},
	toolCall: func(w http.ResponseWriter) {
		sse(w,
			`event: message_start`+"\n"+`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":1}}}`,
			`event: content_block_start`+"\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01A","name":"read","input":{}}}`,
			`event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"main.go\"}"}}`,
			`event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":0}`,
			`event: message_delta`+"\n"+`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`,
			`event: message_stop`+"\n"+`data: {"type":"message_stop"}`)
	},
	text: func(w http.ResponseWriter, text string) {
		quoted, _ := json.Marshal(text)
		sse(w,
			`event: message_start`+"\n"+`data: {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":700,"output_tokens":1}}}`,
			`event: content_block_start`+"\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta`+"\n"+fmt.Sprintf(`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, quoted),
			`event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":0}`,
			`event: message_delta`+"\n"+`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}`,
			`event: message_stop`+"\n"+`data: {"type":"message_stop"}`)
	},
}

var openaiWire = wireFormat{
	path:      "/v1/chat/completions",
	resultKey: `"role":"tool"`,
	overflow: func(w http.ResponseWriter) {
		jsonError(w, http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	},
	toolCall: func(w http.ResponseWriter) {
		sse(w,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"main.go\"}"}}]},"finish_reason":null}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":20,"total_tokens":920}}`,
			`data: [DONE]`)
	},
	text: func(w http.ResponseWriter, text string) {
		quoted, _ := json.Marshal(text)
		sse(w,
			`data: {"id":"c2","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			fmt.Sprintf(`data: {"id":"c2","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, quoted),
			`data: {"id":"c2","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`data: {"id":"c2","object":"chat.completion.chunk","created":1764500000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":700,"completion_tokens":30,"total_tokens":730}}`,
			`data: [DONE]`)
	},
}

// TestProviderOverflowLeadsToCompaction runs the loop against each real
// provider adapter (with ink's retry policy) on an httptest server: the
// second turn is refused with the provider's context-overflow error, the
// loop asks the same provider for a summary (text only, tools still
// described), and the retried turn, sent from the summary and the retained
// tail, succeeds.
func TestProviderOverflowLeadsToCompaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		format  wireFormat
		binding func(url string) model.Binding
		env     map[string]string
		// toolChoiceNone is tool_choice "none" in the provider's format.
		toolChoiceNone any
	}{
		{"anthropic", anthropicWire, func(u string) model.Binding {
			return model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: u}
		}, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test"}, map[string]any{"type": "none"}},
		{"openai", openaiWire, func(u string) model.Binding {
			return model.Binding{Provider: "openai", Model: "gpt-4o", BaseURL: u + "/v1"}
		}, map[string]string{"OPENAI_API_KEY": "sk-test"}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := newWireAPI(t, tc.format)
			b := tc.binding(api.URL)
			prov, err := connect.Open(b, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			var s sink
			var got compactions
			opts := s.options(prov, &blobTool{name: "read", size: 200})
			opts.Request.Model = b.Model
			opts.ContextWindow = model.ContextWindow(b)
			opts.OnCompaction = got.on
			res, err := loop.Run(context.Background(), opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.FinalText != "The entry point is main.go." || res.Turns != 2 || res.Compactions != 1 {
				t.Fatalf("final %q after %d turns, %d compactions", res.FinalText, res.Turns, res.Compactions)
			}
			if len(got.list) != 1 || got.list[0].Trigger != loop.TriggerOverflow || got.list[0].Kept != 2 ||
				!strings.HasPrefix(got.list[0].Summary, "Summary: the user wants the entry point") || got.list[0].Usage.Output != 30 {
				t.Fatalf("compaction = %+v; want one on overflow keeping the tool turn", got.list)
			}
			reqs := api.requests()
			if len(reqs) != 4 {
				t.Fatalf("the server got %d requests, want 4 (turn 1, refused turn 2, summary, turn 2 again)", len(reqs))
			}
			summary, retried := reqs[2], reqs[3]
			if fmt.Sprint(summary["tool_choice"]) != fmt.Sprint(tc.toolChoiceNone) {
				t.Errorf("summary request tool_choice = %v, want %v", summary["tool_choice"], tc.toolChoiceNone)
			}
			if tools, _ := summary["tools"].([]any); len(tools) != 1 {
				t.Errorf("summary request has %d tools; they must stay described", len(tools))
			}
			if _, ok := retried["tool_choice"]; ok {
				t.Errorf("the retried turn is text-only: tool_choice %v", retried["tool_choice"])
			}
			raw, _ := json.Marshal(retried["messages"])
			if !strings.Contains(string(raw), "was compacted to fit") || !strings.Contains(string(raw), "main.go") ||
				strings.Contains(string(raw), "do the thing") {
				t.Errorf("the retried turn's messages = %s; want the summary and the kept tool turn, not the old prompt", raw)
			}
			if u := res.Usage; u.Incomplete || u.Output != 20+30+30 {
				t.Errorf("usage = %+v; want the two turns and the summary, complete", u)
			}
		})
	}
}
