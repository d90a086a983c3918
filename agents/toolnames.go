package agents

import (
	"fmt"
	"strings"
)

// InkTools lists ink's built-in tool names in the order ink shows them. A
// profile's tools are drawn from these.
var InkTools = []string{"read", "grep", "find", "ls", "edit", "write", "bash", "task"}

// claudeToolNames maps Claude Code tool names to ink's. Lookups are case
// insensitive (keys are lower case).
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

// inkToolName maps a tool name as written in a profile to ink's name. When
// ink has no such tool it returns "" and a note that says why the tool was
// dropped.
func inkToolName(written string) (name, note string) {
	if written == "Task" || written == "Agent" {
		return "", fmt.Sprintf("tool %q dropped: write \"task\" to let this agent delegate (it is granted only while depth allows)", written)
	}
	lower := strings.ToLower(written)
	if name, ok := claudeToolNames[lower]; ok {
		return name, ""
	}
	if contains(InkTools, lower) {
		return lower, ""
	}
	if open := strings.IndexByte(written, '('); open > 0 && strings.HasSuffix(written, ")") {
		base := written[:open]
		if name, ok := claudeToolNames[strings.ToLower(base)]; ok {
			return "", fmt.Sprintf("tool %q dropped: ink cannot limit %s to some arguments; list %q to allow it fully", written, name, name)
		}
	}
	if strings.HasPrefix(written, "mcp__") {
		return "", fmt.Sprintf("tool %q dropped: ink does not connect to MCP servers", written)
	}
	return "", fmt.Sprintf("tool %q dropped: ink has no such tool (ink's tools: %s)", written, strings.Join(InkTools, ", "))
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

// claudeOnlyTools are Claude Code tools ink lacks (lower case). A profile
// that lists one is read as it is: the tool is dropped with a note.
var claudeOnlyTools = map[string]bool{
	"webfetch": true, "websearch": true, "notebookedit": true, "notebookread": true,
	"todowrite": true, "todoread": true, "bashoutput": true, "killshell": true, "killbash": true,
	"slashcommand": true, "exitplanmode": true, "skill": true, "askuserquestion": true,
	"listmcpresourcestool": true, "readmcpresourcetool": true, "task": true, "agent": true,
}

// knownToolElsewhere reports whether written names a tool that exists
// somewhere, in ink or in Claude Code (MCP tools and argument patterns of
// known tools included), as opposed to a name nobody knows.
func knownToolElsewhere(written string) bool {
	lower := strings.ToLower(written)
	if claudeOnlyTools[lower] || strings.HasPrefix(written, "mcp__") || contains(InkTools, lower) {
		return true
	}
	if _, ok := claudeToolNames[lower]; ok {
		return true
	}
	if open := strings.IndexByte(written, '('); open > 0 && strings.HasSuffix(written, ")") {
		return knownToolElsewhere(written[:open])
	}
	return false
}
