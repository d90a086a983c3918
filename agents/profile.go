package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Profile is one agent profile as read from its file.
//
// A Profile is a plain value; Set hands out copies, so a caller may keep or
// change one without affecting anyone else.
type Profile struct {
	// Name is what a task call gives as `agent`, as written in the file
	// (Claude Code names may hold spaces: "Python Testing Expert").
	// Required.
	Name string
	// Slug is Name in lower case with every run of other characters than
	// letters, digits, '_' and '.' turned into one '-' ("python-testing-expert").
	// A task call may give it instead of Name.
	Slug string
	// Description tells the main agent when to use this agent. Required.
	Description string
	// Tools are ink tool names in the order listed, mapped from Claude Code
	// names and without duplicates. nil means the parent's tools; an empty,
	// non-nil slice means none (every listed tool was dropped).
	Tools []string
	// DroppedTools are the names in `tools:`, as written, that ink has no
	// tool for (Claude Code tools such as WebFetch or TaskCreate, MCP tools,
	// argument patterns such as Bash(git:*), unknown names). They are left
	// out of Tools with one note; the agent still runs. nil when none.
	DroppedTools []string
	// UnknownTools are the DroppedTools that no one knows (neither ink nor
	// Claude Code), usually typos; `ink agents check` warns about them.
	UnknownTools []string
	// Model is the `model:` field as written ("" when absent); see
	// ResolveModel.
	Model string
	// Timeout is the `timeout:` field; 0 when absent.
	Timeout time.Duration
	// Worktree is the `worktree:` field (or Claude Code's
	// `isolation: worktree`); nil when absent.
	Worktree *bool
	// Thinking is the thinking level, lower case; "" when absent.
	Thinking string
	// MaxTurns is the `maxTurns:` field (Claude Code's too): the most model
	// turns an attempt of this agent may take; 0 when absent.
	MaxTurns int
	// ContextWindow is the `contextWindow:` field: the model's context
	// window in tokens, overriding what ink knows of the model; 0 when
	// absent.
	ContextWindow int64
	// Sandbox is the `sandbox:` field, the bash sandbox mode: one of
	// SandboxModes, or "" when absent (ink's default applies).
	Sandbox string
	// Writable are the `writable:` directories bash may write besides the
	// agent's root. Parse keeps them as written (cleaned); Load makes
	// relative ones absolute against LoadOptions.ProjectRoot and "~/"
	// against LoadOptions.Home. nil when absent.
	Writable []string
	// Network is the `network:` field: whether bash may reach the
	// network; nil when absent (the run's --network decides).
	Network *bool
	// Launcher is the `launcher:` field: where the agent's workers run,
	// one of Launchers; "" when absent (the run's --launcher decides).
	Launcher Launcher
	// Reloaded says the file (in this version) was loaded by a reload
	// while the run was going, not when it started: written then, perhaps
	// by an agent. Such a profile may set no sandbox field (sandbox:,
	// writable:, network:). Load never sets it; Watch does.
	Reloaded bool
	// Body is the profile's prompt: everything after the frontmatter,
	// trimmed, with LF line endings.
	Body string
	// Source is the absolute path of the file.
	Source string
	// Dir is the absolute path of the profile directory the file was loaded
	// from (for a file in a subdirectory, the top profile directory).
	Dir string
	// RoleSHA256 is the lowercase hex SHA-256 of the file's raw bytes, as
	// read (before a byte order mark or CRLF line endings are normalised).
	// Any edit to the file changes it.
	RoleSHA256 string
	// StrictYAML is why strict YAML rejected the frontmatter when ink read
	// it line by line instead, as Claude Code does (see Parse); nil when
	// the frontmatter is valid YAML. `ink agents check --strict` reports it.
	StrictYAML *Problem
	// Notes say what ink changed or ignored: dropped tools, ignored fields,
	// a duplicate name.
	Notes []string
	// UnknownFields are the frontmatter keys that neither ink nor Claude
	// Code knows (usually typos such as "modle"); `ink agents check` warns
	// about them. nil when none.
	UnknownFields []string
	// Extra holds the frontmatter fields ink does not use (color,
	// permissionMode, hooks, ...), decoded from YAML; nil when there are none.
	Extra map[string]any
}

