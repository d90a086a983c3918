package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAdvertiseGolden(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	files, _ := filepath.Glob("testdata/claude/*.md")
	for _, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(l.inkHome, "agents", filepath.Base(src)), string(data))
	}
	got := Advertise(Load(LoadOptions{Home: l.home, InkHome: l.inkHome}))
	golden := filepath.Join("testdata", "golden", "advertise.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Advertise differs from %s:\n%s", golden, got)
	}
}

// agentLines returns the "- name: description" lines of a block.
func agentLines(block string) []string {
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "- ") {
			lines = append(lines, line)
		}
	}
	return lines
}

// TestAdvertiseNamesEveryAgent: with hundreds of agents (a user who
// installed several collections), every one is named, whatever its place
// in the alphabet, and the block stays within its budget because the
// descriptions are shortened.
func TestAdvertiseNamesEveryAgent(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	const n = 359
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%c-agent-%03d", 'a'+i%26, i)
		writeFile(t, filepath.Join(l.inkHome, "agents", fmt.Sprintf("c%d", i%5), name+".md"),
			profileText(name, fmt.Sprintf("Use this agent for job %d. ", i)+strings.Repeat("Long explanation with examples. ", 40)))
	}
	set := Load(LoadOptions{InkHome: l.inkHome})
	if len(set.Names()) != n {
		t.Fatalf("setup: %d agents loaded, want %d; problems %v", len(set.Names()), n, set.Problems())
	}
	block := Advertise(set)
	if len(block) > AdvertiseMaxBytes {
		t.Errorf("block is %d bytes, over the %d budget", len(block), AdvertiseMaxBytes)
	}
	lines := agentLines(block)
	if len(lines) != n {
		t.Fatalf("%d agents listed, want all %d", len(lines), n)
	}
	// Every description reads "Use this agent for job N. Long …": the
	// boilerplate goes and the first sentence, which tells them apart,
	// stays whole.
	for i, name := range set.Names() {
		var n int
		fmt.Sscanf(name[len("a-agent-"):], "%d", &n)
		if want := fmt.Sprintf("- %s: For job %d.", name, n); lines[i] != want {
			t.Fatalf("line %d is %q, want %q", i, lines[i], want)
		}
	}
	if !strings.HasSuffix(block, "Descriptions are shortened to fit; `ink agents show NAME` prints one whole.\n") {
		t.Errorf("the block does not say how to read a description whole:\n…%s", block[len(block)-200:])
	}
	if strings.Contains(block, "omitted") {
		t.Errorf("no agent may be omitted:\n%s", block[:500])
	}
}

// TestAdvertiseKeepsWhatTellsAgentsApart: 386 agents whose descriptions
// all open with "Use this agent when you need to" and run on with examples
// are each listed by what they are for, not by the boilerplate they share.
func TestAdvertiseKeepsWhatTellsAgentsApart(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	jobs := []string{"review Go code for races", "write database migrations", "tune Kubernetes manifests", "triage flaky tests"}
	const n = 386
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("agent-%03d", i)
		desc := fmt.Sprintf("Use this agent when you need to %s in service %d. Examples: <example>Context: the user asks. user: \"do it\" assistant: \"I will use the %s agent\"</example>", jobs[i%len(jobs)], i, name)
		writeFile(t, filepath.Join(l.inkHome, "agents", name+".md"), profileText(name, desc))
	}
	set := Load(LoadOptions{InkHome: l.inkHome})
	block := Advertise(set)
	lines := agentLines(block)
	if len(lines) != n || len(block) > AdvertiseMaxBytes {
		t.Fatalf("%d agents in %d bytes", len(lines), len(block))
	}
	seen := map[string]bool{}
	for i, line := range lines {
		_, desc, _ := strings.Cut(line, ": ")
		if strings.Contains(desc, "Use this agent") || !strings.Contains(strings.ToLower(desc), strings.ToLower(jobs[i%len(jobs)][:10])) {
			t.Errorf("line %q does not say what the agent is for", line)
		}
		seen[desc] = true
	}
	if len(seen) < n/2 {
		t.Errorf("only %d of %d descriptions differ", len(seen), n)
	}
}

// TestAdvertiseShortensLongestDescriptionsFirst: under a small budget,
// short descriptions stay whole and the long ones are cut to a common
// length; when even short cuts do not fit, names alone are listed.
func TestAdvertiseShortensLongestDescriptionsFirst(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.inkHome, "agents", "short.md"), profileText("short", "tiny job"))
	writeFile(t, filepath.Join(l.inkHome, "agents", "long1.md"), profileText("long1", strings.Repeat("a", 900)))
	writeFile(t, filepath.Join(l.inkHome, "agents", "long2.md"), profileText("long2", strings.Repeat("b", 700)))
	set := Load(LoadOptions{InkHome: l.inkHome})
	block := advertise(set, advertiseLimits{description: 1024, total: 700})
	if len(block) > 700 {
		t.Errorf("block is %d bytes, over 700:\n%s", len(block), block)
	}
	lines := agentLines(block)
	if len(lines) != 3 || lines[2] != "- short: tiny job" {
		t.Fatalf("lines %q", lines)
	}
	d1, d2 := strings.TrimPrefix(lines[0], "- long1: "), strings.TrimPrefix(lines[1], "- long2: ")
	if len(d1) != len(d2) || !strings.HasSuffix(d1, "…") || len(d1) < 100 {
		t.Errorf("long descriptions cut to %d and %d bytes; want the same cut, ending in …", len(d1), len(d2))
	}
	names := advertise(set, advertiseLimits{description: 1024, total: 150})
	if got := agentLines(names); len(got) != 3 || got[0] != "- long1" || got[2] != "- short" {
		t.Errorf("with no room for descriptions, want names alone; got %q", got)
	}
}

