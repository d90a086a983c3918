package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUntouchedWorktreeIsCleanAndRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	mainHead := git(t, root, "rev-parse", "HEAD")
	rec := newWorktree(t, root, home, "c1")

	if rec.Branch != "ink/c1" || rec.Baseline != mainHead || rec.RepoRoot != root || rec.Cwd != rec.Path {
		t.Fatalf("record = %+v", rec)
	}
	if want := filepath.Join(home, "worktrees", RepoSlug(root), "c1"); !samePath(rec.Path, want) {
		t.Fatalf("path %s, want %s", rec.Path, want)
	}
	if !strings.Contains(git(t, root, "worktree", "list", "--porcelain"), "locked ink c1 pid "+itoa(os.Getpid())) {
		t.Fatal("worktree is not locked with ink's reason")
	}
	a := Assess(ctx, rec)
	if a.State != Clean {
		t.Fatalf("Assess = %+v, want clean", a)
	}
	if err := Remove(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if exists(rec.Path) {
		t.Error("worktree directory still exists")
	}
	if branchExists(t, root, rec.Branch) {
		t.Error("branch still exists")
	}
	if isRegistered(t, root, rec.Path) {
		t.Error("worktree still registered")
	}
	if exists(recordPath(rec.Path)) {
		t.Error("record file still exists")
	}
	if exists(filepath.Dir(rec.Path)) {
		t.Error("the empty repository directory under INK_HOME/worktrees was left behind")
	}
	if got := git(t, root, "rev-parse", "HEAD"); got != mainHead {
		t.Errorf("main HEAD moved to %s", got)
	}
	if !strings.HasPrefix(Describe(a, rec), "no changes: worktree "+rec.Path+" and branch ink/c1 removed") {
		t.Errorf("Describe = %q", Describe(a, rec))
	}
}

func TestSubdirectoryCwd(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	home := newInkHome(t)
	repo, err := Detect(context.Background(), filepath.Join(root, "src"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Create(context.Background(), repo, home, "sub", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Cwd != filepath.Join(rec.Path, "src") {
		t.Fatalf("cwd %s, want %s/src", rec.Cwd, rec.Path)
	}
	if _, err := os.Stat(filepath.Join(rec.Cwd, "main.go")); err != nil {
		t.Fatalf("cwd does not hold the checked-out file: %v", err)
	}
}

// mutation changes a worktree (or its repository) after creation.
type mutation func(t *testing.T, root string, rec Record)

func TestAssessKeepsWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		mutate    mutation
		describes []string
	}{
		{"untracked file", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "notes.txt", "hello\n")
		}, []string{"uncommitted changes (untracked)", "untracked: notes.txt"}},
		{"untracked files beyond five", func(t *testing.T, _ string, rec Record) {
			for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
				writeFile(t, rec.Path, "new/"+n+".txt", n)
			}
		}, []string{"untracked: new/a.txt, new/b.txt, new/c.txt, new/d.txt, new/e.txt, +2 more"}},
		{"staged change", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "README.md", "# changed\n")
			git(t, rec.Path, "add", "README.md")
		}, []string{"uncommitted changes (staged)", "1 file changed"}},
		{"modified file", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "docs/guide.md", "line one\nline 2\n")
		}, []string{"uncommitted changes (modified)", "1 file changed, 1 insertion(+), 1 deletion(-)"}},
		{"deleted file", func(t *testing.T, _ string, rec Record) {
			os.Remove(filepath.Join(rec.Path, "docs/guide.md"))
		}, []string{"1 file changed, 2 deletions(-)"}},
		{"commit", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "src/extra.go", "package main\n")
			git(t, rec.Path, "add", ".")
			git(t, rec.Path, "commit", "-q", "-m", "extra")
		}, []string{"1 commit since baseline", "1 file changed, 1 insertion(+)"}},
		{"empty commit", func(t *testing.T, _ string, rec Record) {
			git(t, rec.Path, "commit", "-q", "--allow-empty", "-m", "nothing")
		}, []string{"1 commit since baseline"}},
		{"commit then reset --hard to baseline", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "lost.txt", "x\n")
			git(t, rec.Path, "add", ".")
			git(t, rec.Path, "commit", "-q", "-m", "soon lost")
			git(t, rec.Path, "reset", "-q", "--hard", rec.Baseline)
		}, []string{"moved off baseline"}},
		{"change then revert commits", func(t *testing.T, _ string, rec Record) {
			writeFile(t, rec.Path, "README.md", "# other\n")
			git(t, rec.Path, "commit", "-q", "-am", "change")
			git(t, rec.Path, "revert", "--no-edit", "HEAD")
		}, []string{"2 commits since baseline"}},
		{"status.showUntrackedFiles=no cannot hide a file", func(t *testing.T, root string, rec Record) {
			git(t, root, "config", "status.showUntrackedFiles", "no")
			writeFile(t, rec.Path, "hidden.txt", "x\n")
		}, []string{"untracked: hidden.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			rec := newWorktree(t, root, newInkHome(t), "w1")
			tc.mutate(t, root, rec)
			a := Assess(context.Background(), rec)
			if a.State != WorkPresent {
				t.Fatalf("Assess = %+v, want work-present", a)
			}
			d := Describe(a, rec)
			prefix := "changes kept in worktree " + rec.Path + " on branch ink/w1 ("
			suffix := ") — review with `ink worktrees diff w1`, merge with `ink worktrees merge w1`"
			if a.Uncommitted {
				suffix = ") — review with `ink worktrees diff w1`, merge with `ink worktrees merge --commit w1`"
			}
			if uncommitted := !strings.Contains(tc.name, "commit"); a.Uncommitted != uncommitted {
				t.Errorf("Uncommitted = %v, want %v", a.Uncommitted, uncommitted)
			}
			if !strings.HasPrefix(d, prefix) || !strings.HasSuffix(d, suffix) {
				t.Errorf("Describe = %q", d)
			}
			for _, want := range tc.describes {
				if !strings.Contains(d, want) {
					t.Errorf("Describe = %q, want it to mention %q", d, want)
				}
			}
			assertRemoveKeeps(t, root, rec)
		})
	}
}

