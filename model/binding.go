package model

import (
	"fmt"
	"strings"
)

// Binding names the provider and model an agent runs on.
type Binding struct {
	// Provider is "anthropic", "openai", "deepseek", "ollama", "vllm",
	// "openrouter" or "script".
	Provider string `json:"provider"`
	// Model is the provider's model id; for "script" the script's path.
	Model string `json:"model"`
	// BaseURL is the endpoint when it is not the provider's default. Never a key.
	BaseURL string `json:"baseURL,omitempty"`
}

// String renders b the way ParseBinding reads it.
func (b Binding) String() string {
	if b.Provider == "script" {
		return "script:" + b.Model
	}
	return b.Provider + "/" + b.Model
}

// KnownProviders lists the provider names a binding may use, in the order
// they are shown to users.
var KnownProviders = []string{"anthropic", "openai", "deepseek", "ollama", "vllm", "openrouter", "script"}

// ParseBinding reads "PROVIDER/MODEL" or "script:PATH". The model part may
// itself contain slashes ("openrouter/meta-llama/llama-3.1-8b").
func ParseBinding(s string) (Binding, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Binding{}, fmt.Errorf("empty model: give PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5) or script:PATH")
	}
	if path, ok := strings.CutPrefix(s, "script:"); ok {
		if strings.TrimSpace(path) == "" {
			return Binding{}, fmt.Errorf("model %q: script: needs a file path, e.g. script:examples/investigate.yaml", s)
		}
		return Binding{Provider: "script", Model: path}, nil
	}
	provider, name, ok := strings.Cut(s, "/")
	if !ok {
		return Binding{}, fmt.Errorf("model %q: missing provider; write PROVIDER/MODEL, naming the provider that serves %s: %s/%s, or script:PATH for the offline script model", s, s, strings.Join(KnownProviders[:len(KnownProviders)-1], "/…, "), "…")
	}
	provider = strings.ToLower(provider)
	known := false
	for _, p := range KnownProviders {
		if p == provider && p != "script" {
			known = true
		}
	}
	if !known {
		return Binding{}, fmt.Errorf("model %q: unknown provider %q; use one of %s, or script:PATH", s, provider, strings.Join(KnownProviders[:len(KnownProviders)-1], ", "))
	}
	if strings.TrimSpace(name) == "" {
		return Binding{}, fmt.Errorf("model %q: missing model name after %q", s, provider+"/")
	}
	return Binding{Provider: provider, Model: name}, nil
}
