package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/toolargs"
)

// grepMaxLine is the longest line grep scans; the rest of a file with a
// longer line is skipped.
const grepMaxLine = 4 << 20

// grepTool is the `grep` tool: it searches file contents with a Go regular
// expression. It is safe for concurrent use.
type grepTool struct {
	env *Env
}

var _ Tool = (*grepTool)(nil)

func (t *grepTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "grep",
		Description: "Search file contents for a regular expression (Go RE2 syntax; prefix (?i) to ignore case). " +
			"Searches one file, or every text file below a directory, skipping .git, node_modules and binary files; " +
			"symbolic links inside a directory are not followed. " +
			"Each match is printed as path:line: text, with paths relative to the working directory. " +
			fmt.Sprintf("At most %d matches are shown; a note says how many more there were.", t.env.GrepMaxMatches),
		Schema: toolargs.Schema[grepArgs](),
	}
}

func (t *grepTool) Safe() bool { return true }

// grepArgs are grep's arguments.
type grepArgs struct {
	Pattern string `json:"pattern" jsonschema:"Regular expression to search for (Go RE2 syntax)."`
	Path    string `json:"path,omitempty" jsonschema:"File or directory to search (default: the working directory)."`
	Glob    string `json:"glob,omitempty" jsonschema:"Only search files whose name or relative path matches this glob, e.g. \"*.go\", \"*.{ts,tsx}\" or \"src/**/*.py\"."`
}

func (t *grepTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[grepArgs]("grep", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if a.Pattern == "" {
		return errorResult("grep: pattern is required: give a regular expression to search for")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return errorResult("grep: pattern %q is not a valid Go regular expression: %v (escape special characters such as ( [ { . * + ? with \\)", a.Pattern, unwrapRegexpError(err))
	}
	var glob *globPattern
	if strings.TrimSpace(a.Glob) != "" {
		if glob, err = compileGlob(a.Glob); err != nil {
			return errorResult("grep: %v", err)
		}
	}
	if strings.TrimSpace(a.Path) == "" {
		a.Path = "."
	}
	start, err := t.env.resolve(a.Path)
	if err != nil {
		return errorResult("grep: %v", err)
	}
	fi, err := t.env.dir.Stat(start.rel)
	if err != nil {
		return errorResult("grep: %s", t.env.problem(start, err))
	}

	s := &grepSearch{env: t.env, re: re, max: t.env.GrepMaxMatches}
	switch {
	case fi.Mode().IsRegular():
		s.file(ctx, t.env.dir, start.rel, filepath.ToSlash(start.rel))
	case !fi.IsDir():
		return errorResult("grep: %s is not a regular file or directory (%s)", start.name, fi.Mode().Type())
	default:
		err = t.env.walkTree(ctx, start, func(w walkEntry) error {
			if !w.d.Type().IsRegular() {
				return nil
			}
			if glob != nil && !glob.matchBaseOrPath(w.rel) {
				return nil
			}
			s.file(ctx, w.dir, w.d.Name(), w.at)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			return errorResult("grep: %s", t.env.problem(start, err))
		}
	}
	if ctx.Err() != nil {
		return errorResult("grep: interrupted: %v; matches so far:\n%s", context.Cause(ctx), s.out.String())
	}
	if s.found == 0 {
		return Result{Content: fmt.Sprintf("no matches for %q in %s", a.Pattern, start.name)}
	}
	if s.found > s.max {
		fmt.Fprintf(&s.out, "[%d of %d matches shown; %d more not shown: narrow the pattern, path or glob]\n", s.max, s.found, s.found-s.max)
	}
	return Result{Content: strings.ToValidUTF8(strings.TrimSuffix(s.out.String(), "\n"), "\uFFFD")}
}

// grepSearch accumulates the matches of one grep call.
type grepSearch struct {
	env   *Env
	re    *regexp.Regexp
	max   int
	found int
	out   strings.Builder
	br    *bufio.Reader // reused across files
	buf   []byte        // the line scanner's buffer, reused across files
}

// file searches one regular file, name in dir (at relative to Root, for
// showing it), skipping it when it is binary, unreadable or no longer a
// regular file, and stopping early when ctx is done.
func (s *grepSearch) file(ctx context.Context, dir *os.Root, name, at string) {
	f, _, err := openRegular(dir, name)
	if err != nil {
		return
	}
	defer f.Close()
	if s.br == nil {
		s.br = bufio.NewReaderSize(f, 64<<10)
		s.buf = make([]byte, 0, 64<<10)
	} else {
		s.br.Reset(f)
	}
	br := s.br
	head, _ := br.Peek(sniffLen)
	if looksBinary(head) {
		return
	}
	shown := s.env.display(s.env.realOf(at))
	sc := bufio.NewScanner(br)
	sc.Buffer(s.buf[:0], grepMaxLine)
	for n := 1; sc.Scan(); n++ {
		if n%8192 == 0 && ctx.Err() != nil {
			return
		}
		line := sc.Bytes()
		if !s.re.Match(line) {
			continue
		}
		s.found++
		if s.found <= s.max {
			text := strings.TrimRight(string(line), "\r")
			fmt.Fprintf(&s.out, "%s:%d: %s\n", shown, n, clipLine(text, len(text)))
		}
	}
}

// unwrapRegexpError drops the "error parsing regexp: " prefix that repeats
// what the caller already says.
func unwrapRegexpError(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