// ThinkingLevels lists the values `thinking:` accepts, from least to most.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// SandboxModes lists the values `sandbox:` accepts, from most to least
// confined.
var SandboxModes = []string{"read-only", "workspace-write", "danger-full-access"}

// Launcher is a value of a profile's `launcher:` field: a closed set.
type Launcher string

// The launchers a profile may ask for.
const (
	// LauncherLocal runs the agent's workers on this machine.
	LauncherLocal Launcher = "local"
	// LauncherRemote runs them through the run's remote launcher
	// (--launcher exec:COMMAND or kube), which the user must have given.
	LauncherRemote Launcher = "remote"
	// LauncherKube runs them in Pods, which needs the run's --launcher kube.
	LauncherKube Launcher = "kube"
)

// Launchers are the values of `launcher:`, in the order messages list them.
var Launchers = []Launcher{LauncherLocal, LauncherRemote, LauncherKube}

// claudeCodeFields are the frontmatter keys Claude Code's agents use that
// ink does not: they are kept in Extra with a note, without a warning.
var claudeCodeFields = map[string]bool{
	"color": true, "permissionMode": true, "hooks": true, "skills": true, "mcpServers": true,
	"memory": true, "effort": true, "background": true, "initialPrompt": true,
	"version": true, "author": true, "tags": true,
}

// Reasons Parse gives, held exactly by tests.
const (
	reasonMissingName        = `missing required field "name": add a line "name: my-agent" to the frontmatter`
	reasonMissingDescription = `missing required field "description": add a line "description: when to use this agent" to the frontmatter`
	reasonNotMapping         = `the frontmatter must be YAML "key: value" lines`
	maxNameBytes             = 64
)

// Parse reads one profile file: a line "---", YAML frontmatter, a line of
// three or more dashes, then the body. path names the file in errors and
// becomes Source (made absolute) and Dir; data is the file's content.
//
// Claude Code files are read as Claude Code reads them: when strict YAML
// rejects the frontmatter (most often a description holding ": "), its
// top-level "key: value" lines are read one by one, the value being the
// rest of the line, and StrictYAML says why strict YAML failed. Tools ink
// lacks are dropped with a note, never refused.
//
// A file that cannot be used returns a Problem as the error, naming the
// file, the line and what to fix (the first problem by line; when there
// are more, the reason says how many and Lint lists them all). Parse never
// panics and is safe for concurrent use.
func Parse(path string, data []byte) (Profile, error) {
	p, problems := Lint(path, data)
	var errs []Problem
	for _, pr := range problems {
		if !pr.Warning {
			errs = append(errs, pr)
		}
	}
	if len(errs) == 0 {
		return p, nil
	}
	first := errs[0]
	switch len(errs) {
	case 1:
	case 2:
		first.Reason += " (and 1 more problem; `ink agents check` lists it)"
	default:
		first.Reason += fmt.Sprintf(" (and %d more problems; `ink agents check` lists them)", len(errs)-1)
	}
	return Profile{}, first
}

