package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// gitDirLayout makes the directories of a worktree's own git directory
// under base and returns its private directory.
func gitDirLayout(t *testing.T, base string) string {
	t.Helper()
	g := filepath.Join(base, "c1.git")
	for _, d := range []string{"objects/info", "refs/heads/ink", "logs/refs/heads/ink", "hooks", "info", "packed", "worktrees/c1"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(g, "worktrees", "c1")
}

func TestWorktreeGitDirs(t *testing.T) {
	t.Parallel()
	t.Run("grants objects, refs, logs and the private directory", func(t *testing.T) {
		t.Parallel()
		private := gitDirLayout(t, t.TempDir())
		g := filepath.Dir(filepath.Dir(private))
		want := []string{filepath.Join(g, "objects"), filepath.Join(g, "refs"), filepath.Join(g, "logs"), filepath.Join(g, "packed"), private}
		got, err := sandbox.WorktreeGitDirs(private)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("WorktreeGitDirs = %v, %v; want %v", got, err, want)
		}
		for _, d := range got {
			if d == g || strings.HasSuffix(d, "hooks") || strings.HasSuffix(d, "info") {
				t.Errorf("%s is granted; the git directory's config, hooks and info must stay read-only", d)
			}
		}
	})
	cases := []struct {
		name    string
		private func(t *testing.T, base string) string
		want    string
	}{
		{"relative", func(t *testing.T, base string) string { return "c1.git/worktrees/c1" }, "not an absolute"},
		{"not under worktrees/", func(t *testing.T, base string) string {
			return filepath.Dir(filepath.Dir(gitDirLayout(t, base)))
		}, "not an absolute <gitdir>/worktrees/<name>"},
		{"missing", func(t *testing.T, base string) string { return filepath.Join(base, "nope.git", "worktrees", "c1") }, "no such file"},
		{"refs is a symlink", func(t *testing.T, base string) string {
			p := gitDirLayout(t, base)
			refs := filepath.Join(filepath.Dir(filepath.Dir(p)), "refs")
			os.RemoveAll(refs)
			os.Symlink(t.TempDir(), refs)
			return p
		}, "is not a directory"},
		{"private directory is a symlink", func(t *testing.T, base string) string {
			p := gitDirLayout(t, base)
			os.RemoveAll(p)
			os.Symlink(t.TempDir(), p)
			return p
		}, "is not a directory"},
		{"objects missing", func(t *testing.T, base string) string {
			p := gitDirLayout(t, base)
			os.RemoveAll(filepath.Join(filepath.Dir(filepath.Dir(p)), "objects"))
			return p
		}, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sandbox.WorktreeGitDirs(tc.private(t, t.TempDir()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WorktreeGitDirs = %v, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
}
