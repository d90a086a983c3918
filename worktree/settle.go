package worktree

import (
	"context"
	"errors"
	"fmt"
)

// Disposition is what became of a child's worktree after an attempt, as a
// TaskRecord records it (session.WorktreeOutcome.Disposition) and the
// progress lines tell it: a closed set.
type Disposition string

// The dispositions. Settle decides the first four; the supervisor keeps a
// clean worktree for a resume (the last two) without asking Settle.
const (
	// DispositionRemoved: the worktree was clean and is gone, its branch
	// with it.
	DispositionRemoved Disposition = "removed"
	// DispositionKeptWork: the child left work in it; it is kept.
	DispositionKeptWork Disposition = "kept-work"
	// DispositionKeptUnknown: its state could not be told; kept for safety.
	DispositionKeptUnknown Disposition = "kept-unknown"
	// DispositionRemovalFailed: clean, but its removal failed part way.
	DispositionRemovalFailed Disposition = "removal-failed"
	// DispositionKeptResumed: a resumed child's worktree, never removed.
	DispositionKeptResumed Disposition = "kept-resumed"
	// DispositionKeptResumable: clean, kept so that the child that did not
	// complete can be resumed in it.
	DispositionKeptResumable Disposition = "kept-resumable"
)

// Outcome is what Settle did with a worktree after an attempt.
type Outcome struct {
	// Disposition is what Settle did.
	Disposition Disposition `json:"disposition"`
	// Text is the result line for the user (Describe or
	// DescribeRemoveError).
	Text string `json:"text"`
	// Assessment is the assessment the decision rested on.
	Assessment Assessment `json:"assessment"`
	// Remains lists what a failed removal left behind (the worktree, its
	// registration, its branch); Text ends with the command that removes
	// it.
	Remains []string `json:"remains,omitempty"`
}

// SyncAndAssess brings the child's commits into the repository (Sync) and
// assesses the worktree; a worktree whose commits could not be brought
// back is Unknown, with why. The orchestrator calls it, or Settle, after
// every attempt.
func SyncAndAssess(ctx context.Context, rec Record) Assessment {
	synced := Sync(ctx, rec)
	a := Assess(ctx, rec)
	if synced != nil && a.State != Unknown {
		return unknown("its commits could not be brought into %s: %v", rec.RepoRoot, synced)
	}
	return a
}

// Settle is the orchestrator's one call after an attempt ends: under the
// repository lock it brings the child's commits into the repository
// (Sync), assesses the worktree and removes it only when Clean — the one
// assessment, made under the lock, is the one the removal rests on;
// work-present and unknown worktrees are kept untouched, and so is one
// whose commits could not be brought back (Unknown, with why).
func Settle(ctx context.Context, rec Record) Outcome {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		a := unknown("its commits could not be brought into %s: %v", rec.RepoRoot, fmt.Errorf("bring back the commits of %s: %w", rec.Branch, err))
		return Outcome{Disposition: DispositionKeptUnknown, Text: Describe(a, rec), Assessment: a}
	}
	defer lk.unlock()
	_, synced := syncLocked(ctx, lk, rec)
	a, reg := assessRegistered(ctx, rec)
	if synced != nil && a.State != Unknown {
		a, reg = unknown("its commits could not be brought into %s: %v", rec.RepoRoot, synced), nil
	}
	switch a.State {
	case WorkPresent:
		return Outcome{Disposition: DispositionKeptWork, Text: Describe(a, rec), Assessment: a}
	case Clean:
		if err := removeAssessed(ctx, lk, rec, a, reg); err != nil {
			out := Outcome{Disposition: DispositionRemovalFailed, Text: DescribeRemoveError(rec, err), Assessment: a}
			var re *RemovalError
			if errors.As(err, &re) {
				out.Remains = re.Remains
			}
			return out
		}
		return Outcome{Disposition: DispositionRemoved, Text: Describe(a, rec), Assessment: a}
	default:
		return Outcome{Disposition: DispositionKeptUnknown, Text: Describe(a, rec), Assessment: a}
	}
}
