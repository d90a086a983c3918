package agents

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileFileBound: a profile file past MaxProfileBytes is skipped,
// by Load and by Check, with a problem naming the bound; the profiles
// beside it load, and a collection's huge README is still ignored.
func TestProfileFileBound(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	writeFile(t, filepath.Join(dir, "small.md"), profileText("small", "a small agent"))
	writeFile(t, filepath.Join(dir, "huge.md"), profileText("huge", "a huge agent")+strings.Repeat("x", MaxProfileBytes))
	writeFile(t, filepath.Join(dir, "at-bound.md"), func() string {
		p := profileText("atbound", "an agent at the bound")
		return p + strings.Repeat("y", MaxProfileBytes-len(p))
	}())
	writeFile(t, filepath.Join(dir, "README.md"), "# My agents\n"+strings.Repeat("z", 2*MaxProfileBytes))

	set := Load(LoadOptions{Home: l.home, InkHome: l.inkHome})
	if got := fmt.Sprint(set.Names()); got != "[atbound small]" {
		t.Errorf("agents = %s; want the small ones", got)
	}
	check := func(what string, problems []Problem) {
		t.Helper()
		if len(problems) != 1 || problems[0].Path != filepath.Join(dir, "huge.md") ||
			!strings.Contains(problems[0].Reason, "over ink's profile-file bound of 1 MiB, so ink skipped it") ||
			!strings.Contains(problems[0].Reason, "the file is 1.0 MiB") {
			t.Errorf("%s problems = %v; want one for huge.md naming the bound", what, problems)
		}
	}
	check("Load", set.Problems())
	check("Check", Check(dir, CheckOptions{}))
}
