package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrInUse marks a removal refused because a live process holds the
// worktree's lock.
var ErrInUse = errors.New("worktree in use")

// ErrUnmergedWork marks a removal refused because the worktree holds work
// that is not merged into the main checkout's HEAD.
var ErrUnmergedWork = errors.New("worktree holds unmerged work")

// RemoveForce removes the worktree of info for `ink worktrees rm`, under
// the repository lock. It always refuses (ErrInUse) while the pid named in
// its lock is alive. A Clean worktree is removed as Remove does; one whose
// commits are all merged into the main checkout's HEAD and that has no
// uncommitted files is removed with its branch. Anything else (unmerged
// commits, uncommitted files, an Unknown state, no record) is refused with
// ErrUnmergedWork unless force, in which case the directory, the ink branch
// and the registration are deleted regardless (Info.Head names the commit
// that was dropped).
func RemoveForce(ctx context.Context, info Info, force bool) error {
	rec := info.Record
	path := rec.Path
	if path == "" || rec.RepoRoot == "" {
		return fmt.Errorf("remove worktree %s: its repository is unknown; delete %s by hand after checking it", info.ChildID, path)
	}
	inkHome := rec.inkHomeOf()
	if !ownedPath(inkHome, path) {
		return fmt.Errorf("remove worktree %s: %s is not under %s; refusing to touch it", info.ChildID, path, worktreesDir(inkHome))
	}
	lk, err := lockRepo(ctx, inkHome, rec.RepoRoot)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", info.ChildID, err)
	}
	defer lk.unlock()

	if all, err := listRegistered(ctx, rec.RepoRoot); err == nil {
		if reg, ok := findRegistered(all, path); ok && reg.locked {
			if pid := lockPID(reg.lockReason); pid > 0 && pidAlive(pid) {
				return fmt.Errorf("%w: %s is locked by running process %d (%s); stop it first", ErrInUse, path, pid, reg.lockReason)
			}
		}
	}

	if !info.RecordMissing {
		a := Assess(ctx, rec)
		if a.State == Clean {
			return removeLocked(ctx, rec)
		}
		if a.State == WorkPresent {
			if tip, ok := mergedTip(ctx, rec); ok {
				return dropWorktree(ctx, rec, tip, false)
			}
		}
		if !force {
			return fmt.Errorf("%w: %s (%s: %s); merge it with `ink worktrees merge %s` or drop it with `ink worktrees rm --force %s`",
				ErrUnmergedWork, path, a.State, a.Detail, info.ChildID, info.ChildID)
		}
	} else if !force {
		return fmt.Errorf("%w: %s has no ink record, so ink cannot tell whether it holds work; inspect it and use --force to drop it", ErrUnmergedWork, path)
	}
	tip := ""
	if t, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch); err == nil {
		tip = strings.TrimSpace(t)
	}
	return dropWorktree(ctx, rec, tip, true)
}

// mergedTip returns the branch tip when the worktree has no uncommitted
// files and the tip is already contained in the main checkout's HEAD.
func mergedTip(ctx context.Context, rec Record) (string, bool) {
	st, err := uncommitted(ctx, rec.Path)
	if err != nil || len(st) > 0 {
		return "", false
	}
	tip, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch+"^{commit}")
	if err != nil {
		return "", false
	}
	tip = strings.TrimSpace(tip)
	if _, err := read(ctx, rec.RepoRoot, "merge-base", "--is-ancestor", tip, "HEAD"); err != nil {
		return "", false
	}
	return tip, true
}