func TestAssessUnknownKeepsEverything(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate mutation
		detail string
	}{
		{".git file deleted", func(t *testing.T, _ string, rec Record) {
			if err := os.Remove(filepath.Join(rec.Path, ".git")); err != nil {
				t.Fatal(err)
			}
		}, ".git link is missing or broken"},
		{"branch switched", func(t *testing.T, _ string, rec Record) {
			git(t, rec.Path, "switch", "-q", "-c", "elsewhere")
		}, `is on "elsewhere", not on ink/w1`},
		{"detached at baseline", func(t *testing.T, _ string, rec Record) {
			git(t, rec.Path, "checkout", "-q", "--detach")
		}, "has a detached HEAD, not on ink/w1"},
		{"branch deleted", func(t *testing.T, root string, rec Record) {
			git(t, root, "update-ref", "-d", "refs/heads/"+rec.Branch)
		}, "points at nothing"},
		{"assume-unchanged flag", func(t *testing.T, _ string, rec Record) {
			git(t, rec.Path, "update-index", "--assume-unchanged", "README.md")
			writeFile(t, rec.Path, "README.md", "# hidden change\n")
		}, "assume-unchanged or skip-worktree"},
		{"skip-worktree flag", func(t *testing.T, _ string, rec Record) {
			git(t, rec.Path, "update-index", "--skip-worktree", "README.md")
		}, "assume-unchanged or skip-worktree"},
		{"reflog expired", func(t *testing.T, root string, rec Record) {
			git(t, root, "reflog", "expire", "--expire=now", "--all")
		}, "reflog of ink/w1 is empty"},
		{"corrupt index", func(t *testing.T, root string, rec Record) {
			writeFile(t, rec.PrivateGitDir(), "index", "not an index")
		}, "cannot read the index"},
		{"worktree moved", func(t *testing.T, root string, rec Record) {
			if err := os.Rename(rec.Path, rec.Path+"-moved"); err != nil {
				t.Fatal(err)
			}
		}, "cannot be resolved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			rec := newWorktree(t, root, newInkHome(t), "w1")
			tc.mutate(t, root, rec)
			a := Assess(context.Background(), rec)
			if a.State != Unknown {
				t.Fatalf("Assess = %+v, want unknown", a)
			}
			if !strings.Contains(a.Detail, tc.detail) {
				t.Errorf("detail %q, want it to mention %q", a.Detail, tc.detail)
			}
			d := Describe(a, rec)
			if !strings.HasPrefix(d, "worktree kept for safety: ") || !strings.HasSuffix(d, ". Nothing was deleted. Inspect "+rec.Path) {
				t.Errorf("Describe = %q", d)
			}
			before := snapshotTree(t, rec.Path)
			err := Remove(context.Background(), rec)
			var nc *NotCleanError
			if !errors.As(err, &nc) || !errors.Is(err, ErrNotClean) || nc.Assessment.State != Unknown {
				t.Fatalf("Remove = %v, want a NotCleanError", err)
			}
			if after := snapshotTree(t, rec.Path); after != before {
				t.Errorf("Remove changed the worktree:\n%s\n---\n%s", before, after)
			}
		})
	}
}

