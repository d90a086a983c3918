package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// copyFixture copies testdata/claude/NAME into dir.
func copyFixture(t *testing.T, name, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	writeFile(t, dst, string(data))
	return dst
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestLoadAsClaudeCodeLoads installs agents the way public collections
// tell users to: cloned into subdirectories of ~/.claude/agents, one of
// them through a symbolic link to a checkout elsewhere (which holds a link
// back to itself), plus project agents in a nested directory. Every agent
// loads, under the name its frontmatter gives, and each shape is read as
// Claude Code reads it.
func TestLoadAsClaudeCodeLoads(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	claude := filepath.Join(l.home, ".claude", "agents")
	copyFixture(t, "ab-test-analyst.md", filepath.Join(claude, "data-collection", "analytics"))
	copyFixture(t, "python-testing-expert.md", filepath.Join(claude, "data-collection", "testing"))
	writeFile(t, filepath.Join(claude, "data-collection", "README.md"), "# A collection of agents\n\nCopy them into ~/.claude/agents.\n")
	writeFile(t, filepath.Join(claude, "data-collection", "analytics", "draft.md"), "name: draft\ndescription: the dashes are missing\n")

	// A checkout elsewhere, linked in; it links back to itself.
	checkout := filepath.Join(filepath.Dir(l.home), "checkouts", "team-agents")
	copyFixture(t, "team-lead.md", filepath.Join(checkout, "leads"))
	copyFixture(t, "long-fence.md", checkout)
	symlink(t, checkout, filepath.Join(claude, "team"))
	symlink(t, "..", filepath.Join(checkout, "leads", "up"))

	writeFile(t, filepath.Join(l.project, ".claude", "agents", "backend", "api", "endpoint-builder.md"), profileText("endpoint-builder", "builds endpoints"))

	set := Load(l.options(t, true))
	want := "ab-test-analyst,doc-writer,endpoint-builder,Python Testing Expert,team-lead"
	if got := strings.Join(set.Names(), ","); got != want {
		t.Fatalf("loaded %s, want %s; problems %v", got, want, set.Problems())
	}

	// The collection's README is not an agent and not a problem; a file
	// without frontmatter of any other name is skipped with the reason.
	if probs := set.Problems(); len(probs) != 1 || !strings.HasSuffix(probs[0].Path, filepath.Join("analytics", "draft.md")) || probs[0].Reason != reasonNoFrontmatter {
		t.Errorf("problems %v, want only the draft", probs)
	}
	if probs := Check(claude, CheckOptions{}); len(probs) == 0 || strings.Contains(fmt.Sprint(probs), "README") {
		t.Errorf("check reports %v", probs)
	}
	// The link back is not followed, and said so.
	if ws := set.Warnings(); len(ws) != 1 || !strings.HasSuffix(ws[0].Path, filepath.Join("team", "leads", "up")) || !strings.Contains(ws[0].Reason, "symbolic link loop") {
		t.Errorf("warnings %v, want one symbolic link loop", ws)
	}

	// A file in a linked directory keeps the path it was reached by; Dir is
	// the profile directory it was loaded from.
	lead, _ := set.Get("team-lead")
	if lead.Source != filepath.Join(claude, "team", "leads", "team-lead.md") || lead.Dir != claude {
		t.Errorf("team-lead source %s dir %s", lead.Source, lead.Dir)
	}
	// Claude Code tools: kept where ink has them, the rest dropped, no refusal.
	if strings.Join(lead.Tools, ",") != "read,grep" || len(lead.DroppedTools) != 20 {
		t.Errorf("team-lead tools %v, dropped %v", lead.Tools, lead.DroppedTools)
	}
	// writable: relative to the project, ~ to the home directory.
	if got := strings.Join(lead.Writable, ","); got != filepath.Join(l.project, "build")+","+filepath.Join(l.home, ".cache", "team-lead") || lead.Sandbox != "workspace-write" {
		t.Errorf("team-lead sandbox %q writable %s", lead.Sandbox, got)
	}

	// A colon in the description: read as Claude Code reads it.
	ab, _ := set.Get("ab-test-analyst")
	if !strings.HasPrefix(ab.Description, "Analyze A/B tests. Triggers on: 'p-value'") || ab.StrictYAML == nil || ab.Model != "haiku" {
		t.Errorf("ab-test-analyst read as %+v", ab)
	}
	// A long closing fence closes.
	doc, _ := set.Get("doc-writer")
	if doc.Body != "# Documentation writer\n\nWrite the docs." || doc.Model != "inherit" {
		t.Errorf("doc-writer body %q model %q", doc.Body, doc.Model)
	}

	// A name with spaces: addressable as written, as its slug, and in any
	// case or spacing that has that slug.
	for _, asked := range []string{"Python Testing Expert", "python-testing-expert", "python testing expert", "Python-Testing-Expert"} {
		p, err := set.Lookup(asked)
		if err != nil || p.Name != "Python Testing Expert" {
			t.Errorf("Lookup(%q) = %q, %v", asked, p.Name, err)
		}
	}
}

// TestLoadDuplicateNames: a name defined twice is resolved by load order
// (later directories win; within a directory, the later file in walk
// order), and the winner's note names both files.
func TestLoadDuplicateNames(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	user := filepath.Join(l.inkHome, "agents", "reviewer.md")
	writeFile(t, user, profileText("reviewer", "mine"))
	first := filepath.Join(l.home, ".claude", "agents", "a-collection", "reviewer.md")
	second := filepath.Join(l.home, ".claude", "agents", "b-collection", "code", "review.md")
	writeFile(t, first, profileText("reviewer", "collection a"))
	writeFile(t, second, profileText("reviewer", "collection b"))

	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome})
	p, _ := set.Get("reviewer")
	if p.Description != "collection b" || p.Source != second {
		t.Fatalf("reviewer from %s (%q), want %s", p.Source, p.Description, second)
	}
	want := `agent "reviewer" is also defined in ` + user + ", " + first + "; this file (" + second + ") is used, as the later one in load order"
	if !slices.Contains(p.Notes, want) {
		t.Errorf("notes %q lack %q", p.Notes, want)
	}
	if sh := set.Shadowed(); len(sh) != 2 || sh[0].Shadowed != user || sh[1].Shadowed != first || sh[1].Winner != second {
		t.Errorf("shadowed %+v", sh)
	}

	// Check reports the clash inside one directory as a warning, not an error.
	probs := Check(filepath.Join(l.home, ".claude", "agents"), CheckOptions{})
	if len(probs) != 1 || !probs[0].Warning || probs[0].Path != second || !strings.Contains(probs[0].Reason, "also used by "+first) {
		t.Errorf("Check = %v", probs)
	}
}

