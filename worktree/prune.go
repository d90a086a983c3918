package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PruneOptions says where Prune looks and what it may remove.
type PruneOptions struct {
	// Repos are repositories whose ink worktrees are pruned as well,
	// whatever INK_HOME made them (see ListOptions.Repos).
	Repos []string
	// Child says what became of the child that owns a worktree; a
	// worktree whose child can still be resumed is kept. Nil: no child is
	// resumable.
	Child func(Info) ChildStatus
	// IncludeResumable removes the clean worktrees of resumable children
	// too; each such entry says what is lost.
	IncludeResumable bool
}

// PruneEntry is one worktree Prune removed or kept.
type PruneEntry struct {
	ChildID  string `json:"childId"`
	RepoRoot string `json:"repoRoot,omitempty"`
	Path     string `json:"path,omitempty"`
	Branch   string `json:"branch,omitempty"`
	InkHome  string `json:"inkHome,omitempty"`
	// Why says why it was removed or kept, and for a kept one what to do.
	Why string `json:"why"`
	// Resumable is true when the worktree's child can still be resumed.
	Resumable bool `json:"resumable,omitempty"`
	// Lost says what removing it cost: the child can no longer be resumed.
	Lost string `json:"lost,omitempty"`
	// BrokenBranch names the ink branch's ref when it was broken (a crash
	// of the machine left it empty) and was deleted.
	BrokenBranch string `json:"brokenBranch,omitempty"`
}

// PruneResult is what Prune did.
type PruneResult struct {
	Removed []PruneEntry `json:"removed"`
	Kept    []PruneEntry `json:"kept"`
	// Temps lists the stale temporary record files it deleted.
	Temps []string `json:"temps,omitempty"`
	// EmptyRecords lists the lone empty record files it deleted: each was
	// left by a process killed while an earlier version of ink created it,
	// before any worktree was made, and held nothing.
	EmptyRecords []string `json:"emptyRecords,omitempty"`
}

// staleTempAge is how old a temporary record file must be before Prune
// deletes it without holding its repository's lock (when no record in its
// directory says which repository it belongs to).
const staleTempAge = 10 * time.Minute

// Prune removes the ink worktrees nothing needs any more, each under its
// repository's lock and re-checked there: clean ones and ones whose every
// commit is merged into the main checkout's HEAD (with their branches),
// ones whose creation was interrupted, records and branches of worktrees
// whose directory is gone (a branch only when it holds nothing HEAD lacks),
// stale temporary record files and lone empty records (loneEmptyRecord).
// It keeps, and lists with the reason, every worktree locked by a live
// process, every one holding work or in a state ink cannot judge, and —
// unless opts.IncludeResumable — the clean worktree of a child that can
// still be resumed. It looks at
// $INK_HOME/worktrees and at the ink worktrees of opts.Repos. Failures are
// joined into the error while the rest go on.
func Prune(ctx context.Context, inkHome string, opts PruneOptions) (PruneResult, error) {
	res := PruneResult{Removed: []PruneEntry{}, Kept: []PruneEntry{}}
	infos, err := ListWith(ctx, inkHome, ListOptions{Repos: opts.Repos, Status: true, Child: opts.Child})
	if err != nil {
		return res, err
	}
	var errs []error
	for _, info := range infos {
		e := PruneEntry{ChildID: info.ChildID, RepoRoot: info.Record.RepoRoot, Path: info.Record.Path, Branch: info.Record.Branch, InkHome: info.InkHome}
		keep, why := pruneVerdict(info, opts)
		e.Why = why
		if info.Child != nil && info.Child.Resumable && !info.DirMissing {
			e.Resumable = true
			if !keep {
				e.Lost = fmt.Sprintf("child %s can no longer be resumed (its last attempt ended %s; its transcript %s stays)", info.ChildID, lastStatus(info.Child), info.Child.Transcript)
			}
		}
		if keep {
			if !(info.Locked && info.LockPIDAlive) {
				if ref, err := RemoveBrokenBranch(ctx, info.Record); err != nil {
					errs = append(errs, fmt.Errorf("prune %s: %w", info.ChildID, err))
				} else {
					e.BrokenBranch = ref
				}
			}
			res.Kept = append(res.Kept, e)
			continue
		}
		rm, err := RemoveForce(ctx, info, false)
		e.BrokenBranch = rm.BrokenBranch
		if err != nil {
			var re *RemovalError
			if errors.As(err, &re) {
				errs = append(errs, fmt.Errorf("prune %s: %w", info.ChildID, err))
			}
			e.Why, e.Lost = "kept: "+err.Error(), ""
			res.Kept = append(res.Kept, e)
			continue
		}
		res.Removed = append(res.Removed, e)
	}
	res.Temps, res.EmptyRecords = pruneTemps(ctx, inkHome, infos)
	return res, errors.Join(errs...)
}

