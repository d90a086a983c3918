package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// lsTool is the `ls` tool: it lists one directory. It is safe for
// concurrent use.
type lsTool struct {
	env *Env
}

var _ Tool = (*lsTool)(nil)

func (t *lsTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "ls",
		Description: "List a directory's entries, sorted by name, hidden ones included. " +
			`Directories end with "/", symbolic links are shown as "name -> target". ` +
			fmt.Sprintf("At most %d entries are shown.", t.env.LsMaxEntries),
		Schema: toolargs.Schema[lsArgs](),
	}
}

func (t *lsTool) Safe() bool { return true }

// lsArgs are ls's arguments.
type lsArgs struct {
	Path string `json:"path,omitempty" jsonschema:"Directory to list (default: the working directory)."`
}

func (t *lsTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[lsArgs]("ls", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if strings.TrimSpace(a.Path) == "" {
		a.Path = "."
	}
	dir, err := t.env.resolve(a.Path)
	if err != nil {
		return errorResult("ls: %v", err)
	}
	name := dir.name
	fi, err := t.env.dir.Stat(dir.rel)
	if err != nil {
		return errorResult("ls: %s", t.env.problem(dir, err))
	}
	if !fi.IsDir() {
		return errorResult("ls: %s is a file, not a directory; use read to see its contents", name)
	}
	entries, err := fs.ReadDir(t.env.dir.FS(), filepath.ToSlash(dir.rel))
	if err != nil {
		return errorResult("ls: %s", t.env.problem(dir, err))
	}
	if len(entries) == 0 {
		return Result{Content: fmt.Sprintf("(%s is an empty directory)", name)}
	}
	var out strings.Builder
	for i, e := range entries {
		if i == t.env.LsMaxEntries {
			fmt.Fprintf(&out, "[%d of %d entries shown; use find with a pattern to narrow]\n", i, len(entries))
			break
		}
		switch {
		case e.IsDir():
			out.WriteString(e.Name() + "/")
		case e.Type()&fs.ModeSymlink != 0:
			target, err := t.env.dir.Readlink(filepath.Join(dir.rel, e.Name()))
			if err != nil {
				target = "?"
			}
			out.WriteString(e.Name() + " -> " + target)
		default:
			out.WriteString(e.Name())
		}
		out.WriteByte('\n')
	}
	return Result{Content: strings.ToValidUTF8(strings.TrimSuffix(out.String(), "\n"), "\uFFFD")}
}
