package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/inkdev/ink/model"
)

// ModelAliasesFile is the file under INK_HOME that maps Claude Code's model
// aliases to models of other providers.
const ModelAliasesFile = "models.yaml"

// ModelAliases is the user's mapping of Claude Code's model aliases
// (sonnet, opus, haiku, fable) to bindings, used when a profile names an
// alias and its parent does not run on anthropic. It comes from
// $INK_HOME/models.yaml:
//
//	aliases:
//	  sonnet: openai/gpt-5
//	  haiku: ollama/qwen3
//
// and from the variables INK_MODEL_SONNET, INK_MODEL_OPUS, INK_MODEL_HAIKU
// and INK_MODEL_FABLE, which win over the file. A ModelAliases never
// changes once loaded and is safe for concurrent use; the zero value (or
// nil) maps nothing.
type ModelAliases struct {
	// File is the path of models.yaml, whether or not it exists.
	File string
	// targets maps an alias to its binding and where that was set.
	targets map[string]aliasTarget
	// err is why the file could not be used; an alias that needs the
	// mapping fails with it.
	err error
}

type aliasTarget struct {
	binding model.Binding
	from    string // "INK_MODEL_SONNET" or "PATH:LINE"
}

// modelsFile is the on-disk form of models.yaml, read strictly: unknown
// keys are errors.
type modelsFile struct {
	Aliases struct {
		Sonnet string `yaml:"sonnet"`
		Opus   string `yaml:"opus"`
		Haiku  string `yaml:"haiku"`
		Fable  string `yaml:"fable"`
	} `yaml:"aliases"`
}

// AliasEnvVar is the variable that maps alias (sonnet, ...) to a model:
// INK_MODEL_SONNET.
func AliasEnvVar(alias string) string { return "INK_MODEL_" + strings.ToUpper(alias) }

// LoadModelAliases reads $INK_HOME/models.yaml (a missing file maps
// nothing) and the INK_MODEL_<ALIAS> variables of env (nil = the process
// environment). A value is PROVIDER/MODEL or script:PATH (a relative path
// is read from the file's directory, or for a variable from the current
// directory).
//
// A file that is not valid, or a value that names no model, is an error
// naming the file and line (or the variable) and how to fix it. The
// returned ModelAliases is usable even then: it keeps the variables that
// are fine and fails, with that error, every alias that would need the
// file.
func LoadModelAliases(inkHome string, env func(string) string) (*ModelAliases, error) {
	if env == nil {
		env = os.Getenv
	}
	a := &ModelAliases{targets: map[string]aliasTarget{}}
	if inkHome != "" {
		a.File = filepath.Join(inkHome, ModelAliasesFile)
		a.err = a.readFile()
	}
	var envErrs []error
	for _, alias := range claudeAliasNames() {
		name := AliasEnvVar(alias)
		value := strings.TrimSpace(env(name))
		if value == "" {
			continue
		}
		b, err := aliasBinding(value, "")
		if err != nil {
			envErrs = append(envErrs, fmt.Errorf("%s=%s: %v; set it to PROVIDER/MODEL (e.g. openai/gpt-5) or unset it", name, value, err))
			continue
		}
		a.targets[alias] = aliasTarget{binding: b, from: name}
	}
	a.err = errors.Join(append([]error{a.err}, envErrs...)...)
	return a, a.err
}

// readFile reads models.yaml into a.targets; a missing file is fine.
func (a *ModelAliases) readFile() error {
	data, err := os.ReadFile(a.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: cannot read it: %v", a.File, unwrapPathError(err))
	}
	var file modelsFile
	if err := yaml.UnmarshalWithOptions(data, &file, yaml.Strict()); err != nil {
		line, msg := yamlErrorPosition(err)
		line -= frontmatterOpenerLine // a whole file, not a frontmatter
		msg = strings.TrimPrefix(msg, "invalid YAML: ")
		if strings.HasPrefix(msg, "unknown field") {
			msg += fmt.Sprintf(`; the file holds "aliases:" with any of %s, each mapped to PROVIDER/MODEL`, strings.Join(claudeAliasNames(), ", "))
		}
		return fmt.Errorf("%s:%d: %s (example: \"aliases: {sonnet: openai/gpt-5, haiku: ollama/qwen3}\")", a.File, max(line, 1), msg)
	}
	spans := aliasLines(string(data))
	for alias, value := range map[string]string{
		"sonnet": file.Aliases.Sonnet, "opus": file.Aliases.Opus, "haiku": file.Aliases.Haiku, "fable": file.Aliases.Fable,
	} {
		if strings.TrimSpace(value) == "" {
			continue
		}
		line := spans[alias]
		b, err := aliasBinding(value, filepath.Dir(a.File))
		if err != nil {
			return fmt.Errorf("%s:%d: alias %s: %v; write PROVIDER/MODEL such as openai/gpt-5 or ollama/qwen3", a.File, line, alias, err)
		}
		a.targets[alias] = aliasTarget{binding: b, from: fmt.Sprintf("%s:%d", a.File, line)}
	}
	return nil
}

// aliasLines finds the line of each alias key in models.yaml, for messages.
func aliasLines(text string) map[string]int {
	lines := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		for _, alias := range claudeAliasNames() {
			if _, seen := lines[alias]; seen {
				continue
			}
			if strings.HasPrefix(trimmed, alias+":") || strings.Contains(trimmed, "{"+alias+":") || strings.Contains(trimmed, " "+alias+":") {
				lines[alias] = i + 1
			}
		}
	}
	return lines
}

// aliasBinding reads an alias target: PROVIDER/MODEL or script:PATH, a
// relative script path made absolute against dir (or the current
// directory when dir is "").
func aliasBinding(value, dir string) (model.Binding, error) {
	value = strings.TrimSpace(value)
	if !strings.Contains(value, "/") && !strings.HasPrefix(value, "script:") {
		return model.Binding{}, fmt.Errorf("%q names no provider", value)
	}
	b, err := model.ParseBinding(value)
	if err != nil {
		return model.Binding{}, err
	}
	if b.Provider == "script" && !filepath.IsAbs(b.Model) {
		if dir == "" {
			dir, _ = os.Getwd()
		}
		b.Model = filepath.Join(dir, b.Model)
	}
	return b, nil
}

// Lookup returns the binding alias maps to, and where that was set
// (INK_MODEL_SONNET, or models.yaml and its line). ok is false when
// nothing maps it; err is the file's problem when it could not be read.
func (a *ModelAliases) Lookup(alias string) (b model.Binding, from string, ok bool, err error) {
	if a == nil {
		return model.Binding{}, "", false, nil
	}
	if t, found := a.targets[strings.ToLower(alias)]; found {
		return t.binding, t.from, true, nil
	}
	return model.Binding{}, "", false, a.err
}

// Err is why the mapping could not be read in full (a bad models.yaml or
// INK_MODEL_ variable), nil when it could.
func (a *ModelAliases) Err() error {
	if a == nil {
		return nil
	}
	return a.err
}

// Mapped returns each mapped alias with its binding.
func (a *ModelAliases) Mapped() map[string]model.Binding {
	out := map[string]model.Binding{}
	if a == nil {
		return out
	}
	for alias, t := range a.targets {
		out[alias] = t.binding
	}
	return out
}

// claudeAliasNames are the aliases in a stable order.
func claudeAliasNames() []string {
	names := make([]string, 0, len(ClaudeModelAliases))
	for name := range ClaudeModelAliases {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