// dropWorktree deletes the worktree, its ink branch (only while it points
// at tip) and its record. With force, uncommitted files are discarded.
func dropWorktree(ctx context.Context, rec Record, tip string, force bool) error {
	if dirExists(rec.Path) {
		if err := Unlock(ctx, rec); err != nil && !force {
			return fmt.Errorf("remove worktree: %w", err)
		}
		args := []string{"worktree", "remove", rec.Path}
		if force {
			args = []string{"worktree", "remove", "--force", "--force", rec.Path}
		}
		if _, err := run(ctx, rec.RepoRoot, args...); err != nil {
			if !force {
				return fmt.Errorf("remove worktree %s: %w", rec.Path, err)
			}
			if err := os.RemoveAll(rec.Path); err != nil {
				return fmt.Errorf("remove worktree %s: %w", rec.Path, err)
			}
		}
	}
	if _, err := run(ctx, rec.RepoRoot, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree: prune: %w", err)
	}
	if tip != "" {
		if err := deleteInkBranch(ctx, rec, tip); err != nil {
			return fmt.Errorf("remove worktree: the directory is gone but %w", err)
		}
	}
	if err := os.Remove(recordPath(rec.Path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove worktree record: %w", err)
	}
	removeEmptySlugDir(rec.Path)
	return nil
}

// ownedPath reports whether path is $INK_HOME/worktrees/<slug>/<id>.
func ownedPath(inkHome, path string) bool {
	base := worktreesDir(inkHome)
	if r, err := realpath(base); err == nil {
		base = r
	}
	p := filepath.Clean(path)
	if r, err := resolveExisting(p); err == nil {
		p = r
	}
	return filepath.Dir(filepath.Dir(p)) == base && checkChildID(filepath.Base(p)) == nil
}

// Prune removes every Clean worktree under $INK_HOME/worktrees that is
// unlocked or whose locking process is dead, and every record file left
// without a directory, registration or branch; it keeps everything else.
// It returns the paths it removed; failures are joined into the error while
// the rest go on.
func Prune(ctx context.Context, inkHome string) ([]string, error) {
	infos, err := List(ctx, inkHome)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, info := range infos {
		rec := info.Record
		if info.Locked && info.LockPIDAlive {
			continue
		}
		switch {
		case !info.RecordMissing && info.Assessment.State == Clean:
			if err := Remove(ctx, rec); err != nil {
				if !errors.Is(err, ErrNotClean) {
					errs = append(errs, fmt.Errorf("prune %s: %w", info.ChildID, err))
				}
				continue
			}
			removed = append(removed, rec.Path)
		case !info.RecordMissing && !dirExists(rec.Path):
			gone, err := pruneOrphanRecord(ctx, inkHome, rec)
			if err != nil {
				errs = append(errs, fmt.Errorf("prune %s: %w", info.ChildID, err))
			} else if gone {
				removed = append(removed, rec.Path)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// pruneOrphanRecord deletes rec's record file, under the repository lock,
// when its worktree left nothing behind.
func pruneOrphanRecord(ctx context.Context, inkHome string, rec Record) (bool, error) {
	if !dirExists(rec.RepoRoot) {
		return false, nil
	}
	lk, err := lockRepo(ctx, inkHome, rec.RepoRoot)
	if err != nil {
		return false, err
	}
	defer lk.unlock()
	if !orphanRecord(ctx, rec) {
		return false, nil
	}
	if err := os.Remove(recordPath(rec.Path)); err != nil {
		return false, err
	}
	removeEmptySlugDir(rec.Path)
	return true, nil
}

// orphanRecord reports whether rec's worktree left nothing behind: no
// directory, no registration, and no branch.
func orphanRecord(ctx context.Context, rec Record) bool {
	if _, err := os.Lstat(rec.Path); err == nil {
		return false
	}
	if !dirExists(rec.RepoRoot) {
		return false
	}
	if _, err := run(ctx, rec.RepoRoot, "worktree", "prune"); err != nil {
		return false
	}
	all, err := listRegistered(ctx, rec.RepoRoot)
	if err != nil {
		return false
	}
	if _, ok := findRegistered(all, rec.Path); ok {
		return false
	}
	_, err = read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch)
	return exitCode(err) == 1
}
