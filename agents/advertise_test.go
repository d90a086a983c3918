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

func TestAdvertiseCapsSeventeenAgentsAtSixteen(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	for i := 1; i <= 17; i++ {
		name := fmt.Sprintf("agent-%02d", i)
		writeFile(t, filepath.Join(l.inkHome, "agents", name+".md"), profileText(name, "does job "+name))
	}
	block := Advertise(Load(LoadOptions{InkHome: l.inkHome}))
	lines := agentLines(block)
	if len(lines) != 16 {
		t.Fatalf("%d agents listed, want 16:\n%s", len(lines), block)
	}
	if lines[0] != "- agent-01: does job agent-01" || lines[15] != "- agent-16: does job agent-16" {
		t.Errorf("first %q last %q", lines[0], lines[15])
	}
	if !strings.HasSuffix(block, "(1 more agent omitted; see `ink agents ls`)\n") {
		t.Errorf("block does not end with the omission line:\n%s", block)
	}
}

func TestAdvertiseDescriptionsAreOneLineAndCapped(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	long := strings.Repeat("é", 400) // 800 bytes of 2-byte characters
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

func TestAdvertiseTotalCap(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	for i := 1; i <= 10; i++ {
		name := fmt.Sprintf("agent-%02d", i)
		writeFile(t, filepath.Join(l.inkHome, "agents", name+".md"), profileText(name, strings.Repeat("x", 100)))
	}
	set := Load(LoadOptions{InkHome: l.inkHome})
	limits := advertiseLimits{agents: 16, description: 512, total: 600}
	block := advertise(set, limits)
	if len(block) > limits.total {
		t.Errorf("block is %d bytes, over the cap of %d:\n%s", len(block), limits.total, block)
	}
	shown := len(agentLines(block))
	if shown == 0 || shown == 10 {
		t.Fatalf("%d agents shown; the cap should cut some but not all", shown)
	}
	if !strings.Contains(block, fmt.Sprintf("(%d more agents omitted; see `ink agents ls`)", 10-shown)) {
		t.Errorf("omission line missing or wrong count:\n%s", block)
	}
	// With the real limits every one of these fits.
	if full := Advertise(set); len(agentLines(full)) != 10 || len(full) > AdvertiseMaxBytes {
		t.Errorf("real limits: %d agents, %d bytes", len(agentLines(full)), len(full))
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

// TestAdvertiseRealTotalCap reaches the 12 KiB cap with the real limits:
// sixteen agents with the longest names and descriptions, plus the note on
// untrusted agents of a project with a very long path.
func TestAdvertiseRealTotalCap(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	project := l.project
	for i := 0; i < 8; i++ {
		project = filepath.Join(project, strings.Repeat(string(rune('a'+i)), 200))
	}
	writeFile(t, filepath.Join(project, ".ink", "agents", "p.md"), profileText("p", "x"))
	writeFile(t, filepath.Join(project, ".claude", "agents", "q.md"), profileText("q", "x"))
	for i := 1; i <= 16; i++ {
		name := fmt.Sprintf("%02d-%s", i, strings.Repeat("n", 61)) // 64 bytes
		writeFile(t, filepath.Join(l.inkHome, "agents", fmt.Sprintf("a%02d.md", i)), profileText(name, strings.Repeat("d ", 400)))
	}
	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome, ProjectRoot: project})
	if len(set.All()) != 16 || set.UntrustedMessage() == "" {
		t.Fatalf("setup: %d agents, untrusted %q", len(set.All()), set.UntrustedMessage())
	}
	block := Advertise(set)
	if len(block) > AdvertiseMaxBytes {
		t.Errorf("block is %d bytes, over %d", len(block), AdvertiseMaxBytes)
	}
	shown := len(agentLines(block))
	if shown >= 16 || shown == 0 {
		t.Fatalf("%d agents shown; the total cap should leave some out", shown)
	}
	if !strings.Contains(block, fmt.Sprintf("(%d more agents omitted; see `ink agents ls`)\n", 16-shown)) ||
		!strings.HasSuffix(block, "Not loaded: "+set.UntrustedMessage()+".\n") {
		t.Errorf("omission line or untrusted note missing:\n%s", block[len(block)-400:])
	}
}

func TestAdvertiseNeverExceedsTheCap(t *testing.T) {
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
		block := Advertise(Load(opts))
		if len(block) > AdvertiseMaxBytes || !strings.HasSuffix(block, "…\n") || !utf8.ValidString(block) {
			t.Errorf("block of %d bytes (cap %d) ends %q", len(block), AdvertiseMaxBytes, block[len(block)-20:])
		}
	}
}
