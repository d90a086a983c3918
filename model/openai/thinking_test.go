package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestThinkingReachesTheRequest checks, on the wire, that a thinking level
// becomes reasoning_effort for the OpenAI models that take it, clamped to
// the values OpenAI accepts, and is left out everywhere else.
func TestThinkingReachesTheRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, provider, model, level string
		want                         any // nil = absent
	}{
		{"gpt-5 high", "openai", "gpt-5.4", "high", "high"},
		{"gpt-5 minimal", "openai", "gpt-5-mini", "minimal", "minimal"},
		{"o-series has no minimal", "openai", "o3", "minimal", "low"},
		{"max is the most there is", "openai", "gpt-5.4", "max", "high"},
		{"xhigh too", "openai", "o4-mini", "xhigh", "high"},
		{"medium", "openai", "o3", "medium", "medium"},
		{"off sends none", "openai", "gpt-5.4", "off", nil},
		{"unset sends none", "openai", "gpt-5.4", "", nil},
		{"unknown level sends none", "openai", "gpt-5.4", "extreme", nil},
		{"gpt-4o takes none", "openai", "gpt-4o", "high", nil},
		{"compatible servers get none", "deepseek", "deepseek-reasoner", "high", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
			env := map[string]string{"OPENAI_API_KEY": "sk-test", "DEEPSEEK_API_KEY": "sk-test"}
			p := openProvider(t, f, tc.provider, tc.model, env)
			req := userAsks("think")
			req.Model, req.Thinking = tc.model, tc.level
			if _, err := p.Stream(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got, ok := f.Requests(t)[0]["reasoning_effort"]
			if tc.want == nil && ok {
				t.Errorf("reasoning_effort = %v, want it absent", got)
			}
			if tc.want != nil && got != tc.want {
				t.Errorf("reasoning_effort = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTextOnlyRequest checks that a text-only request keeps the tools
// described and sets tool_choice "none", and that other requests leave
// tool_choice to the server.
func TestTextOnlyRequest(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	p := newProvider(f)
	req := userAsks("wrap up")
	req.Tools = []model.ToolSpec{{Name: "read", Description: "reads a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.TextOnly = true
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests(t)
	if _, ok := reqs[0]["tool_choice"]; ok {
		t.Errorf("ordinary request sets tool_choice %v", reqs[0]["tool_choice"])
	}
	if reqs[1]["tool_choice"] != "none" {
		t.Errorf("text-only request: tool_choice = %v, want \"none\"", reqs[1]["tool_choice"])
	}
	if tools, _ := reqs[1]["tools"].([]any); len(tools) != 1 {
		t.Errorf("text-only request dropped the tool specs: %v", reqs[1]["tools"])
	}
}
