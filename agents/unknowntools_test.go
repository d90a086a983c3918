package agents

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestParseUnknownTools: a tool name that is neither ink's nor Claude
// Code's (a typo) is kept aside in UnknownTools with a note, so that a task
// is refused; Claude Code tools ink lacks are only dropped.
func TestParseUnknownTools(t *testing.T) {
	t.Parallel()
	p, err := Parse("x.md", []byte("---\nname: x\ndescription: y\ntools: Read, Gerp, WebFetch, mcp__gh__issue, Bash(git:*), TodoWrite, frob, Gerp\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Tools, ",") != "read" {
		t.Errorf("tools %v, want [read]", p.Tools)
	}
	if strings.Join(p.UnknownTools, ",") != "Gerp,frob" {
		t.Errorf("unknown tools %v, want [Gerp frob]", p.UnknownTools)
	}
	want := `tool "Gerp" is unknown (ink's tools: read, grep, find, ls, edit, write, bash, task); a task with this agent is refused until the tools: line is fixed`
	found := false
	for _, n := range p.Notes {
		found = found || n == want
	}
	if !found {
		t.Errorf("notes %q lack %q", p.Notes, want)
	}

	clean, err := Parse("y.md", []byte("---\nname: y\ndescription: y\ntools: Read, Grep, Glob, WebFetch, WebSearch, Task, NotebookEdit, mcp__a__b\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if clean.UnknownTools != nil {
		t.Errorf("Claude Code tools read as unknown: %v", clean.UnknownTools)
	}
}

// TestCheckUnknownTools: Check reports a tools: line with unknown names at
// its line; the file still loads.
func TestCheckUnknownTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "typo.md"), "---\nname: typo\ndescription: y\ntools: Read, Gerp\n---\n")
	writeFile(t, filepath.Join(dir, "fine.md"), "---\nname: fine\ndescription: y\ntools: Read, WebFetch\n---\n")
	problems := Check(dir)
	if len(problems) != 1 {
		t.Fatalf("problems %v, want one", problems)
	}
	want := "typo.md:4: unknown tools Gerp (ink's tools: read, grep, find, ls, edit, write, bash, task); a task with this agent is refused until the tools: line is fixed"
	if got := problems[0].Error(); !strings.HasSuffix(got, want) {
		t.Fatalf("problem %q, want it to end with %q", got, want)
	}
}
