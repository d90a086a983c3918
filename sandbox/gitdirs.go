package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// WorktreeGitDirs returns, when root is a linked git worktree (a worktree
// child's root), the parts of its repository's git directory that hold
// that worktree's own state, so that git add, commit and reset work in it
// under WorkspaceWrite although the git directory lies in the user's
// checkout: the worktree's private git directory (its HEAD, index and
// HEAD reflog), the shared object store, and the directories of its
// branch's ref and reflog when the branch is nested, as ink's
// ink/<child> branches are (a top-level branch's directory would hold
// every branch, so it is left out and commits there fail). Hooks, config,
// packed-refs and the other branches stay read-only.
//
// It returns nil for anything else: a main checkout (its .git is inside
// root, writable anyway), no git at all, or a .git file that does not hold
// up (not a regular file, not naming a directory under the repository's
// worktrees/, or whose back-pointer does not name root/.git). Missing
// directories are left out. Call it before any sandboxed command runs in
// root and keep the answer: such commands may rewrite the files it reads.
func WorktreeGitDirs(root string) []string {
	dotGit := filepath.Join(root, ".git")
	gitdir, ok := readPointer(dotGit, "gitdir: ", root)
	if !ok || filepath.Base(filepath.Dir(gitdir)) != "worktrees" {
		return nil
	}
	common := filepath.Dir(filepath.Dir(gitdir))
	back, ok := readPointer(filepath.Join(gitdir, "gitdir"), "", gitdir)
	if !ok || !samePath(back, dotGit) {
		return nil
	}
	dirs := []string{gitdir, filepath.Join(common, "objects")}
	if branch, ok := headBranch(gitdir); ok && strings.Contains(branch, "/") {
		dirs = append(dirs,
			filepath.Join(common, "refs", "heads", filepath.Dir(branch)),
			filepath.Join(common, "logs", "refs", "heads", filepath.Dir(branch)))
	}
	var out []string
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.IsDir() {
			out = append(out, real)
		}
	}
	if len(out) < 2 || out[0] != gitdir {
		return nil
	}
	return out
}

// readPointer reads a small regular file holding prefix and a path; a
// relative path is taken from base. It returns the path with symlinks
// resolved.
func readPointer(file, prefix, base string) (string, bool) {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	s, ok := strings.CutPrefix(strings.TrimSpace(string(line)), prefix)
	if !ok || s == "" {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(base, s)
	}
	real, err := filepath.EvalSymlinks(s)
	if err != nil {
		return "", false
	}
	return real, true
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// headBranch reads the branch a worktree's HEAD is on ("ink/abc" for
// "ref: refs/heads/ink/abc"); false for a detached HEAD or a name that is
// not a plain branch name.
func headBranch(gitdir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(gitdir, "HEAD"))
	if err != nil || len(b) > 4096 {
		return "", false
	}
	branch, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	if !ok || branch == "" {
		return "", false
	}
	for _, part := range strings.Split(branch, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.ContainsAny(part, "\\\x00") {
			return "", false
		}
	}
	return branch, true
}
