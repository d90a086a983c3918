package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		stderr string
		want   bool
	}{
		{"fatal: Unable to create '/r/.git/index.lock': File exists.\n\nAnother git process seems to be running in this repository", true},
		{"error: could not lock config file .git/config: File exists", true},
		{"fatal: failed to read .git/worktrees/01abc/commondir: No such file or directory", true},
		{"fatal: cannot lock ref 'refs/heads/ink/x': Unable to create '/r/.git/refs/heads/ink/x.lock': File exists.", true},
		{"fatal: cannot lock ref 'refs/heads/ink/x': is at 1234 but expected 5678", false},
		{"fatal: a branch named 'ink/x' already exists", false},
		{"fatal: '/w/x' contains modified or untracked files, use --force to delete it", false},
		{"fatal: not a git repository (or any of the parent directories): .git", false},
	}
	for _, tc := range cases {
		err := &GitError{Args: []string{"x"}, ExitCode: 128, Stderr: tc.stderr}
		if got := transient(err); got != tc.want {
			t.Errorf("transient(%q) = %v, want %v", tc.stderr, got, tc.want)
		}
	}
	if transient(&GitError{ExitCode: -1, Stderr: "index.lock': File exists"}) {
		t.Error("a git that was killed is not transient")
	}
}

// TestRetryOutlastsAnotherGitsLock: a write that meets another git
// process's index.lock succeeds once that process lets go; one that meets
// a lock nobody lets go fails after a bounded wait, with git's message.
func TestRetryOutlastsAnotherGitsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	lock := filepath.Join(root, ".git", "index.lock")
	writeFile(t, root, "README.md", "# changed\n")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The other git lets go once the add has met its lock.
	met := 0
	add := gitCall{dir: root, args: []string{"add", "README.md"}, retrying: func(err error) {
		if met++; met == 1 {
			os.Remove(lock)
		}
	}}
	if _, err := add.exec(ctx); err != nil {
		t.Fatalf("add with a lock released after its first try: %v", err)
	}
	if met != 1 {
		t.Fatalf("the add met the lock %d times, want once", met)
	}
	if git(t, root, "diff", "--cached", "--name-only") != "README.md" {
		t.Fatal("the retried add did not stage the file")
	}

	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := run(ctx, root, "reset", "-q")
	if err == nil || !strings.Contains(err.Error(), "index.lock': File exists") {
		t.Fatalf("reset with a stuck lock = %v, want git's lock error", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("gave up after %v, before retrying", waited)
	}
}

// TestRemovalFailureSaysWhatRemains: when the branch of a clean worktree
// cannot be deleted (another process holds its ref lock for good), Settle
// reports removal-failed, says the branch remains and how to delete it;
// prune later removes it.
func TestRemovalFailureSaysWhatRemains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "stuck")
	Unlock(ctx, rec)
	refLock := filepath.Join(root, ".git", "refs", "heads", "ink", "stuck.lock")
	if err := os.WriteFile(refLock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := Settle(ctx, rec)
	if out.Disposition != DispositionRemovalFailed || strings.Join(out.Remains, ",") != "branch ink/stuck" {
		t.Fatalf("Settle = %+v", out)
	}
	if want := "left behind: branch ink/stuck — check it with `git -C " + root + " log ink/stuck` and delete it with `git -C " + root + " branch -D ink/stuck`"; !strings.Contains(out.Text, want) {
		t.Errorf("Settle text %q lacks %q", out.Text, want)
	}
	if exists(rec.Path) || !branchExists(t, root, "ink/stuck") {
		t.Fatal("want the directory gone and the branch left")
	}
	os.Remove(refLock)
	res, err := Prune(ctx, home, PruneOptions{})
	if err != nil || len(res.Removed) != 1 || branchExists(t, root, "ink/stuck") || exists(recordPath(rec.Path)) {
		t.Fatalf("prune after the failed removal: %+v, %v", res, err)
	}
}
