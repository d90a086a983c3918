package worktree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperChild runs what one worktree child costs in git: Detect of the
// repository, Create, and Settle of the untouched worktree (which
// brings back its commits, assesses it clean and removes it), as the
// orchestrator runs them.
func helperChild() int {
	ctx := context.Background()
	repo, err := Detect(ctx, os.Getenv(envRepo))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rec, err := Create(ctx, repo, os.Getenv(envHome), os.Getenv(envID), os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if out := Settle(ctx, rec); out.Disposition != DispositionRemoved {
		fmt.Fprintf(os.Stderr, "settle: %+v\n", out)
		return 1
	}
	return 0
}

// maxChildGitCommands is the most git commands one worktree child that
// changes nothing may run, from Detect to Settle (32 before Settle
// assessed once, under the lock it removes under).
const maxChildGitCommands = 24

// TestWorktreeChildGitCommands: a worktree child that changes nothing —
// its repository detected, its worktree created and settled (assessed
// clean and removed) — runs at most maxChildGitCommands git commands, every one of
// them through the hardened call (no pager).
func TestWorktreeChildGitCommands(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	home := newInkHome(t)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	fakeDir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(fakeDir, "git")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "git.log")
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=child", envHome+"="+home, envRepo+"="+root, envID+"=counted",
		envRealGit+"="+realGit, envGitLog+"="+log, "PATH="+fakeDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child helper: %v\n%s", err, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, c := range calls {
		if !strings.HasPrefix(c, "--no-pager ") {
			t.Errorf("git ran outside the hardened call: %s", c)
		}
	}
	if len(calls) > maxChildGitCommands {
		t.Errorf("a worktree child ran %d git commands, at most %d expected:\n%s", len(calls), maxChildGitCommands, data)
	}
	t.Logf("%d git commands:\n%s", len(calls), data)
}
