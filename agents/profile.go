package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Profile is one agent profile as read from its file.
//
// A Profile is a plain value; Set hands out copies, so a caller may keep or
// change one without affecting anyone else.
type Profile struct {
	// Name is what a task call gives as `agent`. Required.
	Name string
	// Description tells the main agent when to use this agent. Required.
	Description string
	// Tools are ink tool names in the order listed, mapped from Claude Code
	// names and without duplicates. nil means the parent's tools; an empty,
	// non-nil slice means none (every listed tool was dropped).
	Tools []string
	// UnknownTools are the names in `tools:`, as written, that are neither
	// ink's tools nor Claude Code tools ink lacks (those are dropped with a
	// note); usually typos. A task naming the agent is refused until they
	// are fixed. nil when there are none.
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
	// Body is the profile's prompt: everything after the frontmatter,
	// trimmed, with LF line endings.
	Body string
	// Source is the absolute path of the file.
	Source string
	// Dir is the absolute path of the profile directory the file was loaded
	// from.
	Dir string
	// RoleSHA256 is the lowercase hex SHA-256 of the file's raw bytes, as
	// read (before a byte order mark or CRLF line endings are normalised).
	// Any edit to the file changes it.
	RoleSHA256 string
	// Notes say what ink changed or ignored: dropped tools, ignored fields.
	Notes []string
	// Extra holds the frontmatter fields ink does not use (color,
	// permissionMode, hooks, ...), decoded from YAML; nil when there are none.
	Extra map[string]any
}

// ThinkingLevels lists the values `thinking:` accepts, from least to most.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// Reasons Parse gives, held exactly by tests.
const (
	reasonMissingName        = `missing required field "name": add a line "name: my-agent" to the frontmatter`
	reasonMissingDescription = `missing required field "description": add a line "description: when to use this agent" to the frontmatter`
	reasonNotMapping         = `the frontmatter must be YAML "key: value" lines`
	maxNameBytes             = 64
)

