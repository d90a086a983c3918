package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// emptyRef leaves rec's ink branch as a crash of the machine leaves a ref
// git wrote without syncing it: an empty file.
func emptyRef(t *testing.T, rec Record) string {
	t.Helper()
	ref := filepath.Join(rec.RepoRoot, ".git", "refs", "heads", filepath.FromSlash(rec.Branch))
	if err := os.Truncate(ref, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := gitTry(rec.RepoRoot, "gc", "--quiet"); err == nil {
		t.Fatal("git gc passed with an empty ref; the test does not reproduce the crash")
	}
	return ref
}

// TestBrokenBranchIsRemovedAndSaid: an ink/<id> ref a crash left empty is
// deleted by `rm --force` and by prune (also when prune keeps the
// worktree, holding work), each saying so, and git gc works again.
func TestBrokenBranchIsRemovedAndSaid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, via := range []string{"rm --force", "prune keeps the work"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			root, home := newRepo(t), newInkHome(t)
			rec := newWorktree(t, root, home, "r")
			Lock(ctx, rec, lockReason("r", deadPID(t)))
			writeFile(t, rec.Path, "work.txt", "uncommitted work")
			ref := emptyRef(t, rec)
			var said string
			switch via {
			case "rm --force":
				info, err := Find(ctx, home, "r")
				if err != nil {
					t.Fatal(err)
				}
				res, err := RemoveForce(ctx, info, true)
				if err != nil || !res.Removed {
					t.Fatalf("rm --force: %+v, %v", res, err)
				}
				said = res.BrokenBranch
			default:
				res, err := Prune(ctx, home, PruneOptions{})
				if err != nil || len(res.Kept) != 1 || len(res.Removed) != 0 {
					t.Fatalf("prune: %+v, %v; want the worktree with work kept", res, err)
				}
				said = res.Kept[0].BrokenBranch
				if data, err := os.ReadFile(filepath.Join(rec.Path, "work.txt")); err != nil || string(data) != "uncommitted work" {
					t.Fatalf("the work in the kept worktree: %q, %v", data, err)
				}
			}
			if said != "refs/heads/ink/r" {
				t.Errorf("the result names broken branch %q, want refs/heads/ink/r", said)
			}
			if exists(ref) {
				t.Error("the broken ref is still there")
			}
			if out, err := gitTry(root, "gc", "--quiet"); err != nil {
				t.Errorf("git gc after the repair: %v: %s", err, out)
			}
		})
	}
}

// TestGitVersionAtLeast: the version check behind syncBranch.
func TestGitVersionAtLeast(t *testing.T) {
	for out, want := range map[string]bool{
		"git version 2.39.5\n": true, "git version 2.36.0": true, "git version 2.35.9": false,
		"git version 3.0.0": true, "git version 1.9": false, "nonsense": false,
	} {
		if got := versionAtLeast(out, 2, 36); got != want {
			t.Errorf("%q: %v, want %v", out, got, want)
		}
	}
}

// TestWritingGitSyncs: the git commands ink writes with ask git to sync
// the objects and refs they make.
func TestWritingGitSyncs(t *testing.T) {
	c := (&repoLock{}).call(gitCall{args: []string{"update-ref"}})
	found := false
	for _, kv := range c.config {
		found = found || kv == "core.fsync=committed,index"
	}
	if !found {
		t.Fatalf("a writing call's config %v lacks core.fsync", c.config)
	}
}
