package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// findTool is the `find` tool: it lists paths below a directory whose name
// or relative path matches a glob. It is safe for concurrent use.
type findTool struct {
	env *Env
}

var _ Tool = (*findTool)(nil)

func (t *findTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "find",
		Description: "Find files and directories by glob pattern. The pattern is matched against each entry's base name " +
			`and its path relative to the search directory: "*.go" finds Go files at any depth, "cmd/**/main.go" is anchored, ` +
			`** matches any number of directories and {a,b} gives alternatives. ` +
			"Skips .git and node_modules and does not follow symbolic links. " +
			"Paths are printed sorted, relative to the working directory, with a trailing / on directories; " +
			fmt.Sprintf("at most %d are shown.", t.env.FindMaxResults),
		Schema: toolargs.Schema[findArgs](),
	}
}

func (t *findTool) Safe() bool { return true }

// findArgs are find's arguments.
type findArgs struct {
	Pattern string `json:"pattern" jsonschema:"Glob to match, e.g. \"*_test.go\" or \"internal/**/*.{ts,tsx}\"."`
	Path    string `json:"path,omitempty" jsonschema:"Directory to search (default: the working directory)."`
}

func (t *findTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[findArgs]("find", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if strings.TrimSpace(a.Pattern) == "" {
		return errorResult(`find: pattern is required: give a glob such as "*.go"`)
	}
	glob, err := compileGlob(a.Pattern)
	if err != nil {
		return errorResult("find: %v", err)
	}
	if strings.TrimSpace(a.Path) == "" {
		a.Path = "."
	}
	start, err := t.env.resolve(a.Path)
	if err != nil {
		return errorResult("find: %v", err)
	}
	fi, err := t.env.dir.Stat(start.rel)
	if err != nil {
		return errorResult("find: %s", t.env.problem(start, err))
	}
	if !fi.IsDir() {
		return errorResult("find: %s is a file, not a directory; give a directory to search", start.name)
	}
	var found []string
	err = t.env.walkTree(ctx, start, func(w walkEntry) error {
		if glob.matchBaseOrPath(w.rel) {
			name := t.env.display(t.env.realOf(w.at))
			if w.d.IsDir() {
				name += "/"
			}
			found = append(found, name)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return errorResult("find: interrupted: %v", context.Cause(ctx))
		}
		return errorResult("find: %s", t.env.problem(start, err))
	}
	if len(found) == 0 {
		return Result{Content: fmt.Sprintf("no files match %q in %s", a.Pattern, start.name)}
	}
	sort.Strings(found)
	total := len(found)
	if total > t.env.FindMaxResults {
		found = found[:t.env.FindMaxResults]
	}
	out := strings.Join(found, "\n")
	if total > len(found) {
		out += fmt.Sprintf("\n[%d of %d paths shown; %d more not shown: narrow the pattern or path]", len(found), total, total-len(found))
	}
	return Result{Content: out}
}
