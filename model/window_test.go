package model

import (
	"strings"
	"testing"
)

func TestContextWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		binding Binding
		want    int64
	}{
		{Binding{Provider: "anthropic", Model: "claude-sonnet-4-5"}, 200_000},
		{Binding{Provider: "anthropic", Model: "claude-opus-4-6"}, 200_000},
		{Binding{Provider: "anthropic", Model: "claude-haiku-4-5-20251001"}, 200_000},
		{Binding{Provider: "anthropic", Model: "claude-3-7-sonnet-latest"}, 200_000},
		{Binding{Provider: "openrouter", Model: "anthropic/claude-sonnet-4.5"}, 200_000},
		{Binding{Provider: "openai", Model: "gpt-5.4"}, 272_000},
		{Binding{Provider: "openai", Model: "gpt-5-mini"}, 272_000},
		{Binding{Provider: "openai", Model: "gpt-4.1-mini"}, 1_047_576},
		{Binding{Provider: "openai", Model: "gpt-4o-2024-08-06"}, 128_000},
		{Binding{Provider: "openai", Model: "gpt-4"}, 8_192},
		{Binding{Provider: "openai", Model: "o1-mini"}, 128_000},
		{Binding{Provider: "openai", Model: "o3"}, 200_000},
		{Binding{Provider: "deepseek", Model: "deepseek-chat"}, 128_000},
		{Binding{Provider: "deepseek", Model: "deepseek-reasoner"}, 128_000},
		{Binding{Provider: "ollama", Model: "qwen2.5-coder:7b"}, 32_768},
		{Binding{Provider: "ollama", Model: "qwen3-coder:30b"}, 262_144},
		{Binding{Provider: "ollama", Model: "llama3.1:8b"}, 131_072},
		{Binding{Provider: "ollama", Model: "llama3:8b"}, 8_192},
		{Binding{Provider: "vllm", Model: "meta-llama/Llama-3.3-70B-Instruct"}, 131_072},
		{Binding{Provider: "vllm", Model: "Qwen/Qwen2.5-Coder-32B-Instruct"}, 32_768},
		{Binding{Provider: "ollama", Model: "gpt-oss:20b"}, 131_072},
		// Unknown models: local servers get the small default, hosted APIs the larger one.
		{Binding{Provider: "ollama", Model: "my-finetune"}, DefaultLocalContextWindow},
		{Binding{Provider: "vllm", Model: "my-finetune"}, DefaultLocalContextWindow},
		{Binding{Provider: "openai", Model: "my-finetune", BaseURL: "http://127.0.0.1:8080/v1"}, DefaultLocalContextWindow},
		{Binding{Provider: "openai", Model: "my-finetune", BaseURL: "http://localhost:8080/v1"}, DefaultLocalContextWindow},
		{Binding{Provider: "openai", Model: "my-finetune", BaseURL: "https://proxy.example/v1"}, DefaultContextWindow},
		{Binding{Provider: "openrouter", Model: "someone/new-model"}, DefaultContextWindow},
		// The script model reports its own window.
		{Binding{Provider: "script", Model: "claude.yaml"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.binding.String(), func(t *testing.T) {
			t.Parallel()
			if got := ContextWindow(tc.binding); got != tc.want {
				t.Errorf("ContextWindow(%s) = %d, want %d", tc.binding, got, tc.want)
			}
		})
	}
}

func TestKnownContextWindowUnknown(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "  ", "my-model", "unknown/thing:7b"} {
		if w, ok := KnownContextWindow(id); ok {
			t.Errorf("KnownContextWindow(%q) = %d, true; want unknown", id, w)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	if got := EstimateTokens(); got != 0 {
		t.Errorf("no messages: %d tokens", got)
	}
	short := EstimateTokens(UserText("hi"))
	long := EstimateTokens(UserText(strings.Repeat("x", 3000)))
	if short <= 0 || long < 1000 || long > 1100 {
		t.Errorf("estimates: %d for 2 bytes, %d for 3000 bytes; want >0 and about 1000", short, long)
	}
	withCall := EstimateTokens(Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "read", Args: []byte(strings.Repeat("a", 300))}}})
	withResult := EstimateTokens(Message{Role: RoleToolResult, Results: []ToolResult{{ToolCallID: "c1", Content: strings.Repeat("r", 3000)}}})
	if withCall < 100 || withResult < 1000 {
		t.Errorf("calls and results are not counted: %d, %d", withCall, withResult)
	}
	req := Request{System: strings.Repeat("s", 300), Tools: []ToolSpec{{Name: "read", Description: strings.Repeat("d", 300)}}, Messages: []Message{UserText("hi")}}
	if got := EstimateRequestTokens(req); got < 200+short {
		t.Errorf("request estimate %d leaves out the system prompt or the tools", got)
	}
}

func TestUsageTotal(t *testing.T) {
	t.Parallel()
	u := Usage{Input: 1, Output: 20, CacheRead: 300, CacheWrite: 4000}
	if u.Total() != 4321 {
		t.Errorf("Total = %d, want 4321", u.Total())
	}
}