// TestLoadSlugClashes: a slug names an agent only when it is unambiguous;
// an agent whose name is the slug wins over one whose slug it is.
func TestLoadSlugClashes(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	writeFile(t, filepath.Join(dir, "a.md"), profileText("Code Reviewer", "spaced"))
	writeFile(t, filepath.Join(dir, "b.md"), profileText("code-reviewer", "plain"))
	writeFile(t, filepath.Join(dir, "c.md"), profileText("Data Bot", "one"))
	writeFile(t, filepath.Join(dir, "d.md"), profileText("data  bot", "two"))
	set := Load(LoadOptions{InkHome: l.inkHome})
	if p, _ := set.Get("code-reviewer"); p.Description != "plain" {
		t.Errorf("code-reviewer is %q, want the agent of that name", p.Description)
	}
	if p, _ := set.Get("Code Reviewer"); p.Description != "spaced" {
		t.Errorf("Code Reviewer is %q", p.Description)
	}
	if _, ok := set.Get("data-bot"); ok {
		t.Errorf("an ambiguous slug named an agent")
	}
	_, err := set.Lookup("data-bot")
	if err == nil || !strings.Contains(err.Error(), `did you mean "data  bot" or "Data Bot"?`) {
		t.Errorf("Lookup(data-bot) error %v", err)
	}
}

// TestLookupSuggestsClosestNames: an unknown name lists the closest ones
// by edit distance, slug and prefix; with many agents it lists those and
// not every name.
func TestLookupSuggestsClosestNames(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	for _, name := range []string{"code-reviewer", "security-reviewer", "test-runner", "debugger", "Python Testing Expert"} {
		writeFile(t, filepath.Join(dir, Slug(name)+".md"), profileText(name, "x"))
	}
	for i := 0; i < 30; i++ {
		name := "filler-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		writeFile(t, filepath.Join(dir, "more", name+".md"), profileText(name, "x"))
	}
	set := Load(LoadOptions{InkHome: l.inkHome})
	tests := []struct{ asked, want string }{
		{"reviewer", `unknown agent "reviewer"`},
		{"code-reveiwer", `did you mean "code-reviewer"?`},
		{"debuger", `did you mean "debugger"?`},
		{"test", `did you mean "test-runner" or "Python Testing Expert"?`},
		{"python-tester", `did you mean "Python Testing Expert"?`},
		{"code", `did you mean "code-reviewer"?`},
	}
	for _, tt := range tests {
		_, err := set.Lookup(tt.asked)
		if err == nil {
			t.Fatalf("Lookup(%q) found an agent", tt.asked)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Lookup(%q) = %q, want it to contain %q", tt.asked, err, tt.want)
		}
		if !strings.Contains(err.Error(), "35 agents are loaded (`ink agents ls` lists them)") || strings.Contains(err.Error(), "filler-aa") {
			t.Errorf("Lookup(%q) = %q: with many agents, say how many and list the closest only", tt.asked, err)
		}
	}
	if got := set.Closest("reviewer", 5); strings.Join(got, ",") != "code-reviewer,security-reviewer" {
		t.Errorf("Closest(reviewer) = %v", got)
	}
	if got := set.Closest("zzzzzzzz", 5); len(got) != 0 {
		t.Errorf("Closest of nothing near = %v", got)
	}
}