// assertRemoveKeeps checks that Remove refuses and leaves the worktree,
// branch and registration in place.
func assertRemoveKeeps(t *testing.T, root string, rec Record) {
	t.Helper()
	before := snapshotTree(t, rec.Path)
	err := Remove(context.Background(), rec)
	if !errors.Is(err, ErrNotClean) {
		t.Fatalf("Remove = %v, want ErrNotClean", err)
	}
	if after := snapshotTree(t, rec.Path); after != before {
		t.Errorf("Remove changed the worktree:\n%s\n---\n%s", before, after)
	}
	if !branchExists(t, root, rec.Branch) {
		t.Error("branch was deleted")
	}
	if !isRegistered(t, root, rec.Path) {
		t.Error("registration was removed")
	}
}

// snapshotTree lists every file under dir (except .git internals) with its
// content, so a test can tell whether anything changed.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			b.WriteString("error " + p + "\n")
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel)
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func TestAssessWithCancelledContextIsUnknown(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	rec := newWorktree(t, root, newInkHome(t), "cx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := Assess(ctx, rec); a.State != Unknown || !strings.Contains(a.Detail, "context canceled") {
		t.Fatalf("Assess with a cancelled context = %+v, want unknown naming the cancellation", a)
	}
	if err := Remove(ctx, rec); err == nil {
		t.Fatal("Remove with a cancelled context succeeded")
	}
	if !exists(rec.Path) || !branchExists(t, root, rec.Branch) {
		t.Fatal("a cancelled Remove deleted something")
	}
}

func TestStateText(t *testing.T) {
	t.Parallel()
	var zero State
	if zero != Unknown {
		t.Fatal("the zero State must be Unknown")
	}
	for _, s := range []State{Clean, WorkPresent, Unknown} {
		b, _ := s.MarshalText()
		var back State
		back.UnmarshalText(b)
		if back != s {
			t.Errorf("%v round-trips to %v", s, back)
		}
	}
	var junk State = Clean
	junk.UnmarshalText([]byte("clean-ish"))
	if junk != Unknown {
		t.Error("an unknown state name must read as Unknown")
	}
}

func TestRemoveNeverTouchesAForeignBranch(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	rec := newWorktree(t, root, newInkHome(t), "own")
	git(t, root, "branch", "feature")
	foreign := rec
	foreign.Branch = "feature"
	if err := Remove(context.Background(), foreign); err == nil || !strings.Contains(err.Error(), "ink did not create it") {
		t.Fatalf("Remove = %v, want a refusal", err)
	}
	if !branchExists(t, root, "feature") || !exists(rec.Path) || !branchExists(t, root, "ink/own") {
		t.Fatal("something was deleted")
	}
}