// Parse reads one profile file: a line "---", YAML frontmatter, a line
// "---", then the body. path names the file in errors and becomes Source
// (made absolute) and Dir; data is the file's content.
//
// A file that cannot be used returns a Problem as the error, naming the file,
// the line and what to fix. Parse never panics and is safe for concurrent use.
func Parse(path string, data []byte) (p Profile, err error) {
	defer func() {
		// The YAML parser is third-party code; a panic in it on some input
		// must not take ink down with it.
		if r := recover(); r != nil {
			p, err = Profile{}, Problem{Path: path, Line: frontmatterOpenerLine, Reason: fmt.Sprintf("cannot parse the frontmatter as YAML (%v)", r)}
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
	fail := func(line int, format string, args ...any) (Profile, error) {
		return Profile{}, Problem{Path: path, Line: line, Reason: fmt.Sprintf(format, args...)}
	}

	front, body, reason, ok := splitFrontmatter(data)
	if !ok {
		return fail(frontmatterOpenerLine, "%s", reason)
	}
	p.Body = body

	file, err := parser.ParseBytes([]byte(front), 0)
	if err != nil {
		line, msg := yamlErrorPosition(err)
		return fail(line, "%s", msg+yamlHint(front, line-frontmatterOpenerLine, msg))
	}
	var fields []*ast.MappingValueNode
	for i, doc := range file.Docs {
		if i > 0 {
			return fail(nodeLine(doc.Body), "%s", reasonNotMapping)
		}
		switch body := doc.Body.(type) {
		case nil:
		case *ast.MappingNode:
			fields = body.Values
		case *ast.MappingValueNode:
			fields = []*ast.MappingValueNode{body}
		default:
			return fail(nodeLine(body), "%s", reasonNotMapping)
		}
	}
	for _, doc := range file.Docs {
		if doc.Body == nil {
			continue
		}
		if aliases := ast.Filter(ast.AliasType, doc.Body); len(aliases) > 0 {
			// Aliases let a few bytes stand for a huge value (and nothing in
			// a profile needs them); refuse them rather than expand them.
			return fail(nodeLine(aliases[0]), "YAML aliases (%s) are not allowed in a profile; write the value out", strings.TrimSpace(aliases[0].String()))
		}
	}
	var nameSeen, descriptionSeen bool
	var denied []string
	var deniedLine int
	var isolationWorktree bool
	for _, field := range fields {
		key := field.Key.GetToken().Value
		line := nodeLine(field.Key)
		var value any
		if err := yaml.NodeToValue(field.Value, &value); err != nil {
			line, msg := yamlErrorPosition(err)
			return fail(line, "%s", msg)
		}
		shown := shownValue(field.Value)
		switch key {
		case "name":
			nameSeen = true
			name, ok := scalarText(value)
			name = strings.TrimSpace(name)
			if !ok && value != nil {
				return fail(line, "name must be a single word such as code-reviewer; got %s", shown)
			}
			if name == "" {
				return fail(line, "%s", reasonMissingName)
			}
			if why := badName(name); why != "" {
				return fail(line, "name %q %s", name, why)
			}
			p.Name = name
		case "description":
			descriptionSeen = true
			text, ok := scalarText(value)
			text = strings.TrimSpace(text)
			if !ok && value != nil {
				return fail(line, "description must be text (quote it, or write it as a block scalar: \"description: |\"); got %s", shown)
			}
			if text == "" {
				return fail(line, "%s", reasonMissingDescription)
			}
			p.Description = text
		case "tools":
			names, ok := toolList(value)
			if !ok {
				return fail(line, "tools must be a comma-separated list (tools: Read, Grep) or a YAML list of tool names; got %s", shown)
			}
			if names == nil {
				p.Notes = append(p.Notes, `"tools" is empty; the agent gets its parent's tools (remove the line, or list the tools it needs)`)
				continue
			}
			if len(names) == 1 && names[0] == "*" {
				p.Notes = append(p.Notes, `"tools: *" gives the agent its parent's tools`)
				continue
			}
			p.Tools = []string{}
			for _, written := range names {
				name, note := inkToolName(written)
				if note != "" && !knownToolElsewhere(written) {
					p.UnknownTools = appendUnique(p.UnknownTools, written)
					note = fmt.Sprintf("tool %q is unknown (ink's tools: %s); a task with this agent is refused until the tools: line is fixed", written, strings.Join(InkTools, ", "))
				}
				if note != "" {
					p.Notes = append(p.Notes, note)
					continue
				}
				p.Tools = appendUnique(p.Tools, name)
			}
			if len(p.Tools) == 0 {
				p.Notes = append(p.Notes, "none of the listed tools exists in ink; the agent runs without tools")
			}
		case "disallowedTools":
			names, ok := toolList(value)
			if !ok {
				return fail(line, "disallowedTools must be a comma-separated list or a YAML list of tool names; got %s", shown)
			}
			for _, written := range names {
				name, note := deniedToolName(written)
				if note != "" {
					p.Notes = append(p.Notes, note)
				}
				if name != "" {
					denied = appendUnique(denied, name)
					deniedLine = line
				}
			}
		case "model":
			raw, ok := value.(string)
			if !ok {
				return fail(line, "model must be inherit, sonnet, opus, haiku, a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5); got %s (remove the line to use the parent's model)", shown)
			}
			if reason := modelSyntaxProblem(raw); reason != "" {
				return fail(line, "%s", reason)
			}
			p.Model = raw
		case "timeout":
			seconds, ok := positiveSeconds(value)
			if !ok {
				return fail(line, "timeout must be a positive whole number of seconds (e.g. timeout: 600); got %s", shown)
			}
			p.Timeout = time.Duration(seconds) * time.Second
		case "worktree":
			b, ok := boolValue(value)
			if !ok {
				return fail(line, "worktree must be true or false; got %s", shown)
			}
			p.Worktree = &b
		case "thinking":
			level, ok := value.(string)
			level = strings.ToLower(strings.TrimSpace(level))
			if !ok || !contains(ThinkingLevels, level) {
				return fail(line, "thinking must be one of %s; got %s", strings.Join(ThinkingLevels, ", "), shown)
			}
			p.Thinking = level
		case "isolation":
			if s, _ := value.(string); strings.TrimSpace(s) == "worktree" {
				isolationWorktree = true
			} else {
				p.Notes = append(p.Notes, fmt.Sprintf(`field "isolation" is %s, which ink does not use; ignored (ink knows isolation: worktree)`, shown))
			}
		default:
			if p.Extra == nil {
				p.Extra = map[string]any{}
			}
			p.Extra[key] = value
			p.Notes = append(p.Notes, fmt.Sprintf("field %q is not used by ink; ignored", key))
		}
	}
	if !nameSeen {
		return fail(frontmatterOpenerLine, "%s", reasonMissingName)
	}
	if !descriptionSeen {
		return fail(frontmatterOpenerLine, "%s", reasonMissingDescription)
	}
	if isolationWorktree {
		if p.Worktree == nil {
			yes := true
			p.Worktree = &yes
			p.Notes = append(p.Notes, "isolation: worktree is read as worktree: true")
		} else if !*p.Worktree {
			p.Notes = append(p.Notes, "isolation: worktree is overridden by worktree: false")
		}
	}
	if deniedLine > 0 {
		p.Tools = withoutDenied(p.Tools, denied)
		p.Notes = append(p.Notes, fmt.Sprintf("disallowedTools (line %d): the agent gets %s", deniedLine, describeTools(p.Tools)))
	}
	return p, nil
}

// withoutDenied removes denied names from tools. When tools is nil (the
// parent's tools), it starts from ink's tools other than task, which a child
// is granted only while depth allows.
func withoutDenied(tools, denied []string) []string {
	if tools == nil {
		for _, name := range InkTools {
			if name != "task" {
				tools = append(tools, name)
			}
		}
	}
	kept := []string{}
	for _, name := range tools {
		if !contains(denied, name) {
			kept = append(kept, name)
		}
	}
	return kept
}

func describeTools(tools []string) string {
	if len(tools) == 0 {
		return "no tools"
	}
	return strings.Join(tools, ", ")
}

// yamlErrorPosition turns a YAML error into a file line and a reason.
func yamlErrorPosition(err error) (int, string) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line := frontmatterOpenerLine + 1
		if tok := ye.GetToken(); tok != nil && tok.Position != nil && tok.Position.Line > 0 {
			line = tok.Position.Line + frontmatterOpenerLine
		}
		return line, "invalid YAML: " + strings.ReplaceAll(ye.GetMessage(), "\t", `\t`)
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

// nodeLine is the file line of a frontmatter node.
func nodeLine(n ast.Node) int {
	if n == nil {
		return frontmatterOpenerLine + 1
	}
	if tok := n.GetToken(); tok != nil && tok.Position != nil && tok.Position.Line > 0 {
		return tok.Position.Line + frontmatterOpenerLine
	}
	return frontmatterOpenerLine + 1
}

// shownValue renders a field's value for a message: as written, quoted, or
// "nothing" when blank.
func shownValue(n ast.Node) string {
	if n == nil {
		return "nothing"
	}
	if _, null := n.(*ast.NullNode); null {
		return "nothing"
	}
	text := strings.TrimSpace(n.String())
	if text == "" {
		return "nothing"
	}
	const limit = 60
	if len(text) > limit {
		text = truncateUTF8(text, limit)
	}
	return strconv.Quote(text)
}

// scalarText renders a YAML scalar (string, number, bool) as text.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case uint64, int64, int, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}

// badName says why a name cannot be used, or "" when it can.
func badName(name string) string {
	if len(name) > maxNameBytes {
		return fmt.Sprintf("is longer than %d bytes; use a short name such as code-reviewer", maxNameBytes)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' || r == '\\' || r == ':' || r == unicode.ReplacementChar {
			return "cannot be used: a name has no spaces, '/', '\\' or ':' (use letters, digits and '-', such as code-reviewer)"
		}
	}
	return ""
}

// toolList reads `tools:` as a comma-separated string or a YAML list of
// strings. It returns nil (and true) for a blank value.
func toolList(v any) ([]string, bool) {
	var names []string
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				names = append(names, part)
			}
		}
	case []any:
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, false
			}
			if s = strings.TrimSpace(s); s != "" {
				names = append(names, s)
			}
		}
	default:
		return nil, false
	}
	return names, true
}

// positiveSeconds reads a whole, positive number of seconds that fits a
// time.Duration.
func positiveSeconds(v any) (int64, bool) {
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	var n int64
	switch v := v.(type) {
	case uint64:
		if v > uint64(maxSeconds) {
			return 0, false
		}
		n = int64(v)
	case int64:
		n = v
	case int:
		n = int64(v)
	case string:
		parsed, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, false
		}
		n = parsed
	default:
		return 0, false
	}
	if n <= 0 || n > maxSeconds {
		return 0, false
	}
	return n, true
}

// boolValue reads a YAML bool or the strings true/false in any case.
func boolValue(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

func appendUnique(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}
