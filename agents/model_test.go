package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// noEnv is an environment with no variable set.
func noEnv(string) string { return "" }

// envOf is an environment holding vars ("K=V").
func envOf(vars ...string) func(string) string {
	m := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestResolveModel(t *testing.T) {
	t.Parallel()
	anthropic := model.Binding{Provider: "anthropic", Model: "claude-opus-4-1", BaseURL: "https://proxy.example/anthropic"}
	openai := model.Binding{Provider: "openai", Model: "gpt-5", BaseURL: "http://127.0.0.1:9/v1"}
	ollama := model.Binding{Provider: "ollama", Model: "llama3"}
	script := model.Binding{Provider: "script", Model: "flows/demo.yaml"}

	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelAliasesFile), "aliases:\n  sonnet: openai/gpt-5\n  haiku: ollama/qwen3\n  opus: script:flows/opus.yaml\n")
	mapped, err := LoadModelAliases(home, envOf("INK_MODEL_HAIKU=openai/gpt-5-mini"))
	if err != nil {
		t.Fatal(err)
	}
	none, err := LoadModelAliases(t.TempDir(), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	writeFile(t, filepath.Join(broken, ModelAliasesFile), "aliases:\n  sonet: openai/gpt-5\n")
	bad, badErr := LoadModelAliases(broken, noEnv)
	if badErr == nil {
		t.Fatal("a models.yaml with an unknown alias loaded without an error")
	}

	tests := []struct {
		name    string
		model   string
		parent  model.Binding
		aliases *ModelAliases
		want    model.Binding
		note    []string // every fragment must be in the note ("" = no note)
		wantErr []string // every fragment must be in the error
	}{
		{name: "absent inherits", model: "", parent: openai, want: openai},
		{name: "inherit", model: "inherit", parent: anthropic, want: anthropic},
		{name: "inherit any case", model: "Inherit", parent: script, want: script},

		// Each alias on anthropic: the model Claude Code sends, whatever
		// the user maps it to elsewhere.
		{name: "sonnet on anthropic", model: "sonnet", parent: anthropic, aliases: mapped, want: model.Binding{Provider: "anthropic", Model: "claude-sonnet-5", BaseURL: anthropic.BaseURL}},
		{name: "opus on anthropic", model: "opus", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-opus-4-8", BaseURL: anthropic.BaseURL}},
		{name: "haiku on anthropic", model: "haiku", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-haiku-4-5-20251001", BaseURL: anthropic.BaseURL}},
		{name: "fable on anthropic", model: "fable", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-fable-5", BaseURL: anthropic.BaseURL}},
		{name: "alias any case", model: " Opus ", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-opus-4-8", BaseURL: anthropic.BaseURL}},

		// Each alias on openai: the mapping (same provider keeps the
		// parent's endpoint), the variable over the file, else the parent.
		{name: "sonnet on openai mapped by the file", model: "sonnet", parent: openai, aliases: mapped, want: model.Binding{Provider: "openai", Model: "gpt-5", BaseURL: openai.BaseURL}},
		{name: "haiku on openai mapped by the variable", model: "haiku", parent: openai, aliases: mapped, want: model.Binding{Provider: "openai", Model: "gpt-5-mini", BaseURL: openai.BaseURL}},
		{name: "opus on openai mapped to a script", model: "opus", parent: openai, aliases: mapped, want: model.Binding{Provider: "script", Model: filepath.Join(home, "flows/opus.yaml")}},
		{name: "fable on openai unmapped", model: "fable", parent: openai, aliases: mapped, want: openai, note: []string{
			`agent "p": model "fable" is a Claude alias and nothing maps it for openai, so it runs on its parent's model openai/gpt-5`,
			`"fable: PROVIDER/MODEL" under aliases: in ` + filepath.Join(home, ModelAliasesFile), "INK_MODEL_FABLE"}},
		{name: "sonnet on openai without aliases", model: "sonnet", parent: openai, want: openai, note: []string{"runs on its parent's model openai/gpt-5", "~/.ink/models.yaml", "INK_MODEL_SONNET"}},

		// Each alias on script: the same rules.
		{name: "sonnet on script mapped", model: "sonnet", parent: script, aliases: mapped, want: model.Binding{Provider: "openai", Model: "gpt-5"}},
		{name: "haiku on script mapped", model: "haiku", parent: script, aliases: mapped, want: model.Binding{Provider: "openai", Model: "gpt-5-mini"}},
		{name: "opus on script unmapped", model: "opus", parent: script, aliases: none, want: script, note: []string{"nothing maps it for script", "script:flows/demo.yaml"}},
		{name: "fable on script unmapped", model: "fable", parent: script, aliases: none, want: script, note: []string{"INK_MODEL_FABLE"}},

		{name: "haiku on ollama mapped to another provider", model: "sonnet", parent: ollama, aliases: mapped, want: model.Binding{Provider: "openai", Model: "gpt-5"}},
		{name: "a broken alias file refuses aliases elsewhere", model: "sonnet", parent: openai, aliases: bad, wantErr: []string{`agent "p": model "sonnet" needs the alias mapping, which cannot be read`, ModelAliasesFile + ":2", `unknown field "sonet"`}},
		{name: "a broken alias file does not matter on anthropic", model: "sonnet", parent: anthropic, aliases: bad, want: model.Binding{Provider: "anthropic", Model: "claude-sonnet-5", BaseURL: anthropic.BaseURL}},

		{name: "other provider allowed", model: "openai/gpt-5-mini", parent: anthropic, want: model.Binding{Provider: "openai", Model: "gpt-5-mini"}},
		{name: "same provider keeps base URL", model: "anthropic/claude-haiku-4-5", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: anthropic.BaseURL}},
		{name: "model id with slashes", model: "openrouter/meta-llama/llama-3.1-8b", parent: anthropic, want: model.Binding{Provider: "openrouter", Model: "meta-llama/llama-3.1-8b"}},
		{name: "script path", model: "script:flows/child.yaml", parent: anthropic, want: model.Binding{Provider: "script", Model: "flows/child.yaml"}},
		{name: "bare id on parent provider", model: "claude-sonnet-4-5-20250929", parent: anthropic, want: model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", BaseURL: anthropic.BaseURL}},
		{name: "bare id on openai", model: "gpt-5-mini", parent: openai, want: model.Binding{Provider: "openai", Model: "gpt-5-mini", BaseURL: openai.BaseURL}},
		{name: "bare id on script", model: "gpt-5", parent: script, wantErr: []string{`model "gpt-5" names no provider`, "script model"}},
		{name: "blank", model: "   ", parent: anthropic, wantErr: []string{`agent "p": model is blank`}},
		{name: "unknown provider", model: "acme/x", parent: anthropic, wantErr: []string{`agent "p": model "acme/x": unknown provider "acme"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, note, err := ResolveModel(Profile{Name: "p", Model: tt.model, Source: "/agents/p.md"}, tt.parent, tt.aliases)
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
			if len(tt.note) == 0 && note != "" {
				t.Errorf("unexpected note %q", note)
			}
			for _, frag := range tt.note {
				if !strings.Contains(note, frag) {
					t.Errorf("note %q lacks %q", note, frag)
				}
			}
		})
	}
}

func TestLoadModelAliases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string // "" = no file
		env     []string
		want    map[string]string // alias -> binding
		wantErr []string
	}{
		{name: "no file maps nothing", want: map[string]string{}},
		{name: "block and flow forms", file: "aliases:\n  sonnet: openai/gpt-5\n", env: nil, want: map[string]string{"sonnet": "openai/gpt-5"}},
		{name: "flow map", file: "aliases: {sonnet: openai/gpt-5, haiku: ollama/qwen3}\n", want: map[string]string{"sonnet": "openai/gpt-5", "haiku": "ollama/qwen3"}},
		{name: "variable wins over the file", file: "aliases: {opus: openai/gpt-5}\n", env: []string{"INK_MODEL_OPUS=deepseek/deepseek-reasoner"}, want: map[string]string{"opus": "deepseek/deepseek-reasoner"}},
		{name: "unknown top-level key", file: "alias:\n  sonnet: openai/gpt-5\n", wantErr: []string{ModelAliasesFile + `:1: unknown field "alias"`, "aliases: {sonnet: openai/gpt-5"}},
		{name: "unknown alias", file: "aliases:\n  sonnet: openai/gpt-5\n  gemini: openai/x\n", wantErr: []string{ModelAliasesFile + `:3: unknown field "gemini"`, "fable, haiku, opus, sonnet"}},
		{name: "not YAML", file: "aliases: [unclosed\n", wantErr: []string{ModelAliasesFile + ":1: "}},
		{name: "a value with no provider", file: "aliases:\n  opus: openai/gpt-5\n  haiku: qwen3\n", wantErr: []string{ModelAliasesFile + `:3: alias haiku: "qwen3" names no provider; write PROVIDER/MODEL`}},
		{name: "a value with an unknown provider", file: "aliases:\n  haiku: acme/x\n", wantErr: []string{ModelAliasesFile + `:2: alias haiku: model "acme/x": unknown provider "acme"`}},
		{name: "a list value", file: "aliases:\n  haiku: [a, b]\n", wantErr: []string{ModelAliasesFile + ":2: "}},
		{name: "a bad variable", env: []string{"INK_MODEL_SONNET=gpt-5"}, wantErr: []string{`INK_MODEL_SONNET=gpt-5: "gpt-5" names no provider`, "or unset it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(home, ModelAliasesFile), tt.file)
			}
			before, _ := os.ReadFile(filepath.Join(home, ModelAliasesFile))
			a, err := LoadModelAliases(home, envOf(tt.env...))
			if after, _ := os.ReadFile(filepath.Join(home, ModelAliasesFile)); string(after) != string(before) {
				t.Errorf("LoadModelAliases changed the file")
			}
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; mapped %v", a.Mapped())
				}
				for _, frag := range tt.wantErr {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error %q lacks %q", err, frag)
					}
				}
				if !strings.Contains(err.Error(), home) && tt.file != "" {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for alias, b := range a.Mapped() {
				got[alias] = b.String()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("mapped %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s -> %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

func TestResolveFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flag    string
		file    string // models.yaml; "" = none
		env     []string
		want    string
		wantErr string
	}{
		{name: "unmapped alias is Claude Code's model", flag: "sonnet", want: "anthropic/claude-sonnet-5"},
		{name: "any case", flag: " Haiku ", want: "anthropic/claude-haiku-4-5-20251001"},
		{name: "the variable maps it", flag: "opus", env: []string{"INK_MODEL_OPUS=openai/gpt-5"}, want: "openai/gpt-5"},
		{name: "the file maps it", flag: "fable", file: "aliases: {fable: ollama/qwen3}\n", want: "ollama/qwen3"},
		{name: "a mapping of another alias leaves it alone", flag: "sonnet", file: "aliases: {haiku: ollama/qwen3}\n", want: "anthropic/claude-sonnet-5"},
		{name: "a full id is not an alias", flag: "anthropic/sonnet", want: "anthropic/sonnet"},
		{name: "script path", flag: "script:a.yaml", want: "script:a.yaml"},
		{name: "an unreadable mapping is an error", flag: "opus", file: "aliases: {sonet: x/y}\n", wantErr: `model "opus" is an alias and its mapping cannot be read`},
		{name: "a bare id still needs a provider", flag: "sonnet-5", wantErr: "missing provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(home, ModelAliasesFile), tt.file)
			}
			aliases, _ := LoadModelAliases(home, envOf(tt.env...))
			b, err := ResolveFlag(tt.flag, aliases)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveFlag(%q) = %v, %v; want error containing %q", tt.flag, b, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveFlag(%q): %v", tt.flag, err)
			}
			if b.String() != tt.want {
				t.Errorf("ResolveFlag(%q) = %s, want %s", tt.flag, b, tt.want)
			}
		})
	}
}
