package worktree

import (
	"errors"
	"fmt"
	"strings"
)

// Describe renders the result line for an assessment: what was kept and
// where, how to review and merge work, or why the worktree was kept for
// safety; for Clean it states the removal (call it after Remove succeeded,
// or use DescribeRemoveError when Remove failed).
func Describe(a Assessment, rec Record) string {
	id := rec.ChildID()
	switch a.State {
	case Clean:
		return fmt.Sprintf("no changes: worktree %s and branch %s removed", rec.Path, rec.Branch)
	case WorkPresent:
		merge := "ink worktrees merge " + id
		if a.Uncommitted {
			merge = "ink worktrees merge --commit " + id
		}
		return fmt.Sprintf("changes kept in worktree %s on branch %s (%s) — review with `ink worktrees diff %s`, merge with `%s`",
			rec.Path, rec.Branch, workSummary(a), id, merge)
	default:
		return fmt.Sprintf("worktree kept for safety: %s. Nothing was deleted. Inspect %s", a.Detail, rec.Path)
	}
}

// DescribeRemoveError renders the result line when Remove of a Clean
// worktree failed: what failed, what is left and the command that removes
// it.
func DescribeRemoveError(rec Record, err error) string {
	var re *RemovalError
	if errors.As(err, &re) {
		if len(re.Remains) == 0 {
			return fmt.Sprintf("worktree cleanup failed: %v; nothing of worktree %s or branch %s is left", re.Err, rec.Path, rec.Branch)
		}
		return "worktree cleanup failed: " + err.Error()
	}
	return fmt.Sprintf("worktree cleanup failed: %v. %s and branch %s may still exist; check them with `ink worktrees ls` and remove them with `ink worktrees rm %s`",
		err, rec.Path, rec.Branch, rec.ChildID())
}

// workSummary words what a WorkPresent worktree holds: the assessment's
// detail, its shortstat and its untracked files.
func workSummary(a Assessment) string {
	var parts []string
	if a.Detail != "" {
		parts = append(parts, a.Detail)
	}
	if a.Shortstat != "" {
		parts = append(parts, a.Shortstat)
	}
	if len(a.Untracked) > 0 {
		u := "untracked: " + strings.Join(a.Untracked, ", ")
		if a.UntrackedMore > 0 {
			u += fmt.Sprintf(", +%d more", a.UntrackedMore)
		}
		parts = append(parts, u)
	}
	return strings.Join(parts, "; ")
}
