package tools

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// newFileMode is the mode of a file write creates.
const newFileMode fs.FileMode = 0o644

// writeTool is the `write` tool: it creates a file, or overwrites one the
// agent has read. It is not safe for concurrent use with the agent's other
// edit and write calls (the loop runs it alone); across processes the
// per-file lock serialises it.
type writeTool struct {
	env     *Env
	tracker *readTracker
}

var _ Tool = (*writeTool)(nil)

func (t *writeTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "write",
		Description: "Write a whole file: create it (missing parent directories are created too) or replace its content. " +
			"Overwriting an existing file requires having read it, and reading it again if it changed since. " +
			"Prefer edit for changing part of a file.",
		Schema: toolargs.Schema[writeArgs](),
	}
}

func (t *writeTool) Safe() bool { return false }

// writeArgs are write's arguments.
type writeArgs struct {
	Path    string `json:"path" jsonschema:"File to write, relative to the working directory or absolute inside the root."`
	Content string `json:"content" jsonschema:"The complete new content of the file."`
}

func (t *writeTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[writeArgs]("write", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if strings.TrimSpace(a.Path) == "" {
		return errorResult("write: path is required: name the file to write")
	}
	env := t.env
	tg, err := env.resolveForWrite(a.Path)
	if err != nil {
		return errorResult("write: %v", err)
	}
	name := tg.name

	unlock, err := env.lockFile(ctx, tg.real)
	if err != nil {
		return errorResult("write: %s: %v", name, err)
	}
	defer unlock()

	mode := newFileMode
	previous := -1
	var seen *[sha256.Size]byte
	fi, err := env.dir.Stat(tg.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := env.dir.MkdirAll(filepath.Dir(tg.rel), 0o755); err != nil {
			if isEscape(err) {
				return errorResult("write: %s", env.problem(tg, err))
			}
			return errorResult("write: %s: create parent directories: %v", name, unwrapPathError(err))
		}
	case err != nil:
		return errorResult("write: %s", env.problem(tg, err))
	case fi.IsDir():
		return errorResult("write: %s is a directory; give a file path", name)
	case !fi.Mode().IsRegular():
		return errorResult("write: %s is not a regular file (%s)", name, fi.Mode().Type())
	default:
		data, fi, msg := env.readForChange(tg)
		if msg != "" {
			return errorResult("write: %s", msg)
		}
		if msg := staleRead(t.tracker, tg.real, name, data); msg != "" {
			return errorResult("write: %s", msg)
		}
		mode = keptMode(fi)
		previous = len(data)
		sum := sha256.Sum256(data)
		seen = &sum
	}
	env.hook(hookBeforeWrite)
	content := []byte(a.Content)
	switch err := env.replaceFile(tg.rel, content, mode, seen); {
	case errors.Is(err, errChanged):
		return errorResult("write: %s", changedMessage(name))
	case errors.Is(err, errAppeared):
		return errorResult("write: %s was created by someone else while you were writing it; read it first, then try again", name)
	case isEscape(err):
		return errorResult("write: %s; nothing was written", env.problem(tg, err))
	case err != nil:
		return errorResult("write: %s: %v; nothing was written", name, unwrapPathError(err))
	}
	t.tracker.record(tg.real, sha256.Sum256(content))
	if previous < 0 {
		return Result{Content: fmt.Sprintf("wrote %s: new file, %d bytes", name, len(content))}
	}
	return Result{Content: fmt.Sprintf("wrote %s: replaced %d bytes with %d bytes", name, previous, len(content))}
}
