package tools

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// maxLineBytes caps one line shown by read and grep.
const maxLineBytes = 2000

// readTool is the `read` tool: it shows a text file's lines, numbered, and
// records what the agent saw in the shared read tracker. It is safe for
// concurrent use.
type readTool struct {
	env     *Env
	tracker *readTracker
}

var _ Tool = (*readTool)(nil)

func (t *readTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "read",
		Description: "Read a text file. Each line is shown as its line number, a tab, then the line's text; " +
			"the number and tab are not part of the file, so leave them out of edit's oldText. " +
			fmt.Sprintf("Returns at most %d lines or %s per call; ", t.env.ReadMaxLines, byteSize(t.env.ReadMaxBytes)) +
			"a note at the end says how to continue (offset) when the file is longer. " +
			"Use offset (1-based first line) and limit (number of lines) to read part of a large file. " +
			"Directories are refused (use ls) and so are binary files. " +
			"You must read a file before you edit or overwrite it.",
		Schema: toolargs.Schema[readArgs](toolargs.Describe("limit", fmt.Sprintf("Number of lines to show (default %d).", t.env.ReadMaxLines))),
	}
}

func (t *readTool) Safe() bool { return true }

// readArgs are read's arguments; limit's description, which names the
// configured default, is set in Spec.
type readArgs struct {
	Path   string `json:"path" jsonschema:"File to read, relative to the working directory or absolute inside the root."`
	Offset *int   `json:"offset,omitempty" jsonschema:"First line to show, 1-based (default 1)."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"Number of lines to show."`
}

func (t *readTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[readArgs]("read", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if strings.TrimSpace(a.Path) == "" {
		return errorResult("read: path is required: name the file to read")
	}
	offset, limit := 1, t.env.ReadMaxLines
	if a.Offset != nil {
		if *a.Offset < 1 {
			return errorResult("read: offset must be 1 or more (the first line is 1), got %d", *a.Offset)
		}
		offset = *a.Offset
	}
	if a.Limit != nil {
		if *a.Limit < 1 {
			return errorResult("read: limit must be 1 or more, got %d", *a.Limit)
		}
		limit = *a.Limit
	}
	tg, err := t.env.resolve(a.Path)
	if err != nil {
		return errorResult("read: %v", err)
	}
	name := tg.name
	fi, err := t.env.dir.Stat(tg.rel)
	if err != nil {
		return errorResult("read: %s", t.env.problem(tg, err))
	}
	if fi.IsDir() {
		return errorResult("read: %s is a directory; use ls to list it", name)
	}
	if !fi.Mode().IsRegular() {
		return errorResult("read: %s is not a regular file (%s)", name, fi.Mode().Type())
	}
	f, fi, err := t.env.openRegular(tg.rel)
	switch {
	case errors.Is(err, errNotRegular):
		return errorResult("read: %s is not a regular file (%s)", name, fi.Mode().Type())
	case err != nil:
		return errorResult("read: %s", t.env.problem(tg, err))
	}
	defer f.Close()

	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(f, h), 64<<10)
	head, _ := br.Peek(sniffLen)
	if looksBinary(head) {
		return errorResult("read: %s is a binary file (%d bytes); read shows text files only — inspect it with bash (e.g. xxd or file) if you must", name, fi.Size())
	}

	var out strings.Builder
	total, last := 0, 0
	capped := false
	for {
		if total%4096 == 0 && ctx.Err() != nil {
			return errorResult("read: %s: interrupted: %v", name, context.Cause(ctx))
		}
		line, size, err := readLine(br, maxLineBytes+2)
		if size > 0 {
			total++
			if total >= offset && total < offset+limit && !capped {
				text := strings.TrimRight(string(line), "\r\n")
				if size > len(line) {
					full := size
					if err == nil {
						full-- // the '\n'
					}
					text = clipLine(text, full)
				}
				entry := fmt.Sprintf("%6d\t%s\n", total, text)
				if out.Len()+len(entry) > t.env.ReadMaxBytes && last > 0 {
					capped = true
				} else {
					out.WriteString(entry)
					last = total
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errorResult("read: %s: %v", name, err)
		}
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	t.tracker.record(tg.real, sum)

	if total == 0 {
		return Result{Content: fmt.Sprintf("(%s is empty)", name)}
	}
	if offset > total {
		return errorResult("read: offset %d is past the end of %s, which has %d lines", offset, name, total)
	}
	switch {
	case capped:
		fmt.Fprintf(&out, "[output capped at %s: showed lines %d-%d of %d; continue with offset=%d]", byteSize(t.env.ReadMaxBytes), offset, last, total, last+1)
	case last < total:
		fmt.Fprintf(&out, "[showed lines %d-%d of %d; continue with offset=%d to read more]", offset, last, total, last+1)
	}
	return Result{Content: strings.ToValidUTF8(out.String(), "\uFFFD")}
}

// clipLine shortens a line to maxLineBytes on a rune boundary and says
// how long it was (size bytes).
func clipLine(s string, size int) string {
	if len(s) <= maxLineBytes && size <= len(s) {
		return s
	}
	cut := min(maxLineBytes, len(s))
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [line truncated: %d bytes]", s[:cut], size)
}

// readLine reads one line (through its '\n', if any) from br, keeping at
// most keep bytes of it, so a huge line costs no memory. size is the
// line's full length; it is 0 only at the end of the input.
func readLine(br *bufio.Reader, keep int) (line []byte, size int, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if room := keep - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return line, size, err
		}
	}
}
