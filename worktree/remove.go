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

// Remove deletes a Clean worktree: under the repository lock it assesses
// again and refuses with *NotCleanError unless Clean, then unlocks it, runs
// `git worktree remove` (no --force), deletes the branch only while it still
// points at the baseline and is the ink/<childId> branch of the record, runs
// `git worktree prune` and deletes the record file. Safe for concurrent use.
func Remove(ctx context.Context, rec Record) error {
	lk, err := lockRepo(ctx, rec.inkHomeOf(), rec.RepoRoot)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	defer lk.unlock()
	return removeLocked(ctx, rec)
}

func removeLocked(ctx context.Context, rec Record) error {
	if !inkOwned(rec) {
		return fmt.Errorf("remove worktree: branch %s is not ink/%s, so ink did not create it; nothing was removed", rec.Branch, rec.ChildID())
	}
	if a := Assess(ctx, rec); a.State != Clean {
		return &NotCleanError{Assessment: a}
	}
	if err := Unlock(ctx, rec); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	if _, err := run(ctx, rec.RepoRoot, "worktree", "remove", rec.Path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", rec.Path, err)
	}
	if err := deleteInkBranch(ctx, rec, rec.Baseline); err != nil {
		return fmt.Errorf("remove worktree: the directory is gone but %w", err)
	}
	if _, err := run(ctx, rec.RepoRoot, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree: prune: %w", err)
	}
	if err := os.Remove(recordPath(rec.Path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove worktree record: %w", err)
	}
	removeEmptySlugDir(rec.Path)
	return nil
}

// deleteInkBranch deletes rec.Branch only if it is ink/<childId> of the
// record and still points at expect (compare-and-delete, atomic in git).
func deleteInkBranch(ctx context.Context, rec Record, expect string) error {
	if !inkOwned(rec) {
		return fmt.Errorf("branch %s was not created by ink for this worktree; it was left alone", rec.Branch)
	}
	if _, err := run(ctx, rec.RepoRoot, "update-ref", "-d", "refs/heads/"+rec.Branch, expect); err != nil {
		return fmt.Errorf("branch %s was kept (it no longer points at %s): %w", rec.Branch, ShortSHA(expect), err)
	}
	return nil
}

// inkOwned reports whether rec's branch is the ink/<childId> branch ink
// creates for a worktree at rec.Path.
func inkOwned(rec Record) bool {
	return strings.HasPrefix(rec.Branch, BranchPrefix) && rec.Branch == BranchPrefix+rec.ChildID()
}
