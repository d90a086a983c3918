package agents

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
)

// reader checks a profile's fields one by one, filling the profile and
// collecting every problem (it does not stop at the first).
type reader struct {
	path     string
	p        *Profile
	problems []Problem
}

func (r *reader) fail(line int, format string, args ...any) {
	r.problems = append(r.problems, Problem{Path: r.path, Line: line, Reason: fmt.Sprintf(format, args...)})
}

func (r *reader) warn(line int, format string, args ...any) {
	r.problems = append(r.problems, Problem{Path: r.path, Line: line, Reason: fmt.Sprintf(format, args...), Warning: true})
}

func (r *reader) hasError() bool {
	for _, pr := range r.problems {
		if !pr.Warning {
			return true
		}
	}
	return false
}

// read checks every field, then what must hold across fields.
func (r *reader) read(fields []field) {
	p := r.p
	var nameSeen, descriptionSeen bool
	var denied []string
	var deniedLine, toolsLine int
	var isolationWorktree bool
	var dropped droppedTools
	for _, f := range fields {
		value, line := f.value, f.line
		shown := shownValue(value, f.raw)
		switch f.key {
		case "name":
			nameSeen = true
			name, ok := scalarText(value)
			name = strings.TrimSpace(name)
			switch {
			case !ok && value != nil:
				r.fail(line, "name must be text such as code-reviewer; got %s", shown)
			case name == "":
				r.fail(line, "%s", reasonMissingName)
			default:
				if strings.ContainsRune(name, '/') {
					// Claude Code loads such names ("Python DevOps/CI-CD
					// Expert"); a '/' cannot be in an agent's name, so
					// the agent goes by its slug, as names with spaces
					// can.
					slug := Slug(name)
					if slug != "" && badName(slug) == "" {
						p.Notes = append(p.Notes, fmt.Sprintf("name %q holds a '/', which an agent name cannot; the agent is named %s", name, slug))
						p.Name, p.Slug = slug, slug
						continue
					}
				}
				if why := badName(name); why != "" {
					r.fail(line, "name %q %s", name, why)
					continue
				}
				p.Name, p.Slug = name, Slug(name)
			}
		case "description":
			descriptionSeen = true
			text, ok := scalarText(value)
			text = strings.TrimSpace(text)
			switch {
			case !ok && value != nil:
				r.fail(line, "description must be text (quote it, or write it as a block scalar: \"description: |\"); got %s", shown)
			case text == "":
				r.fail(line, "%s", reasonMissingDescription)
			default:
				p.Description = text
			}
		case "tools":
			names, ok := toolList(value)
			switch {
			case !ok:
				r.fail(line, "tools must be a comma-separated list (tools: Read, Grep) or a YAML list of tool names; got %s", shown)
				continue
			case names == nil:
				p.Notes = append(p.Notes, `"tools" is empty; the agent gets its parent's tools (remove the line, or list the tools it needs)`)
				continue
			case len(names) == 1 && names[0] == "*":
				p.Notes = append(p.Notes, `"tools: *" gives the agent its parent's tools`)
				continue
			}
			toolsLine = line
			p.Tools = []string{}
			for _, written := range names {
				name, why := inkToolName(written)
				if why != dropNone {
					dropped.add(written, why)
					continue
				}
				p.Tools = appendUnique(p.Tools, name)
			}
		case "disallowedTools":
			names, ok := toolList(value)
			if !ok {
				r.fail(line, "disallowedTools must be a comma-separated list or a YAML list of tool names; got %s", shown)
				continue
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
				r.fail(line, "model must be inherit, sonnet, opus, haiku, fable, a model id or PROVIDER/MODEL (e.g. anthropic/claude-sonnet-5); got %s (remove the line to use the parent's model)", shown)
				continue
			}
			if reason := modelSyntaxProblem(raw); reason != "" {
				r.fail(line, "%s", reason)
				continue
			}
			p.Model = strings.TrimSpace(raw)
		case "timeout":
			seconds, ok := positiveSeconds(value)
			if !ok {
				r.fail(line, "timeout must be a positive whole number of seconds (e.g. timeout: 600); got %s", shown)
				continue
			}
			p.Timeout = time.Duration(seconds) * time.Second
		case "worktree":
			b, ok := boolValue(value)
			if !ok {
				r.fail(line, "worktree must be true or false; got %s", shown)
				continue
			}
			p.Worktree = &b
		case "thinking":
			level, ok := value.(string)
			level = strings.ToLower(strings.TrimSpace(level))
			if !ok || !slices.Contains(ThinkingLevels, level) {
				r.fail(line, "thinking must be one of %s; got %s", strings.Join(ThinkingLevels, ", "), shown)
				continue
			}
			p.Thinking = level
		case "maxTurns":
			n, ok := positiveCount(value, 1<<20)
			if !ok {
				r.fail(line, "maxTurns must be a positive whole number of model turns (e.g. maxTurns: 40); got %s", shown)
				continue
			}
			p.MaxTurns = int(n)
		case "contextWindow":
			n, ok := tokenCount(value)
			if !ok {
				r.fail(line, "contextWindow must be a positive number of tokens, such as 128000 or 128k; got %s", shown)
				continue
			}
			p.ContextWindow = n
		case "sandbox":
			mode, ok := value.(string)
			mode = strings.ToLower(strings.TrimSpace(mode))
			if !ok || !slices.Contains(SandboxModes, mode) {
				r.fail(line, "sandbox must be one of %s; got %s (remove the line for ink's default, workspace-write)", strings.Join(SandboxModes, ", "), shown)
				continue
			}
			p.Sandbox = mode
		case "writable":
			dirs, ok := toolList(value)
			if !ok {
				r.fail(line, "writable must be a directory, a comma-separated list of directories or a YAML list of them; got %s", shown)
				continue
			}
			for _, dir := range dirs {
				if strings.ContainsRune(dir, 0) {
					r.fail(line, "writable: %q is not a directory path", dir)
					continue
				}
				p.Writable = appendUnique(p.Writable, filepath.Clean(dir))
			}
		case "network":
			b, ok := boolValue(value)
			if !ok {
				r.fail(line, "network must be true or false; got %s (remove the line for ink's default: no network for bash unless ink runs with --network)", shown)
				continue
			}
			p.Network = &b
		case "launcher":
			l, ok := value.(string)
			launcher := Launcher(strings.ToLower(strings.TrimSpace(l)))
			if !ok || !slices.Contains(Launchers, launcher) {
				r.fail(line, "launcher must be one of %s, %s; got %s (remove the line to run where the run's --launcher says)", LauncherLocal, LauncherRemote, shown)
				continue
			}
			p.Launcher = launcher
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
			p.Extra[f.key] = value
			if claudeCodeFields[f.key] {
				p.Notes = append(p.Notes, fmt.Sprintf("field %q is not used by ink; ignored", f.key))
				continue
			}
			p.UnknownFields = append(p.UnknownFields, f.key)
			p.Notes = append(p.Notes, fmt.Sprintf("field %q is not a field ink or Claude Code knows; ignored", f.key))
			r.warn(line, "unknown field %q ignored (ink reads name, description, tools, disallowedTools, model, timeout, worktree, isolation, thinking, maxTurns, contextWindow, sandbox, writable, network)", f.key)
		}
	}
	if !nameSeen {
		r.fail(frontmatterOpenerLine, "%s", reasonMissingName)
	}
	if !descriptionSeen {
		r.fail(frontmatterOpenerLine, "%s", reasonMissingDescription)
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
	if !dropped.empty() {
		p.DroppedTools = dropped.all()
		p.UnknownTools = dropped.unknown()
		summary := dropped.summary()
		p.Notes = append(p.Notes, fmt.Sprintf("tools dropped: %s; the agent gets %s", summary, describeTools(p.Tools)))
		r.warn(toolsLine, "tools dropped: %s; the agent runs with %s", summary, describeTools(p.Tools))
	}
	if len(p.Writable) > 0 && p.Sandbox != "" && p.Sandbox != "workspace-write" {
		p.Notes = append(p.Notes, fmt.Sprintf("writable: has no effect with sandbox: %s", p.Sandbox))
	}
	if p.Network != nil && p.Sandbox == "danger-full-access" {
		p.Notes = append(p.Notes, "network: has no effect with sandbox: danger-full-access, which confines nothing")
	}
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
		if !slices.Contains(denied, name) {
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

// shownValue renders a field's value for a message: as written (raw),
// quoted, or "nothing" when blank.
func shownValue(v any, raw string) string {
	if v == nil {
		return "nothing"
	}
	text := strings.TrimSpace(raw)
	if text == "" {
		if s, ok := v.(string); ok {
			text = strings.TrimSpace(s)
		}
	}
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

// toolList reads a list field (`tools:`, `writable:`) as a comma-separated
// string or a YAML list of strings. It returns nil (and true) for a blank
// value.
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

// positiveCount reads a positive whole number no larger than max.
func positiveCount(v any, max int64) (int64, bool) {
	n, ok := positiveSeconds(v)
	if !ok || n > max {
		return 0, false
	}
	return n, true
}

// tokenCount reads a token count: a positive whole number, or a string
// such as "128k" or "1M" (model.ParseTokens).
func tokenCount(v any) (int64, bool) {
	if s, ok := v.(string); ok {
		return model.ParseTokens(s)
	}
	return positiveCount(v, model.MaxTokenCount)
}
