package agents

import (
	"strings"
	"testing"
)

// TestParseDropsToolsInkLacks: every tool name Claude Code 2.1 knows is
// recognised: the ones ink has map to ink's, the others (and MCP tools,
// argument patterns, unknown names) are dropped with one note that says
// why, never a refusal; only names nobody knows count as unknown.
func TestParseDropsToolsInkLacks(t *testing.T) {
	t.Parallel()
	p, err := Parse("x.md", []byte("---\nname: x\ndescription: y\ntools: Read, TaskList, TaskUpdate, SendMessage, TaskCreate, EnterWorktree, LSP, Grep, WebFetch, mcp__github__create_issue, Bash(git:*), Task, Gerp, Glob, TaskList\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Tools, ","); got != "read,grep,find" {
		t.Errorf("tools %s, want read,grep,find", got)
	}
	if got := strings.Join(p.DroppedTools, ","); got != "TaskList,TaskUpdate,SendMessage,TaskCreate,EnterWorktree,LSP,WebFetch,mcp__github__create_issue,Bash(git:*),Task,Gerp" {
		t.Errorf("dropped %s", got)
	}
	if got := strings.Join(p.UnknownTools, ","); got != "Gerp" {
		t.Errorf("unknown tools %s, want Gerp", got)
	}
	var toolNotes []string
	for _, n := range p.Notes {
		if strings.HasPrefix(n, "tools dropped: ") {
			toolNotes = append(toolNotes, n)
		}
	}
	want := "tools dropped: TaskList, TaskUpdate, SendMessage, TaskCreate, EnterWorktree, LSP, WebFetch (Claude Code tools ink lacks); " +
		`Task (ink's delegation tool is "task", granted only while --max-depth allows); ` +
		"Bash(git:*) (ink cannot limit a tool to some arguments; list the tool alone to allow it fully); " +
		"mcp__github__create_issue (ink does not connect to MCP servers); " +
		"Gerp (no tool has this name; ink's tools are read, grep, find, ls, edit, write, bash, task); the agent gets read, grep, find"
	if len(toolNotes) != 1 || toolNotes[0] != want {
		t.Errorf("tool notes\n got: %q\nwant: [%q]", toolNotes, want)
	}
}

// TestEveryClaudeCodeToolIsKnown: no Claude Code tool name is taken for a
// typo, and those ink has map to ink's own.
func TestEveryClaudeCodeToolIsKnown(t *testing.T) {
	t.Parallel()
	for _, name := range ClaudeCodeTools {
		got, why := inkToolName(name)
		if why == dropUnknown {
			t.Errorf("%s read as unknown", name)
		}
		if want, ok := claudeToolNames[strings.ToLower(name)]; ok && (got != want || why != dropNone) {
			t.Errorf("%s maps to %q (%v), want %s", name, got, why, want)
		}
	}
	for _, name := range InkTools {
		if got, why := inkToolName(name); got != name || why != dropNone {
			t.Errorf("ink's own %s maps to %q (%v)", name, got, why)
		}
	}
}

// TestChildTools: a child gets its profile's tools that its parent offers,
// in listed order; a listed tool it cannot have (task at the depth limit,
// a tool its parent lacks) and the tools dropped at load are named in one
// note, and it still runs.
func TestChildTools(t *testing.T) {
	t.Parallel()
	parent := []string{"read", "grep", "find", "ls", "bash"}
	withheld := map[string]string{"task": "not available at depth 1 with --max-depth 1"}
	tests := []struct {
		name  string
		tools string // "" = no tools: line
		want  string
		note  []string
	}{
		{name: "no tools line gets the whole pool", want: "read,grep,find,ls,bash"},
		{name: "narrowed in listed order", tools: "Bash, Read", want: "bash,read"},
		{name: "withheld and missing tools are named", tools: "read, task, edit", want: "read", note: []string{
			`agent "x" runs without some tools it lists: edit (not among its parent's tools); task (not available at depth 1 with --max-depth 1)`, "it runs with read", "tools: line of "}},
		{name: "load-time drops are named", tools: "Read, WebFetch, TaskCreate, Gerp", want: "read", note: []string{"WebFetch, TaskCreate (Claude Code tools ink lacks)", "Gerp (no tool has this name"}},
		{name: "nothing left", tools: "WebFetch", want: "", note: []string{"it runs with no tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := "---\nname: x\ndescription: y\n"
			if tt.tools != "" {
				text += "tools: " + tt.tools + "\n"
			}
			p, err := Parse("/agents/x.md", []byte(text+"---\n"))
			if err != nil {
				t.Fatal(err)
			}
			got, note := p.ChildTools(parent, withheld)
			if strings.Join(got, ",") != tt.want || got == nil {
				t.Errorf("tools %#v, want %q", got, tt.want)
			}
			if len(tt.note) == 0 && note != "" {
				t.Errorf("unexpected note %q", note)
			}
			for _, frag := range tt.note {
				if !strings.Contains(note, frag) {
					t.Errorf("note %q lacks %q", note, frag)
				}
			}
		})
	}
}
