package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/inkdev/ink/model"
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
		Schema: schema([]string{"pattern"},
			prop{"pattern", "string", "Regular expression to search for (Go RE2 syntax)."},
			prop{"path", "string", "File or directory to search (default: the working directory)."},
			prop{"glob", "string", `Only search files whose name or relative path matches this glob, e.g. "*.go", "*.{ts,tsx}" or "src/**/*.py".`},
		),
	}
}

func (t *grepTool) Safe() bool { return true }

type grepArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

func (t *grepTool) Run(ctx context.Context, raw json.RawMessage) Result {
	var a grepArgs
	if err := decodeArgs("grep", raw, &a, []string{"pattern", "path", "glob"}); err != nil {
		return errorResult("grep: %v", err)
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
	fi, err := os.Stat(start)
	if err != nil {
		return errorResult("grep: %s", statProblem(t.env.display(start), err))
	}

	s := &grepSearch{env: t.env, re: re, max: t.env.GrepMaxMatches}
	switch {
	case fi.Mode().IsRegular():
		s.file(ctx, start)
	case !fi.IsDir():
		return errorResult("grep: %s is not a regular file or directory (%s)", t.env.display(start), fi.Mode().Type())
	default:
		err = walkTree(ctx, start, func(real, rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() {
				return nil
			}
			if glob != nil && !glob.matchBaseOrPath(rel) {
				return nil
			}
			s.file(ctx, real)
			return nil
		})
		if err != nil && ctx.Err() == nil {
			return errorResult("grep: %s: %v", t.env.display(start), unwrapPathError(err))
		}
	}
	if ctx.Err() != nil {
		return errorResult("grep: interrupted: %v; matches so far:\n%s", context.Cause(ctx), s.out.String())
	}
	if s.found == 0 {
		return Result{Content: fmt.Sprintf("no matches for %q in %s", a.Pattern, t.env.display(start))}
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

// file searches one regular file, skipping it when it is binary or
// unreadable, and stopping early when ctx is done.
func (s *grepSearch) file(ctx context.Context, real string) {
	f, err := os.Open(real)
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
	name := s.env.display(real)
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
			fmt.Fprintf(&s.out, "%s:%d: %s\n", name, n, clipLine(text, len(text)))
		}
	}
}

// unwrapRegexpError drops the "error parsing regexp: " prefix that repeats
// what the caller already says.
func unwrapRegexpError(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