// Lint reads one profile file like Parse and returns every problem it
// finds, errors and warnings, sorted by line. The profile is usable when
// no problem is an error (Warning false); warnings are what ink dropped or
// ignored (tools it lacks, unknown fields). Safe for concurrent use.
func Lint(path string, data []byte) (p Profile, problems []Problem) {
	defer func() {
		// The YAML library is third-party code; a panic in it on some input
		// must not take ink down with it.
		if r := recover(); r != nil {
			p, problems = Profile{}, []Problem{{Path: path, Line: frontmatterOpenerLine, Reason: fmt.Sprintf("cannot parse the frontmatter as YAML (%v)", r)}}
		}
	}()
	source := path
	if abs, err := filepath.Abs(path); err == nil {
		source = abs
	}
	sum := sha256.Sum256(data)
	p = Profile{
		Source:     source,
		Dir:        filepath.Dir(source),
		RoleSHA256: hex.EncodeToString(sum[:]),
	}
	front, body, reason, ok := splitFrontmatter(data)
	if !ok {
		return p, []Problem{{Path: path, Line: frontmatterOpenerLine, Reason: reason}}
	}
	p.Body = body

	fields, strictProblem, final := strictFields(path, front)
	if strictProblem != nil {
		lenient, repeated, ok := lenientFields(front)
		ok = ok && !final
		if !ok {
			strictProblem.Agent = declaredName(front)
			return p, []Problem{*strictProblem}
		}
		fields = lenient
		p.StrictYAML = strictProblem
		short, _, _ := strings.Cut(strings.TrimPrefix(strictProblem.Reason, "invalid YAML: "), " (")
		p.Notes = append(p.Notes, fmt.Sprintf("the frontmatter is not valid YAML (line %d: %s); ink reads it line by line, as Claude Code does (`ink agents check --strict` reports it)", strictProblem.Line, short))
		if note := repeatedNote(fields, repeated); note != "" {
			p.Notes = append(p.Notes, note)
		}
	}
	r := &reader{path: path, p: &p}
	r.read(fields)
	sort.SliceStable(r.problems, func(i, j int) bool { return r.problems[i].Line < r.problems[j].Line })
	if r.hasError() {
		name := p.Name
		if name == "" {
			name = declaredName(front)
		}
		for i := range r.problems {
			r.problems[i].Agent = name
		}
		p = Profile{Source: p.Source, Dir: p.Dir, RoleSHA256: p.RoleSHA256}
	}
	return p, r.problems
}

// strictFields decodes the frontmatter as strict YAML into its top-level
// fields, in order, each with the file line of its key. final marks a
// problem that reading line by line must not get round (YAML aliases).
func strictFields(path, front string) (fields []field, problem *Problem, final bool) {
	for i, tok := range lexer.Tokenize(front) {
		if tok.Type != token.AliasType {
			continue
		}
		// Aliases let a few bytes stand for a huge value (and nothing in a
		// profile needs them); refuse them rather than expand them.
		name := "*"
		if tokens := lexer.Tokenize(front); i+1 < len(tokens) {
			name += tokens[i+1].Value
		}
		return nil, &Problem{Path: path, Line: tokenLine(tok), Reason: fmt.Sprintf("YAML aliases (%s) are not allowed in a profile; write the value out", name)}, true
	}
	var ms yaml.MapSlice
	if err := yaml.UnmarshalWithOptions([]byte(front), &ms); err != nil {
		line, msg := yamlErrorPosition(err)
		if strings.Contains(msg, "where mapping is expected") {
			return nil, &Problem{Path: path, Line: line, Reason: reasonNotMapping}, false
		}
		return nil, &Problem{Path: path, Line: line, Reason: msg + yamlHint(front, line-frontmatterOpenerLine, msg)}, false
	}
	spans := keySpans(front)
	fields = make([]field, 0, len(ms))
	for _, item := range ms {
		key := fmt.Sprint(item.Key)
		sp, ok := spans[key]
		if !ok {
			sp.line = frontmatterOpenerLine + 1
		}
		fields = append(fields, field{key: key, value: item.Value, line: sp.line, raw: sp.raw})
	}
	return fields, nil, false
}

// span is where a top-level key is written: its file line and its value as
// written (the rest of the line and the indented lines under it).
type span struct {
	line int
	raw  string
}

// keySpans maps each top-level key of a frontmatter (plain or quoted, at
// the start of a line) to where its first occurrence is written.
func keySpans(front string) map[string]span {
	spans := map[string]span{}
	lines := strings.Split(front, "\n")
	for i := 0; i < len(lines); i++ {
		text := lines[i]
		if text == "" || startsIndented(text) || strings.HasPrefix(text, "#") {
			continue
		}
		key, rest, ok := strings.Cut(text, ":")
		if !ok {
			continue
		}
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		if _, seen := spans[key]; seen {
			continue
		}
		raw := []string{strings.TrimSpace(rest)}
		for j := i + 1; j < len(lines) && (strings.TrimSpace(lines[j]) == "" || startsIndented(lines[j])); j++ {
			raw = append(raw, lines[j])
		}
		spans[key] = span{line: i + 1 + frontmatterOpenerLine, raw: strings.TrimSpace(strings.Join(raw, "\n"))}
	}
	return spans
}

