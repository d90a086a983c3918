package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commitIn edits rel in the worktree and commits it.
// commitIn commits rel in dir. In one of ink's worktrees that is a child's
// commit, and the child's attempt ends: ink brings it into the repository,
// as the orchestrator's Settle does.
func commitIn(t *testing.T, dir, rel, content, msg string) {
	t.Helper()
	writeFile(t, dir, rel, content)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", msg)
	if rec, ok, _ := enclosingWorktree(dir); ok {
		if err := Sync(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
}

func findInfo(t *testing.T, home, id string) Info {
	t.Helper()
	info, err := Find(context.Background(), home, id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestTwoWorktreesMergeThenConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	// A failing hook must not block ink's own merge commit.
	writeFile(t, root, ".git/hooks/pre-merge-commit", "#!/bin/sh\nexit 1\n")
	os.Chmod(filepath.Join(root, ".git/hooks/pre-merge-commit"), 0o755)
	a := newWorktree(t, root, home, "a")
	b := newWorktree(t, root, home, "b")
	Unlock(ctx, a)
	Unlock(ctx, b)
	commitIn(t, a.Path, "docs/guide.md", "line one\nline two from a\n", "a edits")
	commitIn(t, b.Path, "docs/guide.md", "line one\nline two from b\n", "b edits")

	readGuide := func(dir string) string {
		data, err := os.ReadFile(filepath.Join(dir, "docs/guide.md"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := readGuide(a.Path); got != "line one\nline two from a\n" {
		t.Errorf("a sees %q", got)
	}
	if got := readGuide(b.Path); got != "line one\nline two from b\n" {
		t.Errorf("b sees %q", got)
	}
	if got := readGuide(root); got != "line one\nline two\n" {
		t.Errorf("main checkout sees %q", got)
	}

	res, err := Merge(ctx, findInfo(t, home, "a"), MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || res.Branch != "ink/a" || res.Commit == "" || res.AlreadyMerged || !res.Removed || res.Committed != "" {
		t.Fatalf("Merge = %+v", res)
	}
	// Everything in a is merged: its worktree and branch are gone.
	if exists(a.Path) || branchExists(t, root, "ink/a") || exists(recordPath(a.Path)) {
		t.Error("the merged worktree a, its branch or its record remains")
	}
	if got := readGuide(root); got != "line one\nline two from a\n" {
		t.Errorf("after merge the main checkout has %q", got)
	}
	if msg := git(t, root, "log", "-1", "--format=%s %p"); !strings.HasPrefix(msg, "ink: merge ink/a ") || len(strings.Fields(msg)) != 5 {
		t.Errorf("merge commit %q, want a two-parent commit 'ink: merge ink/a'", msg)
	}
	head := git(t, root, "rev-parse", "HEAD")

	_, err = Merge(ctx, findInfo(t, home, "b"), MergeOptions{})
	var refused *MergeRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Merge b = %v, want a refusal", err)
	}
	if len(refused.Files) != 1 || refused.Files[0] != "docs/guide.md" || !strings.Contains(err.Error(), "would conflict") {
		t.Errorf("refusal %+v does not list the conflicting file", refused)
	}
	if git(t, root, "rev-parse", "HEAD") != head || git(t, root, "status", "--porcelain") != "" {
		t.Error("a refused merge changed the main checkout")
	}
	if _, err := gitTry(root, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
		t.Error("a refused merge left MERGE_HEAD")
	}

	if !exists(b.Path) || !branchExists(t, root, "ink/b") {
		t.Error("a refused merge removed the worktree")
	}

	// Once the user has merged b by hand, merging it again does nothing
	// and removes it.
	git(t, root, "-c", "core.hooksPath=/dev/null", "merge", "-q", "-s", "ours", "--no-edit", "ink/b")
	again, err := Merge(ctx, findInfo(t, home, "b"), MergeOptions{})
	if err != nil || !again.AlreadyMerged || !again.Removed {
		t.Errorf("merge of b, merged by hand = %+v, %v; want already merged and removed", again, err)
	}
	if exists(b.Path) || branchExists(t, root, "ink/b") {
		t.Error("the merged worktree b remains")
	}
}

func TestMergeRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(t *testing.T, root string, rec Record)
		why    string
		files  []string
	}{
		{"dirty main checkout", func(t *testing.T, root string, rec Record) {
			writeFile(t, root, "README.md", "# edited\n")
			writeFile(t, root, "src/main.go", "package main\n")
			git(t, root, "add", "src/main.go")
		}, "the main checkout " + "%ROOT%" + " has uncommitted changes", []string{"README.md", "src/main.go"}},
		{"uncommitted work in the worktree", func(t *testing.T, root string, rec Record) {
			writeFile(t, rec.Path, "draft.txt", "wip")
		}, "has uncommitted work; merge it with `ink worktrees merge --commit m` (commits it on ink/m first), or commit it yourself in", []string{"draft.txt"}},
		{"worker still running", func(t *testing.T, root string, rec Record) {
			Lock(context.Background(), rec, lockReason("m", os.Getpid()))
		}, "is in use by running process " + itoa(os.Getpid()), nil},
		{"unknown: the worktree's branch was switched", func(t *testing.T, root string, rec Record) {
			git(t, rec.Path, "checkout", "-q", "-b", "elsewhere")
		}, "ink cannot tell what the worktree %PATH% holds (%PATH% is on \"elsewhere\", not on ink/m (the branch was switched)), so it will not merge it; look at it with `ink worktrees diff m` (or git in %PATH%), merge ink/m yourself if you want it (`git merge ink/m` in %ROOT%), or drop it with `ink worktrees rm --force m`", nil},
		{"unknown: its .git link is gone", func(t *testing.T, root string, rec Record) {
			os.Remove(filepath.Join(rec.Path, ".git"))
		}, "or drop it with `ink worktrees rm --force m`", nil},
		{"untracked file in the way", func(t *testing.T, root string, rec Record) {
			writeFile(t, root, "src/feature.go", "my own, never committed\n")
		}, "would overwrite untracked or ignored files", []string{"src/feature.go"}},
		{"ignored file in the way", func(t *testing.T, root string, rec Record) {
			writeFile(t, root, ".git/info/exclude", "src/feature.go\n")
			writeFile(t, root, "src/feature.go", "ignored, yet precious\n")
		}, "would overwrite untracked or ignored files", []string{"src/feature.go"}},
		{"detached main checkout", func(t *testing.T, root string, rec Record) {
			git(t, root, "checkout", "-q", "--detach")
		}, "not on a branch", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			home := newInkHome(t)
			rec := newWorktree(t, root, home, "m")
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "src/feature.go", "package main\n// feature\n", "feature")
			tc.mutate(t, root, rec)
			head := git(t, root, "rev-parse", "HEAD")
			status := git(t, root, "status", "--porcelain")
			tip := git(t, root, "rev-parse", "ink/m")
			_, err := Merge(context.Background(), findInfo(t, home, "m"), MergeOptions{})
			var refused *MergeRefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Merge = %v, want a refusal", err)
			}
			if want := strings.NewReplacer("%ROOT%", root, "%PATH%", rec.Path).Replace(tc.why); !strings.Contains(refused.Why, want) {
				t.Errorf("why %q, want %q", refused.Why, want)
			}
			if strings.Join(refused.Files, ",") != strings.Join(tc.files, ",") {
				t.Errorf("files %v, want %v", refused.Files, tc.files)
			}
			for _, f := range tc.files {
				if !strings.Contains(err.Error(), "\n  "+f) {
					t.Errorf("message %q does not list %s", err, f)
				}
			}
			if git(t, root, "rev-parse", "HEAD") != head || git(t, root, "status", "--porcelain") != status {
				t.Error("a refused merge changed the main checkout")
			}
			if git(t, root, "rev-parse", "ink/m") != tip || !exists(rec.Path) {
				t.Error("a refused merge changed the branch or removed the worktree")
			}
			if strings.Contains(refused.Why, "`ink worktrees merge m`") {
				t.Errorf("the refusal suggests the merge that was just refused: %s", refused.Why)
			}
		})
	}
}

// TestMergeCommit: --commit commits the worktree's modified and untracked
// files (not its ignored ones) on its branch under the repository's
// identity with no hooks, merges, and removes the worktree; when the merge
// would conflict, nothing is committed and nothing changes.
func TestMergeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	writeFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\nexit 1\n")
	os.Chmod(filepath.Join(root, ".git/hooks/pre-commit"), 0o755)
	rec := newWorktree(t, root, home, "c")
	Unlock(ctx, rec)
	writeFile(t, rec.Path, "README.md", "# project, edited by the child\n")
	writeFile(t, rec.Path, "new/file.txt", "new\n")
	writeFile(t, rec.Path, ".env", "SECRET=1\n")

	// A conflicting change in the main checkout: refused, nothing changes.
	writeFile(t, root, "README.md", "# project, edited by you\n")
	git(t, root, "commit", "-q", "--no-verify", "-am", "yours")
	head, tip := git(t, root, "rev-parse", "HEAD"), git(t, root, "rev-parse", "ink/c")
	status := git(t, rec.Path, "status", "--porcelain")
	_, err := Merge(ctx, findInfo(t, home, "c"), MergeOptions{Commit: true})
	var refused *MergeRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "would conflict") {
		t.Fatalf("Merge = %v, want a conflict refusal", err)
	}
	if git(t, root, "rev-parse", "HEAD") != head || git(t, root, "rev-parse", "ink/c") != tip || git(t, rec.Path, "status", "--porcelain") != status {
		t.Fatal("a refused merge --commit changed the main checkout, the branch or the worktree")
	}

	git(t, root, "reset", "-q", "--hard", "HEAD~1")
	res, err := Merge(ctx, findInfo(t, home, "c"), MergeOptions{Commit: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed == "" || strings.Join(res.CommittedFiles, ",") != "M\tREADME.md,A\tnew/file.txt" || res.Commit == "" || !res.Removed {
		t.Fatalf("Merge = %+v", res)
	}
	if got := git(t, root, "rev-parse", "HEAD^2"); got != res.Committed {
		t.Errorf("the merge's second parent is %s, want the commit of the work %s", got, res.Committed)
	}
	if got := git(t, root, "log", "-1", "--format=%an <%ae>|%P|%s", res.Committed); got != "Ink Test <ink@example.invalid>|"+tip+"|ink: commit the work child c left uncommitted" {
		t.Errorf("the commit of the work: %q", got)
	}
	if files := git(t, root, "show", "--format=", "--name-only", res.Committed); files != "README.md\nnew/file.txt" {
		t.Errorf("the commit holds %q, want the modified and the untracked file only", files)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "new/file.txt")); string(data) != "new\n" {
		t.Error("the merge did not bring the untracked file")
	}
	if exists(rec.Path) || branchExists(t, root, "ink/c") {
		t.Error("the merged worktree or its branch remains")
	}
	if git(t, root, "status", "--porcelain") != "" {
		t.Error("the main checkout is not clean after the merge")
	}
}

// TestMergeKeepsAResumableChildsWorktree: after a merge, the worktree of a
// child that can still be resumed stays, and the result says why.
func TestMergeKeepsAResumableChildsWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "r")
	Unlock(ctx, rec)
	commitIn(t, rec.Path, "r.txt", "r\n", "r")
	res, err := Merge(ctx, findInfo(t, home, "r"), MergeOptions{Child: childTable(map[string]ChildStatus{"r": {Transcript: "/t/r.jsonl", LastStatus: "timeout", Resumable: true}})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed || !strings.Contains(res.Kept, "child r can still be resumed in it (its last attempt ended timeout)") {
		t.Fatalf("Merge = %+v", res)
	}
	if !exists(rec.Path) || !branchExists(t, root, "ink/r") {
		t.Fatal("the resumable child's worktree was removed")
	}
	// ls --status shows it merged; prune keeps it for the child.
	if in := findInfo(t, home, "r"); in.State() != "merged" {
		t.Errorf("state %q, want merged", in.State())
	}
}
