package connect_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/anthropic"
	"github.com/inkdev/ink/model/connect"
	"github.com/inkdev/ink/model/openai"
	"github.com/inkdev/ink/model/providers"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestOpen: every provider of the table opens from its key and endpoint
// (contacting nothing), the script model from its file; what is missing
// is the error providers.Check gives, or names the script file.
func TestOpen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		b       model.Binding
		env     map[string]string
		wantErr string // "" = opens
	}{
		{"anthropic with key", model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6"}, map[string]string{"ANTHROPIC_API_KEY": "k"}, ""},
		{"anthropic without key", model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6"}, nil, "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your key>"},
		{"openai local server without key", model.Binding{Provider: "openai", Model: "qwen", BaseURL: "http://127.0.0.1:8080/v1"}, nil, ""},
		{"deepseek with key", model.Binding{Provider: "deepseek", Model: "deepseek-chat"}, map[string]string{"DEEPSEEK_API_KEY": "k"}, ""},
		{"ollama needs no key", model.Binding{Provider: "ollama", Model: "llama3.2"}, nil, ""},
		{"unknown provider", model.Binding{Provider: "gemini", Model: "m"}, nil, `unknown provider "gemini"`},
		{"script", model.Binding{Provider: "script", Model: "testdata/hello.yaml"}, nil, ""},
		{"script missing", model.Binding{Provider: "script", Model: "testdata/nope.yaml"}, nil, "nope.yaml"},
		{"bad stall limit", model.Binding{Provider: "ollama", Model: "m"}, map[string]string{"INK_STREAM_IDLE_TIMEOUT": "soon"}, "INK_STREAM_IDLE_TIMEOUT=soon is not a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := connect.Open(tc.b, envOf(tc.env))
			if tc.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("Open = %v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Open error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestTableMatchesTheAdapters: the public endpoints in the provider table
// are the ones the SDK adapters default to.
func TestTableMatchesTheAdapters(t *testing.T) {
	t.Parallel()
	if providers.AnthropicBaseURL != anthropic.DefaultBaseURL || providers.OpenAIBaseURL != openai.DefaultBaseURL {
		t.Fatalf("table endpoints %q, %q differ from the adapters' %q, %q", providers.AnthropicBaseURL, providers.OpenAIBaseURL, anthropic.DefaultBaseURL, openai.DefaultBaseURL)
	}
}

func TestOpenScriptAnswers(t *testing.T) {
	t.Parallel()
	p, err := connect.Open(model.Binding{Provider: "script", Model: "testdata/hello.yaml"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := p.Stream(context.Background(), model.Request{Messages: []model.Message{model.UserText("hi")}, Turn: 1}, nil)
	if err != nil || msg.Text() != "hello from the script" {
		t.Errorf("script reply = %q, %v", msg.Text(), err)
	}
}

// TestOpenAppliesTheStallLimits: a provider opened with
// INK_RESPONSE_HEADER_TIMEOUT set gives up on a server that does not
// answer within it, says so in a retry notice, and gets the answer on the
// retry.
func TestOpenAppliesTheStallLimits(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server notices when the client goes away
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			<-r.Context().Done() // the first request never gets an answer
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	p, err := connect.Open(model.Binding{Provider: "vllm", Model: "m", BaseURL: srv.URL + "/v1"}, envOf(map[string]string{"INK_RESPONSE_HEADER_TIMEOUT": "150ms"}))
	if err != nil {
		t.Fatal(err)
	}
	var retries []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, err := p.Stream(ctx, model.Request{Messages: []model.Message{model.UserText("hi")}}, func(d model.Delta) {
		if d.Type == "retry" {
			retries = append(retries, d.Text)
		}
	})
	if err != nil || msg.Text() != "hello" {
		t.Fatalf("Stream = %q, %v", msg.Text(), err)
	}
	if len(retries) != 1 || !strings.HasPrefix(retries[0], "vllm: no response headers for 150ms; retrying in ") {
		t.Errorf("retry notices %q", retries)
	}
}
