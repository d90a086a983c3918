package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profileText is a minimal valid profile.
func profileText(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\nYou are " + name + ".\n"
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layout is a fake user: a home, an INK_HOME inside it, and a project.
type layout struct {
	home, inkHome, project string
}

func newLayout(t *testing.T) layout {
	t.Helper()
	root := t.TempDir()
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	l := layout{
		home:    filepath.Join(root, "home"),
		project: filepath.Join(root, "src", "app"),
	}
	l.inkHome = filepath.Join(l.home, ".ink")
	for _, dir := range []string{l.home, l.project} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l layout) options(t *testing.T, trusted bool) LoadOptions {
	t.Helper()
	trust, err := LoadTrust(l.inkHome)
	if err != nil {
		t.Fatal(err)
	}
	if trusted {
		if err := trust.Add(l.project); err != nil {
			t.Fatal(err)
		}
	}
	return LoadOptions{Home: l.home, InkHome: l.inkHome, ProjectRoot: l.project, Trust: trust}
}

func TestLoadLaterDirectoryWinsAndShadowsAreReported(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dirs := []string{
		filepath.Join(l.inkHome, "agents"),
		filepath.Join(l.home, ".claude", "agents"),
		filepath.Join(l.project, ".claude", "agents"),
		filepath.Join(l.project, ".ink", "agents"),
	}
	for i, dir := range dirs {
		writeFile(t, filepath.Join(dir, "reviewer.md"), profileText("reviewer", "version "+string(rune('1'+i))))
	}
	writeFile(t, filepath.Join(dirs[0], "scout.md"), profileText("scout", "personal scout"))
	writeFile(t, filepath.Join(dirs[2], "fixer.md"), profileText("fixer", "project fixer"))

	set := Load(l.options(t, true))
	if got, want := strings.Join(set.Names(), ","), "fixer,reviewer,scout"; got != want {
		t.Fatalf("names %s, want %s", got, want)
	}
	reviewer, ok := set.Get("reviewer")
	if !ok || reviewer.Description != "version 4" || reviewer.Source != filepath.Join(dirs[3], "reviewer.md") || reviewer.Dir != dirs[3] {
		t.Errorf("reviewer = %q from %s (dir %s); want version 4 from %s", reviewer.Description, reviewer.Source, reviewer.Dir, dirs[3])
	}
	want := []Shadow{
		{Name: "reviewer", Winner: filepath.Join(dirs[3], "reviewer.md"), Shadowed: filepath.Join(dirs[0], "reviewer.md")},
		{Name: "reviewer", Winner: filepath.Join(dirs[3], "reviewer.md"), Shadowed: filepath.Join(dirs[1], "reviewer.md")},
		{Name: "reviewer", Winner: filepath.Join(dirs[3], "reviewer.md"), Shadowed: filepath.Join(dirs[2], "reviewer.md")},
	}
	if got := set.Shadowed(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("shadowed\n got: %+v\nwant: %+v", got, want)
	}
	all := set.All()
	if len(all) != 3 || all[0].Name != "fixer" || all[2].Name != "scout" {
		t.Errorf("All not sorted by name: %v", set.Names())
	}
	if len(set.Problems()) != 0 {
		t.Errorf("problems: %v", set.Problems())
	}
	if got := set.Dirs(); len(got) != 4 || got[0] != dirs[0] || got[3] != dirs[3] {
		t.Errorf("Dirs %v, want %v", got, dirs)
	}
}

// TestLoadSkipsBadFilesAndLoadsTheRest mixes every bad test file with the
// Claude Code collection: each bad one is reported with its exact message
// and every good one loads.
func TestLoadSkipsBadFilesAndLoadsTheRest(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	var wantProblems []string
	for _, pattern := range []string{"testdata/claude/*.md", "testdata/bad/*.md"} {
		files, _ := filepath.Glob(pattern)
		for _, src := range files {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(dir, filepath.Base(src))
			writeFile(t, dst, string(data))
			if _, err := Parse(dst, data); err != nil {
				wantProblems = append(wantProblems, err.Error())
			}
		}
	}
	writeFile(t, filepath.Join(dir, "README.txt"), "not a profile")
	writeFile(t, filepath.Join(dir, ".#reviewer.md"), "an editor lock file")
	if err := os.MkdirAll(filepath.Join(dir, "drafts.md"), 0o755); err != nil {
		t.Fatal(err)
	}

	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome})
	want := "ab-test-analyst,api-tester,architect,code-reviewer,debugger,doc-writer,explorer,frontend-developer,Python Testing Expert,python-devops-ci-cd-expert,refactorer,release-notes,researcher,security-auditor,sprint-prioritizer,team-lead,test-runner"
	if got := strings.Join(set.Names(), ","); got != want {
		t.Errorf("loaded %s\nwant %s", got, want)
	}
	var got []string
	for _, p := range set.Problems() {
		got = append(got, p.Error())
	}
	if len(wantProblems) != 17 || strings.Join(got, "\n") != strings.Join(wantProblems, "\n") {
		t.Errorf("problems\n got: %s\nwant: %s", strings.Join(got, "\n"), strings.Join(wantProblems, "\n"))
	}
	for _, p := range set.Problems() {
		if !strings.HasPrefix(p.Path, dir+string(filepath.Separator)) || p.Line < 1 {
			t.Errorf("problem %v does not name the file and a line", p)
		}
	}
}

