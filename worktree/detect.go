package worktree

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrNotRepository marks a Detect failure because the directory is not
// inside a git work tree.
var ErrNotRepository = errors.New("not inside a git repository")

// ErrNoCommits marks a Detect failure because the repository has no commit
// to branch from.
var ErrNoCommits = errors.New("repository has no commits")

// detectError carries a user-facing message and a sentinel for errors.Is.
type detectError struct {
	msg  string
	kind error
}

func (e *detectError) Error() string { return e.msg }
func (e *detectError) Unwrap() error { return e.kind }

// Repo is the git repository a child would branch from.
type Repo struct {
	// Root is the main checkout: dirname(realpath(--git-common-dir)), never
	// a linked worktree's directory.
	Root string `json:"root"`
	// Prefix is the directory Detect was asked about, relative to the top
	// of its work tree ("" at the top, else slash-separated with a trailing
	// slash, as `git rev-parse --show-prefix` prints it).
	Prefix string `json:"prefix"`
	// Head is the full commit id HEAD pointed at.
	Head string `json:"head"`
}

// Detect finds the repository that contains cwd. It fails with an error
// matching ErrNotRepository when cwd is outside any work tree and
// ErrNoCommits when the repository has no commit yet; both messages tell
// the user to retry without a worktree.
func Detect(ctx context.Context, cwd string) (Repo, error) {
	out, err := read(ctx, cwd, "rev-parse", "--path-format=absolute", "--is-inside-work-tree", "--git-common-dir", "--show-prefix")
	if err != nil {
		if exitCode(err) == 128 && strings.Contains(err.Error(), "not a git repository") {
			return Repo{}, &detectError{msg: fmt.Sprintf("%s is not inside a git repository; retry the task without worktree", cwd), kind: ErrNotRepository}
		}
		return Repo{}, fmt.Errorf("detect repository of %s: %w", cwd, err)
	}
	ls := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(ls) < 2 {
		return Repo{}, fmt.Errorf("detect repository of %s: unexpected git output %q", cwd, out)
	}
	if ls[0] != "true" {
		return Repo{}, &detectError{msg: fmt.Sprintf("%s is not inside a git work tree (it is inside a .git directory or a bare repository); retry the task without worktree", cwd), kind: ErrNotRepository}
	}
	prefix := ""
	if len(ls) >= 3 {
		prefix = ls[2]
	}
	root, err := mainRoot(ctx, cwd, ls[1])
	if err != nil {
		return Repo{}, fmt.Errorf("detect repository of %s: %w", cwd, err)
	}
	head, err := read(ctx, cwd, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		if exitCode(err) == 1 || exitCode(err) == 128 {
			return Repo{}, &detectError{msg: fmt.Sprintf("the repository at %s has no commits yet; commit once or retry the task without worktree", root), kind: ErrNoCommits}
		}
		return Repo{}, fmt.Errorf("detect repository of %s: %w", cwd, err)
	}
	return Repo{Root: root, Prefix: prefix, Head: strings.TrimSpace(head)}, nil
}

// mainRoot returns the main checkout of the repository whose common git
// directory is commonDir.
func mainRoot(ctx context.Context, cwd, commonDir string) (string, error) {
	real, err := realpath(commonDir)
	if err != nil {
		return "", fmt.Errorf("resolve git directory %s: %w", commonDir, err)
	}
	if filepath.Base(real) == ".git" {
		return filepath.Dir(real), nil
	}
	// A separate git directory: the first entry of the worktree list is the
	// main checkout.
	out, err := read(ctx, cwd, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	wts := parseWorktreeList(out)
	if len(wts) == 0 || wts[0].bare {
		return "", fmt.Errorf("the repository at %s has no main checkout (bare repository)", real)
	}
	return realpath(wts[0].path)
}
