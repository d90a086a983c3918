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
func commitIn(t *testing.T, dir, rel, content, msg string) {
	t.Helper()
	writeFile(t, dir, rel, content)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", msg)
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

	res, err := Merge(ctx, findInfo(t, home, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Into != "main" || res.Branch != "ink/a" || res.Commit == "" || res.AlreadyMerged {
		t.Fatalf("Merge = %+v", res)
	}
	if got := readGuide(root); got != "line one\nline two from a\n" {
		t.Errorf("after merge the main checkout has %q", got)
	}
	if msg := git(t, root, "log", "-1", "--format=%s %p"); !strings.HasPrefix(msg, "ink: merge ink/a ") || len(strings.Fields(msg)) != 5 {
		t.Errorf("merge commit %q, want a two-parent commit 'ink: merge ink/a'", msg)
	}
	head := git(t, root, "rev-parse", "HEAD")

	_, err = Merge(ctx, findInfo(t, home, "b"))
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

	again, err := Merge(ctx, findInfo(t, home, "a"))
	if err != nil || !again.AlreadyMerged {
		t.Errorf("second merge of a = %+v, %v; want already merged", again, err)
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
		}, "commit it in the worktree first", []string{"draft.txt"}},
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
			commitIn(t, rec.Path, "src/feature.go", "package main\n// feature\n", "feature")
			tc.mutate(t, root, rec)
			head := git(t, root, "rev-parse", "HEAD")
			status := git(t, root, "status", "--porcelain")
			_, err := Merge(context.Background(), findInfo(t, home, "m"))
			var refused *MergeRefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Merge = %v, want a refusal", err)
			}
			if want := strings.ReplaceAll(tc.why, "%ROOT%", root); !strings.Contains(refused.Why, want) {
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
		})
	}
}