func TestLoadMissingDirectoriesAreFine(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	set := Load(l.options(t, false))
	if len(set.All()) != 0 || len(set.Problems()) != 0 || len(set.Shadowed()) != 0 {
		t.Errorf("empty layout: all %v problems %v", set.Names(), set.Problems())
	}
	if root, count := set.Untrusted(); root != "" || count != 0 {
		t.Errorf("Untrusted() = %q, %d with no project agents", root, count)
	}
	if set.UntrustedMessage() != "" {
		t.Errorf("UntrustedMessage %q with no project agents", set.UntrustedMessage())
	}
}

func TestLoadUntrustedProjectIsNotLoaded(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.inkHome, "agents", "scout.md"), profileText("scout", "personal"))
	writeFile(t, filepath.Join(l.project, ".ink", "agents", "evil.md"), profileText("evil", "runs rm -rf"))
	writeFile(t, filepath.Join(l.project, ".ink", "agents", "scout.md"), profileText("scout", "hijacked"))

	set := Load(l.options(t, false))
	if got := strings.Join(set.Names(), ","); got != "scout" {
		t.Fatalf("names %s, want only the personal scout", got)
	}
	if p, _ := set.Get("scout"); p.Description != "personal" {
		t.Errorf("an untrusted project replaced scout: %q", p.Description)
	}
	root, count := set.Untrusted()
	if root != l.project || count != 2 {
		t.Errorf("Untrusted() = %q, %d; want %q, 2", root, count, l.project)
	}
	want := "project agents in " + l.project + "/.ink/agents are not loaded because " + l.project +
		" is not trusted; run `ink trust " + l.project + "` to load them"
	if got := set.UntrustedMessage(); got != want {
		t.Errorf("message\n got: %s\nwant: %s", got, want)
	}

	// Both project directories are named when both hold profiles.
	writeFile(t, filepath.Join(l.project, ".claude", "agents", "helper.md"), profileText("helper", "x"))
	set = Load(l.options(t, false))
	if _, count := set.Untrusted(); count != 3 || !strings.Contains(set.UntrustedMessage(), l.project+"/.claude/agents and "+l.project+"/.ink/agents") {
		t.Errorf("count %d message %q", count, set.UntrustedMessage())
	}

	// Trusting the project loads it, and the project wins the clash.
	set = Load(l.options(t, true))
	if got := strings.Join(set.Names(), ","); got != "evil,helper,scout" {
		t.Errorf("trusted project: names %s", got)
	}
	if p, _ := set.Get("scout"); p.Description != "hijacked" {
		t.Errorf("trusted project scout = %q", p.Description)
	}
	if _, count := set.Untrusted(); count != 0 {
		t.Errorf("trusted project still reported untrusted")
	}
}

func TestLoadProjectAtHomeNeedsNoTrust(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.home, ".claude", "agents", "a.md"), profileText("a", "from ~/.claude"))
	writeFile(t, filepath.Join(l.home, ".ink", "agents", "b.md"), profileText("b", "from ~/.ink"))
	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome, ProjectRoot: l.home})
	if got := strings.Join(set.Names(), ","); got != "a,b" {
		t.Errorf("names %s, want a,b", got)
	}
	if len(set.Shadowed()) != 0 {
		t.Errorf("a directory loaded twice shadows itself: %v", set.Shadowed())
	}
	if _, count := set.Untrusted(); count != 0 {
		t.Errorf("home project reported untrusted")
	}
}

func TestLoadTrustNilTrustsNothing(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.project, ".claude", "agents", "a.md"), profileText("a", "x"))
	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome, ProjectRoot: l.project})
	if len(set.All()) != 0 {
		t.Errorf("loaded %v with no trust list", set.Names())
	}
}

