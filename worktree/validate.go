package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Problem codes reported by Validate.
const (
	ProblemRepoMissing     = "worktree-repo-missing"
	ProblemMissing         = "worktree-missing"
	ProblemUnregistered    = "worktree-unregistered"
	ProblemBranchSwapped   = "worktree-branch-swapped"
	ProblemHistoryReplaced = "worktree-history-replaced"
	ProblemCwdOutside      = "worktree-cwd-outside"
	ProblemUntrusted       = "worktree-untrusted"
)

// Problem is one reason a worktree cannot be resumed in.
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Validate checks, before a resume, that the worktree of rec is still the
// one the child worked in, and returns every problem found (none when it
// can be resumed): the repository exists, the directory exists, git still
// registers it and its .git link and git directory are the ones ink made
// (else ink runs no git in it), HEAD is still the branch, the
// baseline is an ancestor of the branch and the creation reflog snapshot is
// still in the branch's reflog, and the cwd resolves inside the worktree.
// It only reads; safe for concurrent use.
func Validate(ctx context.Context, rec Record) []Problem {
	var ps []Problem
	add := func(code, format string, args ...any) {
		ps = append(ps, Problem{Code: code, Message: fmt.Sprintf(format, args...)})
	}
	repoOK := dirExists(rec.RepoRoot)
	if repoOK {
		if _, err := read(ctx, rec.RepoRoot, "rev-parse", "--git-common-dir"); err != nil {
			repoOK = false
		}
	}
	if !repoOK {
		add(ProblemRepoMissing, "the repository %s no longer exists or is not a git repository", rec.RepoRoot)
	}
	pathOK := dirExists(rec.Path)
	ref := "refs/heads/" + rec.Branch
	if !pathOK && repoOK && removedWhole(ctx, rec, ref) {
		// Everything is gone (`ink worktrees rm`, `prune
		// --include-resumable`, or by hand): one problem says so, rather
		// than a missing registration and branch as if they had been
		// tampered with.
		add(ProblemMissing, "the worktree %s and its branch %s were removed, so the child cannot be resumed in them", rec.Path, rec.Branch)
		if p, ok := validateCwd(rec); !ok {
			ps = append(ps, p)
		}
		return ps
	}
	if !pathOK {
		add(ProblemMissing, "the worktree directory %s no longer exists", rec.Path)
	}

	if repoOK {
		// mine is the worktree's own git directory, where the child's
		// branch may be ahead of the repository's until Sync.
		var mine *layout
		all, err := listRegistered(ctx, rec.RepoRoot)
		var reg registered
		found := false
		if err == nil {
			reg, found = findRegistered(all, rec.Path)
		}
		switch {
		case err != nil:
			add(ProblemUnregistered, "cannot list the worktrees of %s: %v", rec.RepoRoot, err)
		case !found:
			add(ProblemUnregistered, "%s is no longer a registered worktree of %s", rec.Path, rec.RepoRoot)
		case pathOK:
			if l, lerr := openLayout(ctx, rec); lerr != nil {
				add(ProblemUntrusted, "%v", lerr)
			} else if head, herr := l.read(ctx, "symbolic-ref", "-q", "HEAD"); herr != nil || strings.TrimSpace(head) != ref {
				add(ProblemBranchSwapped, "the worktree is no longer on branch %s (HEAD: %s)", rec.Branch, describeHead(head, herr))
			} else if l.sealed {
				mine = l
			}
		default:
			if reg.branch != ref {
				add(ProblemBranchSwapped, "the worktree is registered on %q, not on %s", strings.TrimPrefix(reg.branch, "refs/heads/"), rec.Branch)
			}
		}
		ps = append(ps, validateHistory(ctx, rec, ref, mine)...)
	}

	if p, ok := validateCwd(rec); !ok {
		ps = append(ps, p)
	}
	return ps
}

// removedWhole reports whether rec's worktree is neither registered nor
// has a branch any more.
func removedWhole(ctx context.Context, rec Record, ref string) bool {
	all, err := listRegistered(ctx, rec.RepoRoot)
	if err != nil {
		return false
	}
	if _, found := findRegistered(all, rec.Path); found {
		return false
	}
	_, err = read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", ref)
	return exitCode(err) == 1
}

// descends reports whether the branch, as the worktree's own git directory
// has it (where the child works, ahead of the repository until Sync), still
// grows from the baseline.
func descends(ctx context.Context, l *layout, rec Record) bool {
	tip, err := l.branchTip(ctx, rec.Branch)
	if err != nil {
		return false
	}
	_, err = l.read(ctx, "merge-base", "--is-ancestor", rec.Baseline, tip)
	return err == nil
}

func describeHead(head string, err error) string {
	if err != nil {
		return "detached or unreadable"
	}
	return strings.TrimSpace(head)
}

// validateHistory checks that the branch grew from the baseline — in the
// repository, and in the worktree's own git directory mine (when not nil),
// where the child goes on — and that its reflog in the repository still
// holds the creation snapshot.
func validateHistory(ctx context.Context, rec Record, ref string, mine *layout) []Problem {
	tip, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return []Problem{{Code: ProblemBranchSwapped, Message: fmt.Sprintf("branch %s no longer exists", rec.Branch)}}
	}
	var ps []Problem
	if _, err := read(ctx, rec.RepoRoot, "merge-base", "--is-ancestor", rec.Baseline, strings.TrimSpace(tip)); err != nil {
		ps = append(ps, Problem{Code: ProblemHistoryReplaced, Message: fmt.Sprintf("branch %s no longer descends from baseline %s (its history was replaced)", rec.Branch, ShortSHA(rec.Baseline))})
	} else if mine != nil && !descends(ctx, mine, rec) {
		ps = append(ps, Problem{Code: ProblemHistoryReplaced, Message: fmt.Sprintf("branch %s in the worktree no longer descends from baseline %s (its history was replaced)", rec.Branch, ShortSHA(rec.Baseline))})
	}
	snap := lines(rec.CreationReflog)
	out, err := read(ctx, rec.RepoRoot, "reflog", "show", "--format=%H %gs", ref)
	if len(snap) == 0 || err != nil || !endsWith(lines(out), snap) {
		ps = append(ps, Problem{Code: ProblemHistoryReplaced, Message: fmt.Sprintf("the reflog of %s no longer holds its creation entry (the branch was recreated or its reflog expired)", rec.Branch)})
	}
	return ps
}

// validateCwd checks that rec.Cwd, symlinks resolved, lies inside rec.Path.
func validateCwd(rec Record) (Problem, bool) {
	base, err := realpath(rec.Path)
	if err != nil {
		base = filepath.Clean(rec.Path)
	}
	cwd, err := resolveExisting(rec.Cwd)
	if err != nil || !filepath.IsAbs(rec.Cwd) || !isInside(cwd, base) {
		return Problem{Code: ProblemCwdOutside, Message: fmt.Sprintf("the child's cwd %s is not inside its worktree %s", rec.Cwd, rec.Path)}, false
	}
	return Problem{}, true
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the rest lexically, so a missing cwd still resolves.
func resolveExisting(p string) (string, error) {
	p = filepath.Clean(p)
	rest := ""
	for {
		if _, err := os.Lstat(p); err == nil {
			r, err := filepath.EvalSymlinks(p)
			if err != nil {
				return "", err
			}
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest), nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
