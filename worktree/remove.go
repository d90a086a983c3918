package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNotClean marks a refused removal: the worktree was not Clean when
// re-assessed. The error's message carries the assessment.
var ErrNotClean = errors.New("worktree is not clean")

// NotCleanError is returned by Remove when the re-assessment is not Clean;
// nothing was deleted.
type NotCleanError struct {
	Assessment Assessment
}

// Error says the worktree was kept and why.
func (e *NotCleanError) Error() string {
	return fmt.Sprintf("worktree kept: it is %s (%s)", e.Assessment.State, e.Assessment.Detail)
}

var _ error = (*NotCleanError)(nil)

// Unwrap makes errors.Is(err, ErrNotClean) hold.
func (e *NotCleanError) Unwrap() error { return ErrNotClean }

// RemovalError is a removal that failed part-way: Remains lists what is
// still there (the worktree directory, its registration, the branch, the
// record file), and the message ends with the command that removes it.
type RemovalError struct {
	Record  Record
	Remains []string
	Err     error
}

var _ error = (*RemovalError)(nil)

// Error says what failed, what remains and how to remove it.
func (e *RemovalError) Error() string {
	if len(e.Remains) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v; left behind: %s — %s", e.Err, strings.Join(e.Remains, ", "), removeHint(e.Record, e.Remains))
}

// Unwrap returns the failure.
func (e *RemovalError) Unwrap() error { return e.Err }

// removeHint is the command that removes what a failed removal left.
func removeHint(rec Record, remains []string) string {
	onlyBranch := len(remains) == 1 && strings.HasPrefix(remains[0], "branch ")
	if onlyBranch {
		return fmt.Sprintf("check it with `git -C %s log %s` and delete it with `git -C %s branch -D %s`", rec.RepoRoot, rec.Branch, rec.RepoRoot, rec.Branch)
	}
	return fmt.Sprintf("remove it with `ink worktrees rm %s` (see `ink worktrees ls`)", rec.ChildID())
}

// remains lists what is left of rec's worktree: its directory, its
// registration, its branch and its record file.
func remains(ctx context.Context, rec Record) []string {
	var left []string
	if _, err := os.Lstat(rec.Path); err == nil {
		left = append(left, "worktree "+rec.Path)
	} else if _, err := os.Lstat(rec.GitDir()); err == nil {
		left = append(left, "git directory "+rec.GitDir())
	} else if all, err := listRegistered(ctx, rec.RepoRoot); err == nil {
		if _, ok := findRegistered(all, rec.Path); ok {
			left = append(left, "the registration of "+rec.Path+" in "+rec.RepoRoot)
		}
	}
	if rec.Branch != "" {
		if _, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch); err == nil || exitCode(err) != 1 {
			left = append(left, "branch "+rec.Branch)
		}
	}
	if _, err := os.Lstat(recordPath(rec.Path)); err == nil && len(left) == 0 {
		left = append(left, "record "+recordPath(rec.Path))
	}
	return left
}

// Remove deletes a Clean worktree: under the repository lock it assesses
// again and refuses with *NotCleanError unless Clean, then unlocks it,
// deletes its directory and its own git directory, runs `git worktree
// prune` (which drops its registration), deletes the branch only while it
// still points at the baseline and is the ink/<childId> branch of the
// record, and deletes the record file. A failure part-way is a
// *RemovalError that says what remains. Safe for concurrent use.
//
// ink itself removes through Settle, which makes the same removal on the
// assessment it has just made under the lock (removeAssessed); Remove is
// that rule on its own, which the package's tests and benchmarks drive.
func Remove(ctx context.Context, rec Record) error {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return failed(ctx, rec, fmt.Errorf("remove worktree: %w", err))
	}
	defer lk.unlock()
	a, reg := assessRegistered(ctx, rec)
	return removeAssessed(ctx, lk, rec, a, reg)
}

// removeAssessed is the one removal rule: with the repository lock held
// and a the assessment made under it, it removes rec's worktree only when
// ink made it and a is Clean (else *NotCleanError, nothing deleted).
func removeAssessed(ctx context.Context, lk *repoLock, rec Record, a Assessment, reg *registered) error {
	if !inkOwned(rec) {
		return fmt.Errorf("remove worktree: branch %s is not ink/%s, so ink did not create it; nothing was removed", rec.Branch, rec.ChildID())
	}
	if a.State != Clean {
		return &NotCleanError{Assessment: a}
	}
	return dropRegistered(ctx, lk, rec, rec.Baseline, false, reg)
}

// failed wraps err as a *RemovalError listing what remains of rec.
func failed(ctx context.Context, rec Record, err error) error {
	return &RemovalError{Record: rec, Remains: remains(context.WithoutCancel(ctx), rec), Err: err}
}

// deleteInkBranch deletes rec.Branch only if it is ink/<childId> of the
// record and still points at expect (compare-and-delete, atomic in git).
func deleteInkBranch(ctx context.Context, lk *repoLock, rec Record, expect string) error {
	if !inkOwned(rec) {
		return fmt.Errorf("branch %s was not created by ink for this worktree; it was left alone", rec.Branch)
	}
	if _, err := lk.run(ctx, rec.RepoRoot, "update-ref", "-d", "refs/heads/"+rec.Branch, expect); err != nil {
		return fmt.Errorf("branch %s was kept (it no longer points at %s): %w", rec.Branch, ShortSHA(expect), err)
	}
	return nil
}

// inkOwned reports whether rec's branch is the ink/<childId> branch ink
// creates for a worktree at rec.Path.
func inkOwned(rec Record) bool {
	return strings.HasPrefix(rec.Branch, BranchPrefix) && rec.Branch == BranchPrefix+rec.ChildID()
}