func TestAdvertiseDescriptionsAreOneLineAndCapped(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	long := strings.Repeat("é", 700) // 1400 bytes of 2-byte characters
	writeFile(t, filepath.Join(l.inkHome, "agents", "long.md"), "---\nname: long\ndescription: "+long+"\n---\n")
	writeFile(t, filepath.Join(l.inkHome, "agents", "multi.md"),
		"---\nname: multi\ndescription: \"first line\\n\\n\\tsecond\\u0007 line\\r\\n  third\"\n---\n")
	block := Advertise(Load(LoadOptions{InkHome: l.inkHome}))
	lines := agentLines(block)
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	desc := strings.TrimPrefix(lines[0], "- long: ")
	if len(desc) > AdvertiseMaxDescription || !strings.HasSuffix(desc, "…") || !utf8.ValidString(desc) {
		t.Errorf("long description: %d bytes, valid UTF-8 %v, ends %q", len(desc), utf8.ValidString(desc), desc[len(desc)-6:])
	}
	if len(desc) < AdvertiseMaxDescription-3 {
		t.Errorf("long description cut too short: %d bytes", len(desc))
	}
	if lines[1] != "- multi: first line second line third" {
		t.Errorf("multi-line description rendered %q", lines[1])
	}
}

func TestAdvertiseWithNoAgents(t *testing.T) {
	t.Parallel()
	t.Run("none defined", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		block := Advertise(Load(l.options(t, false)))
		if !strings.Contains(block, "No agents are defined") || !strings.Contains(block, "~/.ink/agents/NAME.md") {
			t.Errorf("block:\n%s", block)
		}
	})
	t.Run("only untrusted ones", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		writeFile(t, filepath.Join(l.project, ".ink", "agents", "a.md"), profileText("a", "x"))
		set := Load(l.options(t, false))
		block := Advertise(set)
		if strings.Contains(block, "No agents are defined") {
			t.Errorf("untrusted agents reported as none defined:\n%s", block)
		}
		if !strings.Contains(block, set.UntrustedMessage()) || !strings.Contains(block, "ink trust "+l.project) {
			t.Errorf("block does not say how to trust:\n%s", block)
		}
	})
	t.Run("some loaded, some untrusted", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		writeFile(t, filepath.Join(l.inkHome, "agents", "mine.md"), profileText("mine", "personal"))
		writeFile(t, filepath.Join(l.project, ".claude", "agents", "a.md"), profileText("a", "x"))
		set := Load(l.options(t, false))
		block := Advertise(set)
		if len(agentLines(block)) != 1 || !strings.HasSuffix(block, "Not loaded: "+set.UntrustedMessage()+".\n") {
			t.Errorf("block:\n%s", block)
		}
	})
	t.Run("custom INK_HOME is named", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		other := filepath.Join(t.TempDir(), "inkhome")
		block := Advertise(Load(LoadOptions{Home: l.home, InkHome: other}))
		if !strings.Contains(block, filepath.Join(other, "agents")+"/NAME.md") {
			t.Errorf("block:\n%s", block)
		}
	})
}

// TestAdvertiseUntrustedNoteIsBounded: the note on untrusted project
// agents of a project with an extremely long path takes at most a quarter
// of the budget, and a block with no agents at all stays within it.
func TestAdvertiseUntrustedNoteIsBounded(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	project := l.project
	for i := 0; i < 15; i++ {
		project = filepath.Join(project, strings.Repeat(string(rune('a'+i)), 250))
	}
	writeFile(t, filepath.Join(project, ".ink", "agents", "p.md"), profileText("p", "x"))
	writeFile(t, filepath.Join(project, ".claude", "agents", "q.md"), profileText("q", "x"))
	writeFile(t, filepath.Join(l.inkHome, "agents", "a.md"), profileText("a", "x"))
	for _, opts := range []LoadOptions{
		{Home: l.home, InkHome: l.inkHome, ProjectRoot: project},
		{Home: l.home, ProjectRoot: project},
	} {
		set := Load(opts)
		block := advertise(set, advertiseLimits{description: 1024, total: 8 * 1024})
		if len(block) > 8*1024 || !strings.HasSuffix(block, "…\n") || !utf8.ValidString(block) {
			t.Errorf("block of %d bytes (cap %d) ends %q", len(block), 8*1024, block[len(block)-20:])
		}
		if len(set.Names()) == 1 && len(agentLines(block)) != 1 {
			t.Errorf("the loaded agent is not listed:\n%s", block[:200])
		}
	}
}
