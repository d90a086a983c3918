package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// announce loads opts and returns what Announce says, as one run of ink
// would.
func announce(opts LoadOptions) []string {
	var got []string
	Announce(Load(opts), opts.InkHome, func(msg string) { got = append(got, msg) })
	return got
}

// TestAnnounceWarnsOncePerFileVersion: a skipped file is warned about on
// the first run that sees it and not again while it is unchanged; every
// run says in one line how many files are skipped; an edited file is
// warned about again; with no INK_HOME every run warns.
func TestAnnounceWarnsOncePerFileVersion(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.home, ".claude", "agents")
	bad1 := filepath.Join(dir, "collection", "notes.md")
	bad2 := filepath.Join(dir, "slow.md")
	writeFile(t, bad1, "# Agents\n")
	writeFile(t, bad2, "---\nname: slow\ndescription: x\ntimeout: soon\n---\n")
	writeFile(t, filepath.Join(dir, "ok.md"), profileText("ok", "fine"))
	opts := LoadOptions{Home: l.home, InkHome: l.inkHome}
	summary := "2 agent files skipped — run `ink agents check` for the reasons"

	first := announce(opts)
	want := []string{ // a directory's own files before its subdirectories'
		"agent file " + bad2 + `:4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "soon"; skipped`,
		"agent file " + bad1 + ":1: no frontmatter: the file must start with a line '---'; skipped",
		summary,
	}
	if strings.Join(first, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first run warned\n%s\nwant\n%s", strings.Join(first, "\n"), strings.Join(want, "\n"))
	}
	if second := announce(opts); strings.Join(second, "\n") != summary {
		t.Fatalf("second run warned %q, want the summary line only", second)
	}
	data, err := os.ReadFile(filepath.Join(l.inkHome, skipMemoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var mem skipMemory
	if err := json.Unmarshal(data, &mem); err != nil || mem.Version != 1 || len(mem.Files) != 2 {
		t.Fatalf("memory %s: %v", data, err)
	}

	// An edit makes a new version: warned about again, once.
	writeFile(t, bad2, "---\nname: slow\ndescription: x\ntimeout: later\n---\n")
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(bad2, future, future); err != nil {
		t.Fatal(err)
	}
	third := announce(opts)
	if len(third) != 2 || !strings.Contains(third[0], `got "later"; skipped`) || third[1] != summary {
		t.Fatalf("after an edit, warned %q", third)
	}
	if fourth := announce(opts); strings.Join(fourth, "\n") != summary {
		t.Fatalf("the edited file was warned about twice: %q", fourth)
	}

	// Fixed files are forgotten; all fixed, nothing is said.
	writeFile(t, bad2, profileText("slow", "x"))
	if err := os.Remove(bad1); err != nil {
		t.Fatal(err)
	}
	if fifth := announce(opts); len(fifth) != 0 {
		t.Fatalf("with nothing skipped, warned %q", fifth)
	}
	data, _ = os.ReadFile(filepath.Join(l.inkHome, skipMemoryFile))
	var after skipMemory
	if err := json.Unmarshal(data, &after); err != nil || len(after.Files) != 0 {
		t.Errorf("memory after the fixes %s", data)
	}

	// Without INK_HOME nothing is remembered.
	writeFile(t, bad1, "# Agents\n")
	noHome := LoadOptions{Home: l.home}
	for i := 0; i < 2; i++ {
		if got := announce(noHome); len(got) != 2 || got[1] != "1 agent file skipped — run `ink agents check` for the reason" {
			t.Errorf("run %d without INK_HOME warned %q", i, got)
		}
	}
}

// TestWatchIsQuietAcrossRuns: two runs of ink (two Watch calls) warn about
// a skipped file once, and each run gives the summary line; a file broken
// while ink runs is warned about then and not by the next run.
func TestWatchIsQuietAcrossRuns(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	bad := filepath.Join(l.inkHome, "agents", "bad.md")
	writeFile(t, bad, "no frontmatter\n")
	opts := LoadOptions{InkHome: l.inkHome}
	_, first := startWatch(t, opts)
	if got := first.all(); len(got) != 2 || !strings.HasPrefix(got[0], "agent file "+bad) || got[1] != "1 agent file skipped — run `ink agents check` for the reason" {
		t.Fatalf("first run warned %q", got)
	}
	reg, second := startWatch(t, opts)
	if got := second.all(); len(got) != 1 || !strings.HasPrefix(got[0], "1 agent file skipped") {
		t.Fatalf("second run warned %q", got)
	}

	broken := filepath.Join(l.inkHome, "agents", "later.md")
	writeFile(t, broken, "---\nname: later\n---\n")
	eventually(t, "a file broken while ink runs is warned about", func() bool {
		for _, m := range second.all() {
			if strings.HasPrefix(m, "agent file "+broken) {
				return true
			}
		}
		return false
	})
	eventually(t, "the registry sees it", func() bool { return len(reg.Current().Problems()) == 2 })
	_, third := startWatch(t, opts)
	if got := third.all(); len(got) != 1 || got[0] != "2 agent files skipped — run `ink agents check` for the reasons" {
		t.Fatalf("third run warned %q", got)
	}
}
