package agents

import (
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

func TestResolveModel(t *testing.T) {
	t.Parallel()
	anthropic := model.Binding{Provider: "anthropic", Model: "claude-opus-4-1", BaseURL: "https://proxy.example/anthropic"}
	openai := model.Binding{Provider: "openai", Model: "gpt-5"}
	script := model.Binding{Provider: "script", Model: "flows/demo.yaml"}
	tests := []struct {
		name    string
		model   string
		parent  model.Binding
		want    model.Binding
		wantErr []string // every fragment must be in the error
	}{
		{name: "absent inherits", model: "", parent: openai, want: openai},
		{name: "inherit", model: "inherit", parent: anthropic, want: anthropic},
		{name: "inherit any case", model: "Inherit", parent: script, want: script},
		{name: "sonnet on anthropic", model: "sonnet", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: anthropic.BaseURL}},
		{name: "opus on anthropic", model: "opus", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-opus-4-1", BaseURL: anthropic.BaseURL}},
		{name: "haiku on anthropic", model: "haiku", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: anthropic.BaseURL}},
		{name: "alias on openai", model: "sonnet", parent: openai, wantErr: []string{`agent "p": model "sonnet" is a Claude alias`, "only maps to a model on the anthropic provider", "runs on openai/gpt-5", "PROVIDER/MODEL", "anthropic/claude-sonnet-4-5"}},
		{name: "alias on script", model: "haiku", parent: script, wantErr: []string{"Claude alias", "script:flows/demo.yaml"}},
		{name: "other provider allowed", model: "openai/gpt-5-mini", parent: anthropic, want: model.Binding{Provider: "openai", Model: "gpt-5-mini"}},
		{name: "same provider keeps base URL", model: "anthropic/claude-haiku-4-5", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: anthropic.BaseURL}},
		{name: "model id with slashes", model: "openrouter/meta-llama/llama-3.1-8b", parent: anthropic, want: model.Binding{Provider: "openrouter", Model: "meta-llama/llama-3.1-8b"}},
		{name: "script path", model: "script:flows/child.yaml", parent: anthropic, want: model.Binding{Provider: "script", Model: "flows/child.yaml"}},
		{name: "bare id on parent provider", model: "claude-sonnet-4-5-20250929", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", BaseURL: anthropic.BaseURL}},
		{name: "bare id on openai", model: "gpt-5-mini", parent: openai, want: model.Binding{Provider: "openai", Model: "gpt-5-mini"}},
		{name: "bare id on script", model: "gpt-5", parent: script, wantErr: []string{`model "gpt-5" names no provider`, "script model"}},
		{name: "blank", model: "   ", parent: anthropic, wantErr: []string{`agent "p": model is blank`}},
		{name: "unknown provider", model: "acme/x", parent: anthropic, wantErr: []string{`agent "p": model "acme/x": unknown provider "acme"`}},
		{name: "trimmed", model: " opus ", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-opus-4-1", BaseURL: anthropic.BaseURL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveModel(Profile{Name: "p", Model: tt.model, Source: "/agents/p.md"}, tt.parent)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ResolveModel(%q) = %v; want an error", tt.model, got)
				}
				for _, frag := range tt.wantErr {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error %q lacks %q", err, frag)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveModel(%q): %v", tt.model, err)
			}
			if got != tt.want {
				t.Errorf("ResolveModel(%q) = %+v, want %+v", tt.model, got, tt.want)
			}
		})
	}
}
