package agents

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/inkdev/ink/model"
)

// ClaudeModelAliases maps Claude Code's model aliases to the Anthropic model
// ids they stand for. They resolve only when the parent runs on anthropic.
var ClaudeModelAliases = map[string]string{
	"sonnet": "claude-sonnet-4-5",
	"opus":   "claude-opus-4-1",
	"haiku":  "claude-haiku-4-5",
}

// ResolveModel gives the binding a child with profile p runs on, when its
// parent runs on parent:
//   - "" (no model line) or "inherit": the parent's binding;
//   - "sonnet", "opus", "haiku": that Anthropic model, only when the parent
//     runs on anthropic (an error otherwise: the alias names no model of
//     another provider);
//   - "PROVIDER/MODEL" or "script:PATH": that binding, as model.ParseBinding
//     reads it; another provider than the parent's is allowed;
//   - a bare model id: that model on the parent's provider.
//
// A binding on the parent's provider keeps the parent's BaseURL. Errors name
// the agent and say what to write instead. Safe for concurrent use.
func ResolveModel(p Profile, parent model.Binding) (model.Binding, error) {
	raw := p.Model
	if raw == "" {
		return parent, nil
	}
	if reason := modelSyntaxProblem(raw); reason != "" {
		return model.Binding{}, fmt.Errorf("agent %q: %s", p.Name, reason)
	}
	written := strings.TrimSpace(raw)
	lower := strings.ToLower(written)
	if lower == "inherit" {
		return parent, nil
	}
	if id, ok := ClaudeModelAliases[lower]; ok {
		if parent.Provider != "anthropic" {
			return model.Binding{}, fmt.Errorf("agent %q: model %q is a Claude alias, which only maps to a model on the anthropic provider, and this agent's parent runs on %s; in %s write model: PROVIDER/MODEL (e.g. anthropic/%s or %s), or model: inherit",
				p.Name, written, describeBinding(parent), p.Source, id, describeBinding(parent))
		}
		return model.Binding{Provider: "anthropic", Model: id, BaseURL: parent.BaseURL}, nil
	}
	if strings.Contains(written, "/") || strings.HasPrefix(written, "script:") {
		b, err := model.ParseBinding(written)
		if err != nil {
			return model.Binding{}, fmt.Errorf("agent %q: %w", p.Name, err)
		}
		if b.Provider == parent.Provider && b.Provider != "script" {
			b.BaseURL = parent.BaseURL
		}
		return b, nil
	}
	switch parent.Provider {
	case "":
		return model.Binding{}, fmt.Errorf("agent %q: model %q names no provider and the parent's provider is unknown; write model: PROVIDER/MODEL (e.g. anthropic/%s)", p.Name, written, written)
	case "script":
		return model.Binding{}, fmt.Errorf("agent %q: model %q names no provider and the parent runs on the script model (%s); write model: PROVIDER/MODEL, script:PATH, or inherit", p.Name, written, describeBinding(parent))
	}
	return model.Binding{Provider: parent.Provider, Model: written, BaseURL: parent.BaseURL}, nil
}

// modelSyntaxProblem says why a `model:` value can never resolve, whatever
// the parent runs on, or returns "".
func modelSyntaxProblem(raw string) string {
	written := strings.TrimSpace(raw)
	if written == "" {
		return "model is blank; write inherit, sonnet, opus, haiku, a model id or PROVIDER/MODEL, or remove the line to use the parent's model"
	}
	if strings.HasPrefix(written, "script:") {
		if _, err := model.ParseBinding(written); err != nil {
			return err.Error()
		}
		return ""
	}
	if strings.IndexFunc(written, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Sprintf("model %q contains a space; write a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5)", written)
	}
	if strings.Contains(written, "/") {
		if _, err := model.ParseBinding(written); err != nil {
			return err.Error()
		}
	}
	return ""
}

func describeBinding(b model.Binding) string {
	if b.Provider == "" {
		return "an unknown provider"
	}
	return b.String()
}
