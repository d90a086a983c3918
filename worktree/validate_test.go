package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(t *testing.T, root string, rec *Record)
		codes  []string
	}{
		{"untouched", func(t *testing.T, root string, rec *Record) {}, nil},
		{"own commits and dirty files", func(t *testing.T, root string, rec *Record) {
			writeFile(t, rec.Path, "a.txt", "a")
			git(t, rec.Path, "add", ".")
			git(t, rec.Path, "commit", "-q", "-m", "a")
			writeFile(t, rec.Path, "b.txt", "b")
		}, nil},
		{"subdirectory cwd", func(t *testing.T, root string, rec *Record) {
			rec.Cwd = filepath.Join(rec.Path, "src")
		}, nil},
		{"repository deleted", func(t *testing.T, root string, rec *Record) {
			os.RemoveAll(root)
		}, []string{ProblemRepoMissing}},
		{"worktree deleted", func(t *testing.T, root string, rec *Record) {
			os.RemoveAll(rec.Path)
		}, []string{ProblemMissing}},
		{"worktree and branch removed", func(t *testing.T, root string, rec *Record) {
			Unlock(context.Background(), *rec)
			os.RemoveAll(rec.Path)
			git(t, root, "worktree", "prune")
			git(t, root, "branch", "-D", rec.Branch)
		}, []string{ProblemMissing}},
		{"registration deleted", func(t *testing.T, root string, rec *Record) {
			os.RemoveAll(filepath.Join(root, ".git", "worktrees", "v1"))
		}, []string{ProblemUnregistered}},
		{".git link replaced", func(t *testing.T, root string, rec *Record) {
			other := newRepo(t)
			writeFile(t, rec.Path, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}, []string{ProblemUntrusted}},
		{"branch swapped", func(t *testing.T, root string, rec *Record) {
			git(t, rec.Path, "switch", "-q", "-c", "other")
		}, []string{ProblemBranchSwapped}},
		{"history reset behind the baseline", func(t *testing.T, root string, rec *Record) {
			first := git(t, root, "rev-list", "--max-parents=0", "HEAD")
			git(t, rec.Path, "reset", "-q", "--hard", first)
			if err := Sync(context.Background(), *rec); err != nil {
				t.Fatal(err)
			}
		}, []string{ProblemHistoryReplaced}},
		{"reflog expired", func(t *testing.T, root string, rec *Record) {
			git(t, root, "reflog", "expire", "--expire=now", "--all")
		}, []string{ProblemHistoryReplaced}},
		{"fake snapshot", func(t *testing.T, root string, rec *Record) {
			rec.CreationReflog = rec.Baseline + " branch: Created from elsewhere"
		}, []string{ProblemHistoryReplaced}},
		{"cwd elsewhere", func(t *testing.T, root string, rec *Record) {
			rec.Cwd = root
		}, []string{ProblemCwdOutside}},
		{"cwd escaping through a symlink", func(t *testing.T, root string, rec *Record) {
			if err := os.Symlink(t.TempDir(), filepath.Join(rec.Path, "out")); err != nil {
				t.Fatal(err)
			}
			rec.Cwd = filepath.Join(rec.Path, "out", "deeper")
		}, []string{ProblemCwdOutside}},
		{"cwd climbing with dot-dot", func(t *testing.T, root string, rec *Record) {
			rec.Cwd = rec.Path + "/../v2"
		}, []string{ProblemCwdOutside}},
		{"several at once", func(t *testing.T, root string, rec *Record) {
			git(t, rec.Path, "switch", "-q", "-c", "other")
			git(t, root, "reflog", "expire", "--expire=now", "--all")
			rec.Cwd = root
		}, []string{ProblemBranchSwapped, ProblemHistoryReplaced, ProblemCwdOutside}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			rec := newWorktree(t, root, newInkHome(t), "v1")
			tc.mutate(t, root, &rec)
			ps := Validate(context.Background(), rec)
			var got []string
			for _, p := range ps {
				got = append(got, p.Code)
				if p.Message == "" {
					t.Errorf("problem %s has no message", p.Code)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.codes, ",") {
				t.Fatalf("Validate codes = %v, want %v\n%+v", got, tc.codes, ps)
			}
			if tc.name == "worktree and branch removed" && !strings.Contains(ps[0].Message, "and its branch ink/v1 were removed, so the child cannot be resumed in them") {
				t.Errorf("message %q does not say the worktree was removed", ps[0].Message)
			}
		})
	}
}
