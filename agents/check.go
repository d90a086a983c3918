package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/inkdev/ink/model"
)

// CheckOptions says how strictly Check reads.
type CheckOptions struct {
	// Strict reports a frontmatter that is not valid YAML as an error even
	// when ink (like Claude Code) can read it line by line.
	Strict bool
	// Aliases is the user's model alias mapping; a profile whose model is a
	// Claude alias that it does not map gets a warning. nil maps nothing.
	Aliases *ModelAliases
	// Parent is the model the agents' parent runs on, when known (such as
	// `--model`); a Claude alias on anthropic needs no mapping, so it gets
	// no warning then. nil when unknown.
	Parent *model.Binding
}

// Check lists every problem of the profile files under dir (read
// recursively, as Load reads it), file by file in walk order, each file's
// problems by line: errors (the file is skipped when loaded: no
// frontmatter, a missing name, a bad field, and with opts.Strict a
// frontmatter that is not valid YAML) and warnings (the file loads, but
// something is dropped or ignored: tools ink lacks, unknown fields, a Claude
// model alias that falls back to the parent's model, a name also used by an
// earlier file, a symbolic link loop). A missing or unreadable dir is an
// error too. An empty result means every file loads as written. Safe for
// concurrent use.
func Check(dir string, opts CheckOptions) []Problem {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	info, err := os.Stat(dir)
	if err != nil {
		return []Problem{{Path: dir, Reason: fmt.Sprintf("cannot read the agents directory: %v", unwrapPathError(err))}}
	}
	if !info.IsDir() {
		return []Problem{{Path: dir, Reason: "not a directory; give a directory of NAME.md profile files"}}
	}
	tree, problem := walkProfiles(dir)
	if problem != nil {
		return []Problem{*problem}
	}
	problems := append([]Problem(nil), tree.warnings...)
	firstSource := map[string]string{}
	for _, path := range tree.files {
		data, err := readProfileFile(path)
		if errors.Is(err, errNotAProfile) {
			continue
		}
		if err != nil {
			problems = append(problems, asProblem(path, err))
			continue
		}
		if collectionDoc(path, data) {
			continue
		}
		p, found := Lint(path, data)
		if p.StrictYAML != nil && opts.Strict {
			strict := *p.StrictYAML
			strict.Reason += " (Claude Code and ink still read it line by line; fix it for other YAML readers)"
			found = append([]Problem{strict}, found...)
			sort.SliceStable(found, func(i, j int) bool { return found[i].Line < found[j].Line })
		}
		problems = append(problems, found...)
		if p.Name == "" {
			continue // not loaded: its errors are above
		}
		if fallback := AliasFallback(p, opts.Aliases); fallback != "" && (opts.Parent == nil || opts.Parent.Provider != "anthropic") {
			problems = append(problems, Problem{Path: path, Line: fieldLine(data, "model"), Reason: fallback, Warning: true})
		}
		if first, ok := firstSource[p.Name]; ok {
			problems = append(problems, Problem{Path: path, Line: fieldLine(data, "name"), Warning: true,
				Reason: fmt.Sprintf("name %q is also used by %s; this later file is the one loaded (rename one of them to keep both)", p.Name, first)})
			continue
		}
		firstSource[p.Name] = path
	}
	return problems
}

// fieldLine finds the file line of the top-level frontmatter field key, 0
// when it is not found.
func fieldLine(data []byte, key string) int {
	front, _, _, ok := splitFrontmatter(data)
	if !ok {
		return 0
	}
	return keySpans(front)[key].line
}
