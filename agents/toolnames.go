package agents

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// InkTools lists ink's built-in tool names in the order ink shows them. A
// profile's tools are drawn from these.
var InkTools = []string{"read", "grep", "find", "ls", "edit", "write", "bash", "task"}

// claudeToolNames maps the Claude Code tools ink has to ink's names.
// Lookups are case insensitive (keys are lower case).
var claudeToolNames = map[string]string{
	"read":      "read",
	"grep":      "grep",
	"glob":      "find",
	"ls":        "ls",
	"edit":      "edit",
	"multiedit": "edit",
	"write":     "write",
	"bash":      "bash",
}

// ClaudeCodeTools lists the tool names Claude Code 2.1 knows (besides MCP
// tools, mcp__SERVER__TOOL), as a profile's tools: line writes them. Those
// in claudeToolNames map to ink's tools; the others are dropped with a note.
var ClaudeCodeTools = []string{
	"Read", "Write", "Edit", "MultiEdit", "Bash", "Grep", "Glob", "LS",
	"NotebookEdit", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "TodoRead",
	"Task", "Agent", "TaskCreate", "TaskList", "TaskUpdate", "TaskGet", "TaskOutput", "TaskStop",
	"SendMessage", "EnterWorktree", "ExitWorktree", "LSP", "KillShell", "KillBash", "BashOutput",
	"ExitPlanMode", "EnterPlanMode", "Skill", "SlashCommand", "AskUserQuestion",
	"ListMcpResourcesTool", "ReadMcpResourceTool", "ToolSearch", "TeamCreate", "TeamDelete",
	"PowerShell", "Monitor", "CronCreate", "CronDelete", "CronList",
}

// claudeOnlyTools are the ClaudeCodeTools ink lacks, lower case.
var claudeOnlyTools = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range ClaudeCodeTools {
		lower := strings.ToLower(name)
		if _, ok := claudeToolNames[lower]; !ok {
			m[lower] = true
		}
	}
	return m
}()

// dropReason is why a listed tool is left out of a profile's tools.
type dropReason int

const (
	dropNone    dropReason = iota
	dropClaude             // a Claude Code tool ink lacks
	dropTask               // Claude Code's Task/Agent
	dropPattern            // a permission pattern such as Bash(git:*)
	dropMCP                // an MCP tool
	dropUnknown            // a name no one knows
)

// inkToolName maps a tool name as written in a profile to ink's name, or
// says why ink has no such tool.
func inkToolName(written string) (string, dropReason) {
	if written == "Task" || written == "Agent" {
		return "", dropTask
	}
	lower := strings.ToLower(written)
	if name, ok := claudeToolNames[lower]; ok {
		return name, dropNone
	}
	if slices.Contains(InkTools, lower) {
		return lower, dropNone
	}
	if strings.HasPrefix(written, "mcp__") {
		return "", dropMCP
	}
	if open := strings.IndexByte(written, '('); open > 0 && strings.HasSuffix(written, ")") {
		switch _, why := inkToolName(written[:open]); why {
		case dropNone:
			return "", dropPattern
		default:
			return "", why
		}
	}
	if claudeOnlyTools[lower] {
		return "", dropClaude
	}
	return "", dropUnknown
}

// droppedTools collects the tools left out of a profile, by reason, in the
// order listed.
type droppedTools struct {
	byReason map[dropReason][]string
	order    []string
}

func (d *droppedTools) add(written string, why dropReason) {
	if d.byReason == nil {
		d.byReason = map[dropReason][]string{}
	}
	if slices.Contains(d.order, written) {
		return
	}
	d.order = append(d.order, written)
	d.byReason[why] = append(d.byReason[why], written)
}

func (d *droppedTools) empty() bool { return len(d.order) == 0 }

func (d *droppedTools) all() []string { return append([]string(nil), d.order...) }

func (d *droppedTools) unknown() []string {
	return append([]string(nil), d.byReason[dropUnknown]...)
}

// summary says in one line which tools were dropped and why, grouped by
// reason.
func (d *droppedTools) summary() string {
	var parts []string
	for _, g := range []struct {
		why  dropReason
		text string
	}{
		{dropClaude, "Claude Code tools ink lacks"},
		{dropTask, `ink's delegation tool is "task", granted only while --max-depth allows`},
		{dropPattern, "ink cannot limit a tool to some arguments; list the tool alone to allow it fully"},
		{dropMCP, "ink does not connect to MCP servers"},
		{dropUnknown, "no tool has this name; ink's tools are " + strings.Join(InkTools, ", ")},
	} {
		if names := d.byReason[g.why]; len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(names, ", "), g.text))
		}
	}
	return strings.Join(parts, "; ")
}

// deniedToolName maps a name in Claude Code's disallowedTools to the ink
// tool to withhold. Denying errs on the safe side: a pattern such as
// "Bash(rm:*)" withholds the whole tool (ink cannot deny part of it), with a
// note; names ink lacks need no denying and return "".
func deniedToolName(written string) (name, note string) {
	if written == "Task" || written == "Agent" {
		return "task", ""
	}
	if open := strings.IndexByte(written, '('); open > 0 && strings.HasSuffix(written, ")") {
		if name, _ := inkToolName(written[:open]); name != "" {
			return name, fmt.Sprintf("disallowedTools %q: ink cannot withhold only part of %s, so the agent gets no %s", written, name, name)
		}
		return "", ""
	}
	name, _ = inkToolName(written)
	return name, ""
}

// ChildTools gives the tools a child with this profile runs with, and at
// most one note saying what was left out and why. available is the pool
// the child may draw from, in order (its parent's tools, less task when
// the depth limit forbids it); withheld says, for a tool the parent has
// but the child may not (task at the depth limit), why.
//
// A profile without a tools: line gets all of available. Otherwise the
// profile's tools are kept in their listed order when available; a listed
// tool that is not (withheld, or missing from the parent), and every tool
// already dropped when the profile was read (Claude Code tools ink lacks,
// unknown names), is left out and named in the note. A child is never
// refused for its tools: it runs with what remains, possibly none.
func (p Profile) ChildTools(available []string, withheld map[string]string) (tools []string, note string) {
	var out []string
	var notHere []string
	if p.Tools == nil {
		out = append([]string(nil), available...)
	} else {
		out = []string{}
		for _, t := range p.Tools {
			switch {
			case slices.Contains(available, t):
				out = appendUnique(out, t)
			case withheld[t] != "":
				notHere = append(notHere, fmt.Sprintf("%s (%s)", t, withheld[t]))
			default:
				notHere = append(notHere, fmt.Sprintf("%s (not among its parent's tools)", t))
			}
		}
	}
	var parts []string
	if len(notHere) > 0 {
		sort.Strings(notHere)
		parts = append(parts, strings.Join(notHere, "; "))
	}
	if len(p.DroppedTools) > 0 {
		d := droppedTools{}
		for _, written := range p.DroppedTools {
			_, why := inkToolName(written)
			if why == dropNone {
				why = dropUnknown
			}
			d.add(written, why)
		}
		parts = append(parts, d.summary())
	}
	if len(parts) == 0 {
		return out, ""
	}
	return out, fmt.Sprintf("agent %q runs without some tools it lists: %s; it runs with %s (tools: line of %s)",
		p.Name, strings.Join(parts, "; "), describeTools(out), p.Source)
}
