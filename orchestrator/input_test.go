package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/worktree"
)

// TestCheckTask: the check a front end runs before anything is written
// refuses what the supervisor refuses, as a typed *InputError naming the
// argument at fault, bad input but for git failing to answer; a request
// that passes is nil.
func TestCheckTask(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	set := loadProfiles(t, home, map[string]string{"fixer": "worktree: true\n", "lost": "model: script:nowhere.yaml\n"}).Current()
	notGit := t.TempDir()
	parent := model.Binding{Provider: "script", Model: "/main.yaml"}
	yes := true
	name := func(s string) *string { return &s }
	for _, c := range []struct {
		name string
		args TaskArgs
		arg  InputArg
		why  string
		is   error
	}{
		{"unknown agent", TaskArgs{Prompt: "p", Agent: name("nobody")}, ArgAgent, "", nil},
		{"missing script", TaskArgs{Prompt: "p", Agent: name("lost")}, ArgAgent, "", nil},
		{"worktree argument outside git", TaskArgs{Prompt: "p", Worktree: &yes}, ArgWorktree, "", worktree.ErrNotRepository},
		{"profile's worktree outside git", TaskArgs{Prompt: "p", Agent: name("fixer")}, ArgWorktree, `agent "fixer" asks for a worktree (worktree: true in ` + filepath.Join(home, "agents", "fixer.md") + ")", worktree.ErrNotRepository},
	} {
		err := CheckTask(t.Context(), set, notGit, parent, c.args, os.Getenv)
		var in *InputError
		if !errors.As(err, &in) || in.Arg != c.arg || in.Why != c.why || !errors.Is(err, ErrBadInput) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%s: %#v (%v), want an InputError on %s", c.name, err, err, c.arg)
		}
	}
	if err := CheckTask(t.Context(), set, notGit, parent, TaskArgs{Prompt: "p"}, os.Getenv); err != nil {
		t.Errorf("a plain task: %v", err)
	}
	if err := CheckTask(t.Context(), (*agents.Set)(nil), notGit, parent, TaskArgs{Prompt: "p", Agent: name("x")}, os.Getenv); !errors.Is(err, ErrBadInput) {
		t.Errorf("an agent with no profiles defined: %v", err)
	}
	// git that cannot answer is no bad input of the user's.
	failed := &InputError{Arg: ArgWorktree, Err: errors.New("git: exit status 128")}
	if errors.Is(failed, ErrBadInput) {
		t.Error("a git failure counts as bad input")
	}
}
