package agents

import (
	"path/filepath"
	"testing"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	t.Run("found", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		writeFile(t, filepath.Join(l.inkHome, "agents", "a.md"), profileText("a", "x"))
		p, err := Load(LoadOptions{InkHome: l.inkHome}).Lookup("a")
		if err != nil || p.Name != "a" {
			t.Errorf("Lookup(a) = %v, %v", p.Name, err)
		}
	})
	t.Run("unknown lists the available ones and a skipped file of that name", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		dir := filepath.Join(l.inkHome, "agents")
		writeFile(t, filepath.Join(dir, "b.md"), profileText("b", "x"))
		writeFile(t, filepath.Join(dir, "a.md"), profileText("a", "x"))
		writeFile(t, filepath.Join(dir, "scout.md"), "---\nname: scout\n---\n")
		_, err := Load(LoadOptions{InkHome: l.inkHome}).Lookup("scout")
		want := `unknown agent "scout"; available agents: a, b; ` + filepath.Join(dir, "scout.md") +
			` was skipped: missing required field "description": add a line "description: when to use this agent" to the frontmatter`
		if err == nil || err.Error() != want {
			t.Errorf("error\n got: %v\nwant: %s", err, want)
		}
	})
	t.Run("only untrusted ones", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		writeFile(t, filepath.Join(l.project, ".ink", "agents", "a.md"), profileText("a", "x"))
		set := Load(l.options(t, false))
		_, err := set.Lookup("a")
		want := `unknown agent "a"; no agents are loaded; ` + set.UntrustedMessage()
		if err == nil || err.Error() != want {
			t.Errorf("error\n got: %v\nwant: %s", err, want)
		}
	})
	t.Run("none defined", func(t *testing.T) {
		t.Parallel()
		l := newLayout(t)
		_, err := Load(LoadOptions{Home: l.home, InkHome: l.inkHome}).Lookup("scout")
		want := `unknown agent "scout"; no agents are defined (create ~/.ink/agents/scout.md to define it), or leave out agent`
		if err == nil || err.Error() != want {
			t.Errorf("error\n got: %v\nwant: %s", err, want)
		}
	})
}
