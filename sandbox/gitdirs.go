package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorktreeGitDirs returns what a worktree child's bash may write of git,
// given private, the worktree's private directory inside the git directory
// ink made for it (<gitdir>/worktrees/<name>). private comes from ink's
// record of the worktree, never from the worktree itself, whose .git link
// the child can rewrite. The answer is the git directory's objects, refs,
// logs and packed (where its packed-refs symlink leads, so refs can be
// deleted), and private (the worktree's HEAD, index and reflog): the
// child's own objects, branches, tags, stash and reflogs, so that git add,
// commit, status, log, diff, stash and branch -D work in the worktree. The git directory's
// config, hooks and info stay read-only, and nothing of the user's
// repository is granted: the child's git reads the user's history through
// the git directory's alternates, and ink brings the child's commits back
// into the user's repository itself.
//
// It fails when private is not such a directory: not absolute, not inside
// a worktrees/ directory, or when the git directory, its worktrees/, any
// of the granted directories or private itself is missing, not a
// directory, or a symlink.
func WorktreeGitDirs(private string) ([]string, error) {
	private = filepath.Clean(private)
	if !filepath.IsAbs(private) || filepath.Base(filepath.Dir(private)) != "worktrees" {
		return nil, fmt.Errorf("the worktree's git directory %q is not an absolute <gitdir>/worktrees/<name> path", private)
	}
	gitDir := filepath.Dir(filepath.Dir(private))
	grant := []string{filepath.Join(gitDir, "objects"), filepath.Join(gitDir, "refs"), filepath.Join(gitDir, "logs"),
		filepath.Join(gitDir, "packed"), private}
	for _, d := range append([]string{gitDir, filepath.Dir(private)}, grant...) {
		fi, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("the worktree's git directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("the worktree's git directory: %s is not a directory (a symlink or a file)", d)
		}
	}
	return grant, nil
}
