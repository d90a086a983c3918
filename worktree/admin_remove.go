package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrInUse marks a removal refused because a live process holds the
// worktree's lock.
var ErrInUse = errors.New("worktree in use")

// ErrUnmergedWork marks a removal refused because the worktree holds work
// that is not merged into the main checkout's HEAD, or work ink cannot
// judge.
var ErrUnmergedWork = errors.New("worktree holds unmerged work")

// RemoveResult tells what RemoveForce removed.
type RemoveResult struct {
	ChildID  string `json:"childId"`
	RepoRoot string `json:"repoRoot,omitempty"`
	Path     string `json:"path"`
	Branch   string `json:"branch"`
	Removed  bool   `json:"removed"`
	// DroppedHead is the branch tip when commits that the main checkout's
	// HEAD lacks were deleted with the branch (only with force): the
	// commit to recover them from while git still keeps it.
	DroppedHead string `json:"droppedHead,omitempty"`
	// Discarded lists the uncommitted files (`git status --porcelain`
	// lines) deleted with the worktree (only with force).
	Discarded []string `json:"discarded,omitempty"`
	// BrokenBranch names the ink branch's ref when it was broken (empty
	// or not a ref, as a crash of the machine leaves an unsynced ref) and
	// was deleted, whether or not the worktree was removed.
	BrokenBranch string `json:"brokenBranch,omitempty"`
}

// RemoveForce removes the worktree of info for `ink worktrees rm`, under
// the repository lock. It always refuses (ErrInUse) while the pid named in
// its lock is alive. A Clean worktree is removed as Remove does; one whose
// commits are all merged into the main checkout's HEAD and that has no
// uncommitted files is removed with its branch; so is one whose creation
// was interrupted (nothing ever ran in it) and one whose directory is gone
// and whose branch holds nothing unmerged. Anything else (unmerged commits,
// uncommitted files, an Unknown state) is refused with ErrUnmergedWork
// unless force, in which case the directory, the ink branch and the
// registration are deleted regardless and the result names what was
// dropped.
func RemoveForce(ctx context.Context, info Info, force bool) (RemoveResult, error) {
	rec := info.Record
	res := RemoveResult{ChildID: info.ChildID, RepoRoot: rec.RepoRoot, Path: rec.Path, Branch: rec.Branch}
	if rec.Path == "" || rec.RepoRoot == "" {
		return res, fmt.Errorf("remove worktree %s: its repository is unknown; check %s by hand and delete it, and its record %s, yourself", info.ChildID, rec.Path, recordPath(rec.Path))
	}
	if !inkShaped(rec.Path, rec.RepoRoot) || !inkOwned(rec) {
		return res, fmt.Errorf("remove worktree %s: %s on branch %s is not a worktree ink made for %s; refusing to touch it", info.ChildID, rec.Path, rec.Branch, rec.RepoRoot)
	}
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return res, fmt.Errorf("remove worktree %s: %w", info.ChildID, err)
	}
	defer lk.unlock()

	all, err := listRegistered(ctx, rec.RepoRoot)
	if err != nil {
		return res, fmt.Errorf("remove worktree %s: %w", info.ChildID, err)
	}
	reg, registered := findRegistered(all, rec.Path)
	if registered && reg.locked {
		if pid := lockPID(reg.lockReason); pid > 0 && pidAlive(pid) {
			return res, fmt.Errorf("%w: %s is locked by running process %d (%s); stop it first", ErrInUse, rec.Path, pid, reg.lockReason)
		}
	}
	// A broken ink branch holds nothing git can read, and breaks `git
	// gc` while it exists: it goes first, whatever becomes of the rest.
	if ref, err := removeBrokenBranch(ctx, lk, rec); err != nil {
		return res, fmt.Errorf("remove worktree %s: %w", info.ChildID, err)
	} else {
		res.BrokenBranch = ref
	}
	// Commits the child made since the last sync come into the repository
	// first, so that what a forced removal drops can still be recovered.
	if dirExists(rec.GitDir()) {
		_, _ = syncLocked(ctx, lk, rec)
	}
	tip := branchTip(ctx, rec)
	drop := func(tip string, force bool) (RemoveResult, error) {
		if err := dropWorktree(ctx, lk, rec, tip, force); err != nil {
			return res, err
		}
		res.Removed = true
		return res, nil
	}
	switch {
	case registered && reg.locked && strings.HasSuffix(reg.lockReason, creatingMark) && (tip == "" || tip == rec.Baseline):
		// An interrupted creation: no agent ever ran in it.
		return drop(tip, true)
	case !dirExists(rec.Path):
		return removeBranchOnly(ctx, lk, rec, tip, force, res)
	}
	var a Assessment
	if rec.Baseline == "" {
		a = unknown("no ink record for %s, and its branch's reflog no longer says where it started", rec.Path)
	} else {
		a = Assess(ctx, rec)
	}
	if a.State == Clean {
		return drop(rec.Baseline, false)
	}
	st, stErr := uncommittedIn(ctx, rec)
	if a.State == WorkPresent && stErr == nil && len(st) == 0 && tip != "" && inHead(ctx, rec.RepoRoot, tip) {
		return drop(tip, false)
	}
	if !force {
		id := info.ChildID
		if a.State == WorkPresent {
			merge := "ink worktrees merge " + id
			if stErr == nil && len(st) > 0 {
				merge = "ink worktrees merge --commit " + id
			}
			return res, fmt.Errorf("%w: %s (%s: %s); merge it with `%s` or drop it with `ink worktrees rm --force %s`",
				ErrUnmergedWork, rec.Path, a.State, a.Detail, merge, id)
		}
		return res, fmt.Errorf("%w: ink cannot tell what %s holds (%s); look at it with %s and drop it with `ink worktrees rm --force %s`",
			ErrUnmergedWork, rec.Path, a.Detail, inspectHint(info), id)
	}
	if tip != "" && !inHead(ctx, rec.RepoRoot, tip) {
		res.DroppedHead = tip
	}
	res.Discarded = st
	return drop(tip, true)
}

