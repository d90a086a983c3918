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
	// from is the ink worktree the directory lies in, whose commits live
	// in its own git directory until they are brought back.
	from *Record
}

// Detect finds the repository that contains cwd. It fails with an error
// matching ErrNotRepository when cwd is outside any work tree and
// ErrNoCommits when the repository has no commit yet; both messages tell
// the user to retry without a worktree.
//
// A directory inside one of ink's worktrees is answered from the
// worktree's record and its own git directory, never through its .git
// link: the repository is the one the worktree was made for, and Head the
// worktree's HEAD; a worktree ink cannot trust is an *UntrustedError.
func Detect(ctx context.Context, cwd string) (Repo, error) {
	if rec, ok, err := enclosingWorktree(cwd); err != nil {
		return Repo{}, fmt.Errorf("detect repository of %s: %w", cwd, err)
	} else if ok {
		return detectInWorktree(ctx, cwd, rec)
	}
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

// enclosingWorktree finds the ink worktree that holds dir: the nearest
// directory at or above it that has a git directory of ink's beside it
// (<dir>.git) or a record naming it. ok is false when dir lies in none; a
// worktree ink made whose record is gone is an error, since ink runs no
// git through its link.
func enclosingWorktree(dir string) (Record, bool, error) {
	p, err := realpath(dir)
	if err != nil {
		return Record{}, false, nil
	}
	for {
		rec, rerr := readRecord(p)
		if rerr == nil && samePath(rec.Path, p) && rec.RepoRoot != "" && inkShaped(p, rec.RepoRoot) {
			return rec, true, nil
		}
		if inkMade(p) {
			return Record{}, false, untrusted(p, "it has no ink record (%v), so ink cannot tell which repository it belongs to", rerr)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return Record{}, false, nil
		}
		p = parent
	}
}

// inkMade reports whether p looks like a worktree ink made, without its
// record: <home>/worktrees/<slug>/<id> with ink's git directory
// <id>.git/worktrees/<id> beside it.
func inkMade(p string) bool {
	slug := filepath.Dir(p)
	id := filepath.Base(p)
	return checkChildID(id) == nil && slugPattern().MatchString(filepath.Base(slug)) &&
		filepath.Base(filepath.Dir(slug)) == "worktrees" && dirExists(filepath.Join(gitDirOf(p), "worktrees", id))
}

// detectInWorktree is Detect for a directory inside the ink worktree rec.
func detectInWorktree(ctx context.Context, cwd string, rec Record) (Repo, error) {
	l, err := openLayout(ctx, rec)
	if err != nil {
		return Repo{}, fmt.Errorf("detect repository of %s: %w", cwd, err)
	}
	head, err := l.read(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return Repo{}, fmt.Errorf("detect repository of %s: HEAD of the worktree %s is unreadable: %w", cwd, rec.Path, err)
	}
	prefix := ""
	if real, err := realpath(cwd); err == nil {
		if rel, err := filepath.Rel(l.workTree, real); err == nil && rel != "." {
			prefix = filepath.ToSlash(rel) + "/"
		}
	}
	return Repo{Root: rec.RepoRoot, Prefix: prefix, Head: strings.TrimSpace(head), from: &rec}, nil
}