// TestLookupNamesTheSkippedFile: an unknown name whose file was skipped
// (found by the name its frontmatter declares, or by its file name) says
// so and why.
func TestLookupNamesTheSkippedFile(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	writeFile(t, filepath.Join(dir, "ok.md"), profileText("ok", "x"))
	broken := filepath.Join(dir, "team", "qa.md")
	writeFile(t, broken, "---\nname: Release Checker\ndescription: checks releases\ntimeout: soon\n---\n")
	set := Load(LoadOptions{InkHome: l.inkHome})
	for _, asked := range []string{"Release Checker", "release-checker", "qa"} {
		_, err := set.Lookup(asked)
		want := "; " + broken + ` was skipped: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "soon"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(%q) = %v, want it to contain %q", asked, err, want)
		}
	}
}

// TestCheckStrictAndWarnings: check lists every problem of a file;
// warnings (dropped tools, unknown fields, aliases that fall back) do not
// stop a file from loading; --strict adds what strict YAML rejects.
func TestCheckStrictAndWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFixture(t, "ab-test-analyst.md", dir)
	copyFixture(t, "team-lead.md", dir)
	writeFile(t, filepath.Join(dir, "sub", "bad.md"), "---\nname: bad\ntimeout: -1\nworktree: maybe\n---\n")

	problems := Check(dir, CheckOptions{})
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.Severity()+" "+strings.TrimPrefix(p.Error(), dir+"/"))
	}
	want := []string{
		`warning ab-test-analyst.md:5: model "haiku" is anthropic/claude-haiku-4-5-20251001 on anthropic; on other providers nothing maps it, so the agent runs on its parent's model (map it with "haiku: PROVIDER/MODEL" under aliases: in ~/.ink/models.yaml, or set INK_MODEL_HAIKU)`,
		"warning team-lead.md:4: tools dropped: ",
		`warning team-lead.md:5: model "opus" is anthropic/claude-opus-4-8 on anthropic;`,
		`error sub/bad.md:1: missing required field "description"`,
		`error sub/bad.md:3: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "-1"`,
		`error sub/bad.md:4: worktree must be true or false; got "maybe"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("Check =\n%s\nwant %d problems", strings.Join(lines, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("problem %d\n got: %s\nwant: %s…", i, lines[i], want[i])
		}
	}

	strict := Check(dir, CheckOptions{Strict: true})
	if len(strict) != len(want)+1 || strict[0].Warning || !strings.HasSuffix(strict[0].Path, "ab-test-analyst.md") || strict[0].Line != 3 ||
		!strings.Contains(strict[0].Reason, "invalid YAML: mapping value is not allowed") || !strings.Contains(strict[0].Reason, "Claude Code and ink still read it") {
		t.Errorf("--strict: first problem %v", strict[0])
	}

	// Mapped aliases, or a parent on anthropic, need no warning.
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ModelAliasesFile), "aliases: {haiku: ollama/qwen3, opus: openai/gpt-5}\n")
	aliases, err := LoadModelAliases(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	anthropic := model.Binding{Provider: "anthropic", Model: "claude-sonnet-5"}
	for _, opts := range []CheckOptions{{Aliases: aliases}, {Parent: &anthropic}} {
		for _, p := range Check(dir, opts) {
			if strings.Contains(p.Reason, "nothing maps it") {
				t.Errorf("alias warning with %+v: %v", opts, p)
			}
		}
	}
}

// TestLenientReading holds the tolerant reading to what Claude Code reads:
// top-level key: value lines, indented blocks under a key only when they
// are YAML, no stray lines; a key given twice keeps its first value.
func TestLenientReading(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, front string
		desc        string // "" = must fail
		tools       string
	}{
		{name: "colon in description", front: "name: x\ndescription: Use it when: the build breaks\ntools: Read, Grep", desc: "Use it when: the build breaks", tools: "read,grep"},
		{name: "quoted value kept as YAML", front: "name: x\ndescription: a: b\ntools: \"Read, Bash\"", desc: "a: b", tools: "read,bash"},
		{name: "flow list", front: "name: x\ndescription: a: b\ntools: [Read, Glob]", desc: "a: b", tools: "read,find"},
		{name: "block list", front: "name: x\ndescription: a: b\ntools:\n  - Read\n  - Edit", desc: "a: b", tools: "read,edit"},
		{name: "block scalar", front: "name: x\ntools: Read: all\ndescription: |\n  first: line\n  second line", desc: "first: line\nsecond line"},
		{name: "comments and blank lines", front: "# an agent\nname: x\n\ndescription: run: it\n", desc: "run: it"},
		{name: "stray line", front: "name: x\ndescription: a: b\n<example>user: hi</example>"},
		{name: "key twice", front: "name: x\ndescription: a: b\ndescription: c", desc: "a: b"},
		{name: "indented continuation", front: "name: x\ndescription: a: b\n  more text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse("x.md", []byte("---\n"+tt.front+"\n---\nbody\n"))
			if tt.desc == "" {
				if err == nil {
					t.Fatalf("read %+v; want the strict YAML error", p)
				}
				if !strings.Contains(err.Error(), "invalid YAML") {
					t.Errorf("error %q is not the strict YAML error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Description != tt.desc || (tt.tools != "" && strings.Join(p.Tools, ",") != tt.tools) {
				t.Errorf("description %q tools %v, want %q %s", p.Description, p.Tools, tt.desc, tt.tools)
			}
		})
	}
}

// TestLoadRepeatedKeysAndSlashNames: the shapes Claude Code loads that ink
// once skipped load too: frontmatters that repeat a key (examples written
// as top-level "user:" lines, a description given twice) keep the first
// value of each key and say so; a name with a '/' goes by its slug, and a
// task naming the agent as its file does finds it.
func TestLoadRepeatedKeysAndSlashNames(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	claude := filepath.Join(l.home, ".claude", "agents", "studio")
	for _, f := range []string{"frontend-developer.md", "api-tester.md", "sprint-prioritizer.md", "python-devops-expert.md"} {
		copyFixture(t, f, claude)
	}
	set := Load(l.options(t, false))
	if got, want := strings.Join(set.Names(), ","), "api-tester,frontend-developer,python-devops-ci-cd-expert,sprint-prioritizer"; got != want || len(set.Problems()) != 0 {
		t.Fatalf("loaded %s, want %s; problems %v", got, want, set.Problems())
	}
	fe, _ := set.Get("frontend-developer")
	if !strings.HasPrefix(fe.Description, "Use this agent when building user interfaces") || !slices.Contains(fe.Notes, `keys given more than once, read as Claude Code reads them: "Context" again on line 8 (the one on line 5 is kept); "user" again on lines 9, 11, 12 (the one on line 6 is kept); "assistant" again on line 10 (the one on line 7 is kept)`) {
		t.Errorf("frontend-developer: %q, notes %q", fe.Description, fe.Notes)
	}
	api, _ := set.Get("api-tester")
	if api.Description != "Use this agent for load tests, contract tests and API performance checks." {
		t.Errorf("api-tester keeps its second description: %q", api.Description)
	}
	for _, asked := range []string{"Python DevOps/CI-CD Expert", "python-devops-ci-cd-expert"} {
		p, err := set.Lookup(asked)
		if err != nil || p.Name != "python-devops-ci-cd-expert" {
			t.Errorf("Lookup(%q) = %q, %v", asked, p.Name, err)
		}
	}
}

// TestEveryClaudeFixtureLoads: every file of testdata/claude, the shapes
// public Claude Code collections write (the four ink once skipped among
// them: three frontmatters that repeat a key, a name with a '/'), installed
// as five collections under ~/.claude/agents, loads as an agent: no file is
// skipped, each gives an agent of its own, and `ink agents check` finds no
// error in them.
func TestEveryClaudeFixtureLoads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "claude", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, once := range []string{"frontend-developer.md", "api-tester.md", "sprint-prioritizer.md", "python-devops-expert.md"} {
		if !slices.Contains(files, filepath.Join("testdata", "claude", once)) {
			t.Fatalf("the fixtures lack %s, a shape ink once skipped", once)
		}
	}
	l := newLayout(t)
	claude := filepath.Join(l.home, ".claude", "agents")
	var installed []string
	for i, f := range files {
		installed = append(installed, copyFixture(t, filepath.Base(f), filepath.Join(claude, fmt.Sprintf("collection-%d", i%5))))
	}
	set := Load(l.options(t, false))
	if probs := set.Problems(); len(probs) != 0 {
		t.Errorf("files skipped: %v", probs)
	}
	if got := len(set.Names()); got != len(files) {
		t.Errorf("%d agents from %d files: %q", got, len(files), set.Names())
	}
	sources := map[string]bool{}
	for _, name := range set.Names() {
		p, _ := set.Get(name)
		sources[p.Source] = true
	}
	for _, f := range installed {
		if !sources[f] {
			t.Errorf("%s gave no agent", f)
		}
	}
	for _, p := range Check(claude, CheckOptions{}) {
		if !p.Warning {
			t.Errorf("agents check reports an error: %v", p)
		}
	}
}
