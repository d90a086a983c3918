package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// gitRepo makes a repository with one commit in base/checkout and a linked
// worktree on branch in base/wt; it returns both paths.
func gitRepo(t *testing.T, base, branch string) (checkout, worktree string) {
	t.Helper()
	checkout = filepath.Join(base, "checkout")
	worktree = filepath.Join(base, "wt")
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"commit", "-q", "--allow-empty", "-m", "init"},
		{"worktree", "add", "-q", "-b", branch, worktree},
	} {
		cmd := exec.Command("git", append([]string{"-C", checkout, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return checkout, worktree
}

func TestWorktreeGitDirs(t *testing.T) {
	t.Parallel()
	fresh := func(t *testing.T, branch string) (string, string, string) {
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		checkout, wt := gitRepo(t, base, branch)
		return base, filepath.Join(checkout, ".git"), wt
	}
	write := func(t *testing.T, p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("worktree on a nested branch", func(t *testing.T) {
		t.Parallel()
		_, common, wt := fresh(t, "ink/child")
		want := []string{
			filepath.Join(common, "worktrees", "wt"), filepath.Join(common, "objects"),
			filepath.Join(common, "refs", "heads", "ink"), filepath.Join(common, "logs", "refs", "heads", "ink"),
		}
		if got := sandbox.WorktreeGitDirs(wt); !reflect.DeepEqual(got, want) {
			t.Fatalf("WorktreeGitDirs = %v, want %v", got, want)
		}
	})
	t.Run("top-level branch gets no refs", func(t *testing.T) {
		t.Parallel()
		_, common, wt := fresh(t, "feature")
		want := []string{filepath.Join(common, "worktrees", "wt"), filepath.Join(common, "objects")}
		if got := sandbox.WorktreeGitDirs(wt); !reflect.DeepEqual(got, want) {
			t.Fatalf("WorktreeGitDirs = %v, want %v", got, want)
		}
	})
	t.Run("a HEAD climbing out gets no refs", func(t *testing.T) {
		t.Parallel()
		_, common, wt := fresh(t, "ink/child")
		write(t, filepath.Join(common, "worktrees", "wt", "HEAD"), "ref: refs/heads/../../../../home/x\n")
		want := []string{filepath.Join(common, "worktrees", "wt"), filepath.Join(common, "objects")}
		if got := sandbox.WorktreeGitDirs(wt); !reflect.DeepEqual(got, want) {
			t.Fatalf("WorktreeGitDirs = %v, want %v", got, want)
		}
	})
	t.Run("main checkout", func(t *testing.T) {
		t.Parallel()
		base, _, _ := fresh(t, "ink/child")
		if got := sandbox.WorktreeGitDirs(filepath.Join(base, "checkout")); got != nil {
			t.Fatalf("WorktreeGitDirs = %v, want nil", got)
		}
	})
	t.Run("no git", func(t *testing.T) {
		t.Parallel()
		if got := sandbox.WorktreeGitDirs(t.TempDir()); got != nil {
			t.Fatalf("WorktreeGitDirs = %v, want nil", got)
		}
	})
	t.Run(".git pointing elsewhere", func(t *testing.T) {
		t.Parallel()
		base, _, wt := fresh(t, "ink/child")
		// Another repository's worktree dir, whose back-pointer does
		// not name this .git.
		other := filepath.Join(base, "other")
		_, otherWt := gitRepo(t, other, "ink/other")
		otherGitdir := filepath.Join(other, "checkout", ".git", "worktrees", filepath.Base(otherWt))
		write(t, filepath.Join(wt, ".git"), "gitdir: "+otherGitdir+"\n")
		if got := sandbox.WorktreeGitDirs(wt); got != nil {
			t.Fatalf("WorktreeGitDirs = %v, want nil", got)
		}
	})
	t.Run(".git naming a directory outside worktrees/", func(t *testing.T) {
		t.Parallel()
		base, _, wt := fresh(t, "ink/child")
		home := filepath.Join(base, "home")
		if err := os.MkdirAll(filepath.Join(home, "objects"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(home, "gitdir"), filepath.Join(wt, ".git")+"\n")
		write(t, filepath.Join(wt, ".git"), "gitdir: "+home+"\n")
		if got := sandbox.WorktreeGitDirs(wt); got != nil {
			t.Fatalf("WorktreeGitDirs = %v, want nil", got)
		}
	})
	t.Run(".git is a symlink", func(t *testing.T) {
		t.Parallel()
		base, _, wt := fresh(t, "ink/child")
		moved := filepath.Join(base, "dotgit")
		if err := os.Rename(filepath.Join(wt, ".git"), moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, filepath.Join(wt, ".git")); err != nil {
			t.Fatal(err)
		}
		if got := sandbox.WorktreeGitDirs(wt); got != nil {
			t.Fatalf("WorktreeGitDirs = %v, want nil", got)
		}
	})
}