// pruneVerdict decides whether Prune keeps info, and says why in words.
func pruneVerdict(info Info, opts PruneOptions) (keep bool, why string) {
	id := info.ChildID
	switch {
	case info.Locked && info.LockPIDAlive && info.Incomplete:
		return true, fmt.Sprintf("being created by running process %d", info.LockPID)
	case info.Locked && info.LockPIDAlive:
		return true, fmt.Sprintf("in use by running process %d (%s)", info.LockPID, info.LockReason)
	case info.Locked && info.LockPID == 0:
		return true, fmt.Sprintf("locked with the reason %q, which is not ink's; unlock it with `git worktree unlock %s` to let prune judge it", info.LockReason, info.Record.Path)
	case info.Incomplete:
		return false, fmt.Sprintf("its creation was interrupted (process %d died before it finished); nothing ran in it", info.LockPID)
	case info.DirMissing:
		return false, "its worktree directory is gone; its record and registration go, and its branch unless it holds commits your HEAD lacks"
	}
	a := info.Assessment
	removable := a != nil && a.State == Clean || info.Merged
	if removable && info.Child != nil && info.Child.Resumable && !opts.IncludeResumable {
		return true, fmt.Sprintf("child %s can still be resumed (its last attempt ended %s): resume it with `ink task --resume %s \"…\"`, or remove it with `ink worktrees prune --include-resumable`",
			id, lastStatus(info.Child), id)
	}
	switch {
	case a != nil && a.State == Clean:
		return false, "clean (" + a.Detail + "); " + ownerWords(info)
	case info.Merged:
		return false, fmt.Sprintf("every commit of %s is merged into your HEAD and nothing is uncommitted; %s", info.Record.Branch, ownerWords(info))
	case a != nil && a.State == WorkPresent:
		merge := "ink worktrees merge " + id
		if info.Dirty || a.Uncommitted {
			merge = "ink worktrees merge --commit " + id
		}
		return true, fmt.Sprintf("holds work (%s): review it with `ink worktrees diff %s`, merge it with `%s`", workSummary(*a), id, merge)
	default:
		detail := "its state is unknown"
		if a != nil {
			detail = a.Detail
		}
		return true, fmt.Sprintf("kept for safety: %s; look at it with %s and drop it with `ink worktrees rm --force %s`", detail, inspectHint(info), id)
	}
}

// ownerWords says why nobody needs the worktree any more.
func ownerWords(info Info) string {
	var parts []string
	switch {
	case info.Child == nil:
	case info.Child.Transcript == "":
		parts = append(parts, "no transcript")
	default:
		parts = append(parts, "its child's last attempt ended "+lastStatus(info.Child))
	}
	switch {
	case info.Locked && info.LockPID > 0:
		parts = append(parts, fmt.Sprintf("locked by process %d, which is gone", info.LockPID))
	case !info.Locked:
		parts = append(parts, "no process holds it")
	}
	if len(parts) == 0 {
		return "nothing needs it"
	}
	return joinWords(parts)
}

func joinWords(parts []string) string {
	s := parts[0]
	for _, p := range parts[1:] {
		s += ", " + p
	}
	return s
}

// lastStatus words a child's last attempt status.
func lastStatus(c *ChildStatus) string {
	if c.LastStatus == "" {
		return "before it started"
	}
	return c.LastStatus
}

// pruneTemps deletes stale temporary record files and lone empty records
// under $INK_HOME/worktrees, each directory under its repository's lock, and
// removes directories left empty. It returns the paths it deleted of each.
func pruneTemps(ctx context.Context, inkHome string, infos []Info) (temps, empty []string) {
	base := worktreesDir(homeReal(inkHome))
	slugs, err := os.ReadDir(base)
	if err != nil {
		return nil, nil
	}
	roots := map[string]string{}
	for _, in := range infos {
		if in.Record.RepoRoot != "" {
			roots[filepath.Dir(in.Record.Path)] = in.Record.RepoRoot
		}
	}
	add := func(t, e []string) {
		temps, empty = append(temps, t...), append(empty, e...)
	}
	for _, s := range slugs {
		if !s.IsDir() {
			continue
		}
		dir := filepath.Join(base, s.Name())
		if root, ok := roots[dir]; ok {
			if lk, err := lockRepo(ctx, root); err == nil {
				add(removeTemps(dir, 0))
				lk.unlock()
			}
		} else {
			add(removeTemps(dir, staleTempAge))
		}
		_ = os.Remove(dir) // only when empty
	}
	return temps, empty
}
