package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/agents"
)

// writeProfile writes a minimal profile file NAME.md into dir.
func writeProfile(t *testing.T, dir, name, description, extra string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("---\nname: %s\ndescription: %s\n%s---\nYou are %s.\n", name, description, extra, name)
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rosterLines returns the "- name: description" lines of the # Agents block.
func rosterLines(system string) []string {
	_, block, ok := strings.Cut(system, "# Agents\n")
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out
}

// TestMainSystemAdvertisesEveryAgent: with 200 profiles, the main agent's
// system prompt names every one, with descriptions shortened so that the
// roster stays within its budget.
func TestMainSystemAdvertisesEveryAgent(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	long := strings.Repeat("reads code and reports findings ", 40) // > 1 KiB
	for i := range 200 {
		writeProfile(t, filepath.Join(home, "agents"), fmt.Sprintf("agent%03d", i), long, "")
	}
	set := agents.Load(agents.LoadOptions{InkHome: home})
	if got := len(set.Names()); got != 200 {
		t.Fatalf("loaded %d profiles, want 200 (problems: %v)", got, set.Problems())
	}
	system := mainSystem("/work", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), MainTools, set)
	lines := rosterLines(system)
	if len(lines) != 200 {
		t.Fatalf("system prompt lists %d agents, want all 200", len(lines))
	}
	for i, l := range lines {
		name, desc, _ := strings.Cut(strings.TrimPrefix(l, "- "), ": ")
		if name != fmt.Sprintf("agent%03d", i) || len(desc) > agents.AdvertiseMaxDescription || !strings.HasPrefix(desc, "reads code") {
			t.Errorf("line %d: %q", i, l)
		}
	}
	_, block, _ := strings.Cut(system, "# Agents\n")
	if len("# Agents\n"+block) > agents.AdvertiseMaxBytes+1 { // +1: mainSystem's closing newline
		t.Errorf("roster is %d bytes, want at most %d", len(block), agents.AdvertiseMaxBytes)
	}
	if !regexp.MustCompile(`(?m)^- Date: 2026-11-30$`).MatchString(system) {
		t.Errorf("system prompt lacks the normalisable date line:\n%s", system)
	}
}

// TestMainSystemUntrustedProject: a project whose profiles are not trusted
// gets a system prompt that says so and how to trust it, never that no
// agents are defined; once trusted, its agents are advertised.
func TestMainSystemUntrustedProject(t *testing.T) {
	t.Parallel()
	inkHome, project := t.TempDir(), t.TempDir()
	writeProfile(t, filepath.Join(project, ".ink", "agents"), "reviewer", "reviews diffs", "")
	trust, err := agents.LoadTrust(inkHome)
	if err != nil {
		t.Fatal(err)
	}
	opts := agents.LoadOptions{InkHome: inkHome, ProjectRoot: project, Trust: trust}
	system := mainSystem(project, time.Now(), MainTools, agents.Load(opts))
	if !strings.Contains(system, "not trusted") || !strings.Contains(system, "`ink trust "+project+"`") {
		t.Errorf("system prompt does not say the project is untrusted and how to trust it:\n%s", system)
	}
	if strings.Contains(system, "No agents are defined") || len(rosterLines(system)) != 0 {
		t.Errorf("untrusted project: system prompt must neither list its agents nor say none are defined:\n%s", system)
	}

	if err := trust.Add(project); err != nil {
		t.Fatal(err)
	}
	system = mainSystem(project, time.Now(), MainTools, agents.Load(opts))
	if lines := rosterLines(system); len(lines) != 1 || lines[0] != "- reviewer: reviews diffs" {
		t.Errorf("trusted project: roster %q, want the reviewer", lines)
	}
	if strings.Contains(system, "not trusted") {
		t.Errorf("trusted project still reported as untrusted:\n%s", system)
	}
}

// TestMainSystemNoDelegation: without the task tool (--max-depth 0) the main
// agent is told nothing about agents it cannot call.
func TestMainSystemNoDelegation(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeProfile(t, filepath.Join(home, "agents"), "scout", "finds code", "")
	set := agents.Load(agents.LoadOptions{InkHome: home})
	system := mainSystem("/work", time.Now(), MainTools[:len(MainTools)-1], set)
	if strings.Contains(system, "# Agents") || strings.Contains(system, "scout") {
		t.Errorf("system prompt without task advertises agents:\n%s", system)
	}
}

// TestChildSystemFollowsItsTools: a child's system prompt is built for its
// own tools: one that may delegate is told the agents, one that may not is
// told nothing about delegation, and neither carries its parent's
// subagent suffix or profile twice.
func TestChildSystemFollowsItsTools(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeProfile(t, filepath.Join(home, "agents"), "scout", "finds code", "")
	base := promptBase{cwd: "/work", date: time.Now(), set: agents.Load(agents.LoadOptions{InkHome: home})}
	leaf := childSystem(base, []string{"read", "bash"}, "Look around.", "")
	for _, absent := range []string{"# Agents", "# Delegation", "scout", "task"} {
		said := strings.NewReplacer("through the task tool", "", "no task tool", "", "as the task result", "").Replace(leaf)
		if strings.Contains(said, absent) {
			t.Errorf("a child without task is told %q:\n%s", absent, leaf)
		}
	}
	if !strings.Contains(leaf, "- Tools: read, bash\n") || !strings.Contains(leaf, "Calls to read in one message run in parallel; bash run one at a time.") || strings.Count(leaf, "# Subagent mode") != 1 || !strings.Contains(leaf, "Look around.") {
		t.Errorf("leaf child prompt:\n%s", leaf)
	}
	delegating := childSystem(base, []string{"read", "task", "task_wait"}, "", "")
	if !strings.Contains(delegating, "# Delegation") || !strings.Contains(delegating, "- scout: finds code") {
		t.Errorf("a child that may delegate is not told the agents:\n%s", delegating)
	}
}
