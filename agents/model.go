package agents

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/inkdev/ink/model"
)

// ClaudeModelAliases maps Claude Code's model aliases to the Anthropic model
// ids Claude Code sends for them. On anthropic they resolve to these; on
// another provider through ModelAliases.
var ClaudeModelAliases = map[string]string{
	"sonnet": "claude-sonnet-5",
	"opus":   "claude-opus-4-8",
	"haiku":  "claude-haiku-4-5-20251001",
	"fable":  "claude-fable-5",
}

// ResolveModel gives the binding a child with profile p runs on, when its
// parent runs on parent, and at most one note for the user:
//   - "" (no model line) or "inherit": the parent's binding;
//   - "sonnet", "opus", "haiku", "fable": on anthropic, the model Claude
//     Code uses (ClaudeModelAliases); on any other provider, what aliases
//     maps it to (INK_MODEL_<ALIAS> or models.yaml), else the parent's
//     binding with a note saying so and how to map it. An alias that needs
//     a models.yaml that cannot be read is an error;
//   - "PROVIDER/MODEL" or "script:PATH": that binding, as model.ParseBinding
//     reads it; another provider than the parent's is allowed;
//   - a bare model id: that model on the parent's provider.
//
// A binding on the parent's provider keeps the parent's BaseURL. Errors name
// the agent and say what to write instead. aliases may be nil. Safe for
// concurrent use.
func ResolveModel(p Profile, parent model.Binding, aliases *ModelAliases) (b model.Binding, note string, err error) {
	raw := p.Model
	if raw == "" {
		return parent, "", nil
	}
	if reason := modelSyntaxProblem(raw); reason != "" {
		return model.Binding{}, "", fmt.Errorf("agent %q: %s", p.Name, reason)
	}
	written := strings.TrimSpace(raw)
	lower := strings.ToLower(written)
	if lower == "inherit" {
		return parent, "", nil
	}
	if id, ok := ClaudeModelAliases[lower]; ok {
		if parent.Provider == "anthropic" {
			return model.Binding{Provider: "anthropic", Model: id, BaseURL: parent.BaseURL}, "", nil
		}
		target, _, ok, err := aliases.Lookup(lower)
		if err != nil && !ok {
			return model.Binding{}, "", fmt.Errorf("agent %q: model %q needs the alias mapping, which cannot be read: %v", p.Name, written, err)
		}
		if ok {
			if target.Provider == parent.Provider && target.Provider != "script" {
				target.BaseURL = parent.BaseURL
			}
			return target, "", nil
		}
		return parent, fmt.Sprintf("agent %q: model %q is a Claude alias and nothing maps it for %s, so it runs on its parent's model %s; map it with %q under aliases: in %s, or set %s",
			p.Name, written, parent.Provider, describeBinding(parent), lower+": PROVIDER/MODEL", aliasFileShown(aliases), AliasEnvVar(lower)), nil
	}
	if strings.Contains(written, "/") || strings.HasPrefix(written, "script:") {
		b, err := model.ParseBinding(written)
		if err != nil {
			return model.Binding{}, "", fmt.Errorf("agent %q: %w", p.Name, err)
		}
		if b.Provider == parent.Provider && b.Provider != "script" {
			b.BaseURL = parent.BaseURL
		}
		return b, "", nil
	}
	switch parent.Provider {
	case "":
		return model.Binding{}, "", fmt.Errorf("agent %q: model %q names no provider and the parent's provider is unknown; write model: PROVIDER/MODEL (e.g. anthropic/%s)", p.Name, written, written)
	case "script":
		return model.Binding{}, "", fmt.Errorf("agent %q: model %q names no provider and the parent runs on the script model (%s); write model: PROVIDER/MODEL, script:PATH, or inherit", p.Name, written, describeBinding(parent))
	}
	return model.Binding{Provider: parent.Provider, Model: written, BaseURL: parent.BaseURL}, "", nil
}

// aliasFileShown is where messages tell the user to map an alias.
func aliasFileShown(a *ModelAliases) string {
	if a == nil || a.File == "" {
		return "~/.ink/" + ModelAliasesFile
	}
	return a.File
}

// AliasFallback says, for `ink agents check`, when p's model is a Claude
// alias that nothing maps for providers other than anthropic, so that a
// child on such a provider runs on its parent's model; "" when p's model is
// not an alias, or is mapped.
func AliasFallback(p Profile, aliases *ModelAliases) string {
	lower := strings.ToLower(strings.TrimSpace(p.Model))
	id, ok := ClaudeModelAliases[lower]
	if !ok {
		return ""
	}
	if _, _, mapped, _ := aliases.Lookup(lower); mapped {
		return ""
	}
	return fmt.Sprintf("model %q is anthropic/%s on anthropic; on other providers nothing maps it, so the agent runs on its parent's model (map it with %q under aliases: in %s, or set %s)",
		lower, id, lower+": PROVIDER/MODEL", aliasFileShown(aliases), AliasEnvVar(lower))
}

// modelSyntaxProblem says why a `model:` value can never resolve, whatever
// the parent runs on, or returns "".
func modelSyntaxProblem(raw string) string {
	written := strings.TrimSpace(raw)
	if written == "" {
		return "model is blank; write inherit, sonnet, opus, haiku, fable, a model id or PROVIDER/MODEL, or remove the line to use the parent's model"
	}
	if strings.HasPrefix(written, "script:") {
		if _, err := model.ParseBinding(written); err != nil {
			return err.Error()
		}
		return ""
	}
	if strings.IndexFunc(written, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Sprintf("model %q contains a space; write a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-5)", written)
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

// ResolveFlag reads a model the user names on the command line (--model):
// one of Claude Code's aliases (sonnet, opus, haiku, fable, any case) is
// what the user's mapping (INK_MODEL_<ALIAS> or models.yaml) makes it, else
// the Anthropic model Claude Code uses for it; anything else is read by
// model.ParseBinding. An alias whose mapping cannot be read is an error
// saying which file or variable to fix, rather than a guess. aliases may be
// nil. Safe for concurrent use.
func ResolveFlag(s string, aliases *ModelAliases) (model.Binding, error) {
	lower := strings.ToLower(strings.TrimSpace(s))
	id, ok := ClaudeModelAliases[lower]
	if !ok {
		return model.ParseBinding(s)
	}
	target, _, mapped, err := aliases.Lookup(lower)
	if mapped {
		return target, nil
	}
	if err != nil {
		return model.Binding{}, fmt.Errorf("model %q is an alias and its mapping cannot be read: %v", lower, err)
	}
	return model.Binding{Provider: "anthropic", Model: id}, nil
}