// removeBranchOnly handles a worktree whose directory is gone: its
// registration and record go, and its branch too when it holds nothing the main
// checkout's HEAD lacks (or with force).
func removeBranchOnly(ctx context.Context, lk *repoLock, rec Record, tip string, force bool, res RemoveResult) (RemoveResult, error) {
	if tip != "" && tip != rec.Baseline && !inHead(ctx, rec.RepoRoot, tip) {
		if !force {
			return res, fmt.Errorf("%w: the worktree %s is gone but its branch %s holds commits your HEAD lacks; merge them with `ink worktrees merge %s` or drop the branch with `ink worktrees rm --force %s`",
				ErrUnmergedWork, rec.Path, rec.Branch, rec.ChildID(), rec.ChildID())
		}
		res.DroppedHead = tip
	}
	if err := dropWorktree(ctx, lk, rec, tip, force); err != nil {
		return res, err
	}
	res.Removed = true
	return res, nil
}

// inspectHint says how to look at a worktree ink cannot judge.
func inspectHint(info Info) string {
	rec := info.Record
	if info.Untrusted != "" {
		return fmt.Sprintf("its files only — do not run git in %s: its .git link is not the one ink made, and git would run what the directory it names configures", rec.Path)
	}
	if rec.Baseline != "" && !info.RecordMissing && dirExists(rec.Path) {
		return fmt.Sprintf("`ink worktrees diff %s` (or git in %s)", info.ChildID, rec.Path)
	}
	return fmt.Sprintf("git in %s (`git -C %s status`, `git -C %s log`)", rec.Path, rec.Path, rec.Path)
}

// branchTip returns the commit rec's branch points at, "" when it does
// not exist.
func branchTip(ctx context.Context, rec Record) string {
	if rec.Branch == "" {
		return ""
	}
	out, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// inHead reports whether commit is contained in the HEAD of the main
// checkout at root.
func inHead(ctx context.Context, root, commit string) bool {
	_, err := read(ctx, root, "merge-base", "--is-ancestor", commit, "HEAD")
	return err == nil
}

// dropWorktree deletes the worktree (its directory, its own git directory
// and its registration), its ink branch (only while it points at tip; none
// when tip is "") and its record. Callers have judged the worktree (or
// were told to force it): nothing here runs git in it. With force, a lock
// that cannot be lifted does not stop it. A failure part-way is a
// *RemovalError saying what remains.
func dropWorktree(ctx context.Context, lk *repoLock, rec Record, tip string, force bool) error {
	var reg *registered
	if all, err := listRegistered(ctx, rec.RepoRoot); err == nil {
		if found, ok := findRegistered(all, rec.Path); ok {
			reg = &found
		}
	}
	return dropRegistered(ctx, lk, rec, tip, force, reg)
}

// dropRegistered is dropWorktree with the worktree's registration already
// read under the caller's lock (nil when it is not registered).
func dropRegistered(ctx context.Context, lk *repoLock, rec Record, tip string, force bool, reg *registered) error {
	isReg, isLocked := reg != nil, reg != nil && reg.locked
	if isReg && isLocked {
		if err := unlockWorktree(ctx, lk, rec); err != nil && !force {
			return failed(ctx, rec, fmt.Errorf("remove worktree: %w", err))
		}
	}
	if err := os.RemoveAll(rec.Path); err != nil {
		return failed(ctx, rec, fmt.Errorf("remove worktree %s: %w", rec.Path, err))
	}
	if err := removeGitDir(rec.Path); err != nil {
		return failed(ctx, rec, fmt.Errorf("remove the git directory of %s: %w", rec.Path, err))
	}
	if _, err := lk.run(ctx, rec.RepoRoot, "worktree", "prune"); err != nil {
		return failed(ctx, rec, fmt.Errorf("remove worktree: prune: %w", err))
	}
	if tip != "" {
		if err := deleteInkBranch(ctx, lk, rec, tip); err != nil {
			return failed(ctx, rec, fmt.Errorf("remove worktree: the directory is gone but %w", err))
		}
	}
	if err := removeRecord(rec.Path); err != nil {
		return failed(ctx, rec, err)
	}
	removeEmptySlugDir(rec.Path)
	return nil
}