func TestLoadReturnsCopies(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.inkHome, "agents", "a.md"), "---\nname: a\ndescription: x\ntools: Read\n---\n")
	set := Load(LoadOptions{InkHome: l.inkHome})
	p, _ := set.Get("a")
	p.Tools[0] = "bash"
	if again, _ := set.Get("a"); again.Tools[0] != "read" {
		t.Errorf("changing a returned profile changed the set: %v", again.Tools)
	}
}

func TestProjectRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	deep := filepath.Join(repo, "a", "b")
	linked := filepath.Join(root, "linked")
	plain := filepath.Join(root, "plain", "x")
	for _, dir := range []string{filepath.Join(repo, ".git"), deep, filepath.Join(linked, "sub"), plain} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(linked, ".git"), "gitdir: /elsewhere/.git/worktrees/linked\n")
	tests := []struct{ cwd, want string }{
		{repo, repo},
		{deep, repo},
		{filepath.Join(linked, "sub"), linked},
		{plain, plain},
	}
	for _, tt := range tests {
		if got := ProjectRoot(tt.cwd); got != tt.want {
			t.Errorf("ProjectRoot(%s) = %s, want %s", tt.cwd, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.md"), profileText("reviewer", "first"))
	writeFile(t, filepath.Join(dir, "b.md"), profileText("reviewer", "second"))
	writeFile(t, filepath.Join(dir, "c.md"), "no frontmatter\n")
	writeFile(t, filepath.Join(dir, "d.md"), profileText("fine", "ok"))
	writeFile(t, filepath.Join(dir, "e.md"), "---\nname: e\ntimeout: 0\nthinking: loud\nmodle: opus\n---\n")
	got := Check(dir, CheckOptions{})
	want := []string{
		filepath.Join(dir, "b.md") + `:2: name "reviewer" is also used by ` + filepath.Join(dir, "a.md") + "; this later file is the one loaded (rename one of them to keep both)",
		filepath.Join(dir, "c.md") + ":1: no frontmatter: the file must start with a line '---'",
		filepath.Join(dir, "e.md") + `:1: missing required field "description": add a line "description: when to use this agent" to the frontmatter`,
		filepath.Join(dir, "e.md") + ":3: timeout must be a positive whole number of seconds (e.g. timeout: 600); got \"0\"",
		filepath.Join(dir, "e.md") + ":4: thinking must be one of off, minimal, low, medium, high, xhigh, max; got \"loud\"",
		filepath.Join(dir, "e.md") + `:5: unknown field "modle" ignored (ink reads name, description, tools, disallowedTools, model, timeout, worktree, isolation, thinking, maxTurns, contextWindow, sandbox, writable, network)`,
	}
	warning := map[int]bool{0: true, 5: true}
	if len(got) != len(want) {
		t.Fatalf("Check = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Error() != want[i] || got[i].Warning != warning[i] {
			t.Errorf("problem %d\n got: %s (warning %v)\nwant: %s (warning %v)", i, got[i], got[i].Warning, want[i], warning[i])
		}
	}

	clean := t.TempDir()
	writeFile(t, filepath.Join(clean, "ok.md"), profileText("ok", "fine"))
	if got := Check(clean, CheckOptions{}); len(got) != 0 {
		t.Errorf("Check of a clean dir = %v", got)
	}
	missing := filepath.Join(clean, "nope")
	if got := Check(missing, CheckOptions{}); len(got) != 1 || !strings.Contains(got[0].Error(), "cannot read the agents directory") {
		t.Errorf("Check of a missing dir = %v", got)
	}
}

func TestLoadReportsUnreadableFilesAndDirectories(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	writeFile(t, filepath.Join(dir, "ok.md"), profileText("ok", "fine"))
	if err := os.Symlink(filepath.Join(dir, "gone.txt"), filepath.Join(dir, "dangling.md")); err != nil {
		t.Fatal(err)
	}
	// ~/.claude/agents is a file, not a directory.
	writeFile(t, filepath.Join(l.home, ".claude", "agents"), "oops")

	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome})
	if got := strings.Join(set.Names(), ","); got != "ok" {
		t.Errorf("names %s, want ok", got)
	}
	want := []string{
		filepath.Join(dir, "dangling.md") + ": cannot read the file: no such file or directory",
		filepath.Join(l.home, ".claude", "agents") + ": cannot read the agents directory: not a directory",
	}
	got := set.Problems()
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Error() != want[i] || got[i].Line != 0 {
			t.Errorf("problem %d\n got: %s\nwant: %s", i, got[i], want[i])
		}
	}
}
