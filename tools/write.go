package tools

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/model"
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
		Schema: schema([]string{"path", "content"},
			prop{"path", "string", "File to write, relative to the working directory or absolute inside the root."},
			prop{"content", "string", "The complete new content of the file."},
		),
	}
}

func (t *writeTool) Safe() bool { return false }

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (t *writeTool) Run(ctx context.Context, raw json.RawMessage) Result {
	var a writeArgs
	if err := decodeArgs("write", raw, &a, []string{"path", "content"}); err != nil {
		return errorResult("write: %v", err)
	}
	if strings.TrimSpace(a.Path) == "" {
		return errorResult("write: path is required: name the file to write")
	}
	if a.Content == nil {
		return errorResult(`write: content is required: give the file's complete content ("" for an empty file)`)
	}
	real, err := t.env.resolve(a.Path)
	if err != nil {
		return errorResult("write: %v", err)
	}
	name := t.env.display(real)

	unlock, err := t.env.lockFile(ctx, real)
	if err != nil {
		return errorResult("write: %s: waiting for the file lock: %v", name, lockWaitError(ctx, err))
	}
	defer unlock()

	mode := newFileMode
	previous := -1
	fi, err := os.Stat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			return errorResult("write: %s: create parent directories: %v", name, unwrapPathError(err))
		}
	case err != nil:
		return errorResult("write: %s: %v", name, unwrapPathError(err))
	case fi.IsDir():
		return errorResult("write: %s is a directory; give a file path", name)
	case !fi.Mode().IsRegular():
		return errorResult("write: %s is not a regular file (%s)", name, fi.Mode().Type())
	default:
		if msg := readOnly(real, name, fi); msg != "" {
			return errorResult("write: %s", msg)
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return errorResult("write: %s: %v", name, unwrapPathError(err))
		}
		if msg := staleRead(t.tracker, real, name, data); msg != "" {
			return errorResult("write: %s", msg)
		}
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		previous = len(data)
	}
	if t.env.testBeforeWrite != nil {
		t.env.testBeforeWrite()
	}
	content := []byte(*a.Content)
	if err := writeFileAtomic(real, content, mode); err != nil {
		return errorResult("write: %s: %v; nothing was written", name, err)
	}
	t.tracker.record(real, sha256.Sum256(content))
	if previous < 0 {
		return Result{Content: fmt.Sprintf("wrote %s: new file, %d bytes", name, len(content))}
	}
	return Result{Content: fmt.Sprintf("wrote %s: replaced %d bytes with %d bytes", name, previous, len(content))}
}