// declaredName is the name a frontmatter gives on a "name:" line, read
// leniently, or "" when there is none; it only serves messages.
func declaredName(front string) string {
	for _, text := range strings.Split(front, "\n") {
		if m := topLevelKey().FindStringSubmatch(strings.TrimRight(text, " \t")); m != nil && m[1] == "name" {
			return strings.Trim(strings.TrimSpace(m[2]), `"'`)
		}
	}
	return ""
}

func tokenLine(tok *token.Token) int {
	if tok != nil && tok.Position != nil && tok.Position.Line > 0 {
		return tok.Position.Line + frontmatterOpenerLine
	}
	return frontmatterOpenerLine + 1
}

// yamlErrorPosition turns a YAML error into a file line and a reason.
func yamlErrorPosition(err error) (int, string) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return tokenLine(ye.GetToken()), "invalid YAML: " + strings.ReplaceAll(ye.GetMessage(), "\t", `\t`)
	}
	return frontmatterOpenerLine + 1, "invalid YAML: " + err.Error()
}

// yamlHint adds a fix for the most common YAML mistake in profiles: a plain
// value that itself holds ": " (descriptions with "Examples: ..."). line is
// 1-based within the frontmatter.
func yamlHint(front string, line int, msg string) string {
	if strings.Contains(msg, `'\t'`) {
		return " (indent with spaces; YAML does not allow tabs)"
	}
	if !strings.Contains(msg, "mapping value is not allowed") {
		return ""
	}
	lines := strings.Split(front, "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	key, _, ok := strings.Cut(lines[line-1], ":")
	if !ok || key == "" || strings.TrimSpace(key) != key {
		return " (a value that contains \": \" must be quoted or written as a block scalar)"
	}
	return fmt.Sprintf(" (the value of %q contains \": \"; put it in quotes or write it as a block scalar: %q then the text indented on the next lines)", key, key+": |")
}

// repeatedNote says which keys the line-by-line reading found again, and
// that the first of each is kept; "" when none repeats.
func repeatedNote(fields, repeated []field) string {
	if len(repeated) == 0 {
		return ""
	}
	first := map[string]int{}
	for _, f := range fields {
		first[f.key] = f.line
	}
	var order []string
	lines := map[string][]string{}
	for _, f := range repeated {
		if lines[f.key] == nil {
			order = append(order, f.key)
		}
		lines[f.key] = append(lines[f.key], strconv.Itoa(f.line))
	}
	var parts []string
	for _, k := range order {
		word := "line"
		if len(lines[k]) > 1 {
			word = "lines"
		}
		parts = append(parts, fmt.Sprintf("%q again on %s %s (the one on line %d is kept)", k, word, strings.Join(lines[k], ", "), first[k]))
	}
	return "keys given more than once, read as Claude Code reads them: " + strings.Join(parts, "; ")
}

// badName says why a name cannot be used, or "" when it can. Spaces are
// fine (Claude Code names such as "Python Testing Expert"); path
// separators, colons and control characters are not.
func badName(name string) string {
	if len(name) > maxNameBytes {
		return fmt.Sprintf("is longer than %d bytes; use a short name such as code-reviewer", maxNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '/' || r == '\\' || r == ':' || r == unicode.ReplacementChar || (unicode.IsSpace(r) && r != ' ') {
			return "cannot be used: a name has no '/', '\\', ':', tabs or control characters (use letters, digits, '-' and spaces, such as code-reviewer)"
		}
	}
	if Slug(name) == "" {
		return "cannot be used: it needs at least one letter or digit (such as code-reviewer)"
	}
	return ""
}

// Slug is the lower-case hyphenated form of an agent name by which a task
// call may also name it: letters (lower-cased), digits, '_' and '.' are
// kept, and every run of anything else becomes one '-', none at either
// end. Slug("Python Testing Expert") is "python-testing-expert".
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
