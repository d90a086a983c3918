package tools

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// editTool is the `edit` tool: it replaces one exact, unique piece of text
// in a file the agent has read. It is not safe for concurrent use with the
// agent's other edit and write calls (the loop runs it alone); across
// processes the per-file lock serialises it.
type editTool struct {
	env     *Env
	tracker *readTracker
}

var _ Tool = (*editTool)(nil)

func (t *editTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "edit",
		Description: "Replace text in an existing file. oldText must match the file exactly (whitespace and indentation included, " +
			"without read's line-number prefixes) and exactly once; include enough surrounding lines to make it unique. " +
			"newText replaces it (empty deletes it). You must read the file first, and read it again if it changed since; " +
			"the edit is refused otherwise. To create a file use write.",
		Schema: toolargs.Schema[editArgs](),
	}
}

func (t *editTool) Safe() bool { return false }

// editArgs are edit's arguments.
type editArgs struct {
	Path    string `json:"path" jsonschema:"File to edit, relative to the working directory or absolute inside the root."`
	OldText string `json:"oldText" jsonschema:"Exact text to replace; must occur exactly once in the file."`
	NewText string `json:"newText" jsonschema:"Replacement text."`
}

func (t *editTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[editArgs]("edit", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	switch {
	case strings.TrimSpace(a.Path) == "":
		return errorResult("edit: path is required: name the file to edit")
	case a.OldText == "":
		return errorResult("edit: oldText is required: give the exact text to replace (to create or overwrite a whole file, use write)")
	case a.OldText == a.NewText:
		return errorResult("edit: oldText and newText are identical; nothing would change")
	}
	env := t.env
	tg, err := env.resolveForWrite(a.Path)
	if err != nil {
		return errorResult("edit: %v", err)
	}
	name := tg.name

	unlock, err := env.lockFile(ctx, tg.real)
	if err != nil {
		return errorResult("edit: %s: %v", name, err)
	}
	defer unlock()

	fi, err := env.dir.Stat(tg.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("edit: %s does not exist; use write to create a new file", name)
	case err != nil:
		return errorResult("edit: %s", env.problem(tg, err))
	case fi.IsDir():
		return errorResult("edit: %s is a directory, not a file", name)
	case !fi.Mode().IsRegular():
		return errorResult("edit: %s is not a regular file (%s)", name, fi.Mode().Type())
	}
	data, fi, msg := env.readForChange(tg)
	if msg != "" {
		return errorResult("edit: %s", msg)
	}
	if msg := staleRead(t.tracker, tg.real, name, data); msg != "" {
		return errorResult("edit: %s", msg)
	}
	content := string(data)
	oldText, newText := a.OldText, a.NewText
	switch n := countMatches(content, oldText); {
	case n == 0:
		hint := "check whitespace and indentation, leave out read's line-number prefixes, or re-read the file"
		if strings.Contains(content, "\r\n") && !strings.Contains(oldText, "\r\n") && strings.Contains(oldText, "\n") {
			hint = "the file uses CRLF (\\r\\n) line endings; match them in oldText and newText"
		}
		return errorResult("edit: oldText was not found in %s; %s", name, hint)
	case n > 1:
		return errorResult("edit: oldText matches %d places in %s; include more surrounding lines so it matches exactly one", max(strings.Count(content, oldText), 2), name)
	}
	env.hook(hookBeforeWrite)
	at := strings.Index(content, oldText)
	updated := content[:at] + newText + content[at+len(oldText):]
	seen := sha256.Sum256(data)
	switch err := env.replaceFile(tg.rel, []byte(updated), keptMode(fi), &seen); {
	case errors.Is(err, errChanged):
		return errorResult("edit: %s", changedMessage(name))
	case isEscape(err):
		return errorResult("edit: %s; the file was left unchanged", env.problem(tg, err))
	case err != nil:
		return errorResult("edit: %s: %v; the file was left unchanged", name, unwrapPathError(err))
	}
	t.tracker.record(tg.real, sha256.Sum256([]byte(updated)))
	line := strings.Count(content[:at], "\n") + 1
	return Result{Content: fmt.Sprintf("edited %s: replaced %s at line %d with %s",
		name, countLines(oldText), line, countLines(newText))}
}

// readForChange reads the whole regular file at t through the root for
// an edit or write, refusing one this process may not write. It returns
// the content and the file's stat, or a message saying why not.
func (e *Env) readForChange(t target) ([]byte, fs.FileInfo, string) {
	f, fi, err := e.openRegular(t.rel)
	switch {
	case errors.Is(err, errNotRegular):
		return nil, nil, fmt.Sprintf("%s is not a regular file (%s)", t.name, fi.Mode().Type())
	case err != nil:
		return nil, nil, e.problem(t, err)
	}
	defer f.Close()
	if msg := readOnly(f, t.real, t.name, fi); msg != "" {
		return nil, nil, msg
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Sprintf("%s: %v", t.name, unwrapPathError(err))
	}
	return data, fi, ""
}

// keptMode is the part of an existing file's mode a replacement keeps.
func keptMode(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// changedMessage is the refusal of a change to a file that changed since
// the agent last read it.
func changedMessage(name string) string {
	return fmt.Sprintf("%s changed since you last read it; re-read it first, then try again", name)
}

// staleRead returns why a change to the existing file at real (holding
// data now) must be refused under the re-read rule, or "" when the agent
// has read exactly this content.
func staleRead(tr *readTracker, real, name string, data []byte) string {
	seen, unchanged := tr.check(real, sha256.Sum256(data))
	switch {
	case !seen && looksBinary(data):
		return fmt.Sprintf("%s is a binary file, which read cannot show and edit and write do not change; use bash if it really must change", name)
	case !seen:
		return fmt.Sprintf("%s exists and you have not read it; read it first, then try again", name)
	case !unchanged:
		return changedMessage(name)
	}
	return ""
}

// readOnly returns why the open file f (at real, shown as name) may not
// be changed because this process lacks write permission on it, or "".
// Writing through rename would otherwise bypass the file's own mode. The
// kernel is asked about the open file itself (faccessat2 with
// AT_EMPTY_PATH); where it cannot answer that (Linux before 5.8, or a
// seccomp filter), it is asked about the name.
func readOnly(f *os.File, real, name string, fi fs.FileInfo) string {
	var err error
	rc, cerr := f.SyscallConn()
	if cerr == nil {
		cerr = rc.Control(func(fd uintptr) {
			err = unix.Faccessat2(int(fd), "", unix.W_OK, unix.AT_EMPTY_PATH)
		})
	}
	if cerr != nil || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) {
		err = unix.Access(real, unix.W_OK)
	}
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%s is read-only (mode %04o); change its mode with bash first if it really should be modified", name, fi.Mode().Perm())
}

// countMatches counts the places old occurs in s, overlapping ones
// included, stopping at 2 since only "none", "one" and "several" matter.
func countMatches(s, old string) int {
	n := 0
	for i := 0; n < 2; n++ {
		j := strings.Index(s[i:], old)
		if j < 0 {
			break
		}
		i += j + 1
	}
	return n
}

// countLines describes the size of a piece of text in lines.
func countLines(s string) string {
	if s == "" {
		return "nothing"
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}
