package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	head := git(t, root, "rev-parse", "HEAD")

	t.Run("top", func(t *testing.T) {
		r, err := Detect(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if r.Root != root || r.Prefix != "" || r.Head != head {
			t.Fatalf("Detect = %+v, want root %s, empty prefix, head %s", r, root, head)
		}
	})
	t.Run("subdirectory", func(t *testing.T) {
		r, err := Detect(ctx, filepath.Join(root, "src"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Root != root || r.Prefix != "src/" {
			t.Fatalf("Detect = %+v, want root %s prefix src/", r, root)
		}
	})
	t.Run("linked worktree gives the main root", func(t *testing.T) {
		linked := filepath.Join(t.TempDir(), "linked")
		git(t, root, "worktree", "add", "-q", "-b", "side", linked)
		r, err := Detect(ctx, filepath.Join(linked, "docs"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Root != root || r.Prefix != "docs/" {
			t.Fatalf("Detect = %+v, want main root %s prefix docs/", r, root)
		}
	})
	t.Run("not a repository", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Detect(ctx, dir)
		if !errors.Is(err, ErrNotRepository) {
			t.Fatalf("err = %v, want ErrNotRepository", err)
		}
		if !strings.Contains(err.Error(), dir+" is not inside a git repository; retry the task without worktree") {
			t.Fatalf("message %q does not say what to do", err)
		}
	})
	t.Run("no commits", func(t *testing.T) {
		dir := t.TempDir()
		git(t, dir, "init", "-q")
		_, err := Detect(ctx, dir)
		if !errors.Is(err, ErrNoCommits) || errors.Is(err, ErrNotRepository) {
			t.Fatalf("err = %v, want ErrNoCommits only", err)
		}
		if !strings.Contains(err.Error(), "has no commits yet; commit once or retry the task without worktree") {
			t.Fatalf("message %q does not say what to do", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := Detect(ctx, filepath.Join(t.TempDir(), "gone"))
		if err == nil {
			t.Fatal("Detect of a missing directory succeeded")
		}
	})
}
