package worktree

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// creatingMark ends the lock reason of a worktree whose Create has not
// finished: a worktree whose reason carries it and whose pid is dead was
// left by a creation that died half-way, and nothing ever ran in it.
const creatingMark = " creating"

// lockReason is the reason Create and the orchestrator put on a worktree.
func lockReason(childID string, pid int) string {
	return fmt.Sprintf("ink %s pid %d", childID, pid)
}

// Lock marks the worktree locked with reason (e.g. "ink <childId> pid
// <pid>"), replacing an existing lock, so `git worktree prune` and other
// tools leave it alone while a worker runs in it. It holds the
// repository's lock while it does so. A worktree made by an earlier ink,
// whose git lived in the repository's git directory, first gets a git
// directory of its own (the child's sandbox never writes the
// repository's); a worktree ink cannot trust is an *UntrustedError and is
// not locked.
func Lock(ctx context.Context, rec Record, reason string) error {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return fmt.Errorf("lock worktree %s: %w", rec.Path, err)
	}
	defer lk.unlock()
	if err := ownGitDir(ctx, rec); err != nil {
		return fmt.Errorf("lock worktree %s: %w", rec.Path, err)
	}
	if err := unlockWorktree(ctx, lk, rec); err != nil {
		return err
	}
	return lockWorktree(ctx, lk, rec, reason)
}

// ownGitDir makes sure the worktree of rec has its own git directory:
// nothing to do when it has a verified one; a worktree made by an earlier
// ink (or whose git directory was being set up when ink stopped) gets
// one. The caller holds the repository lock.
func ownGitDir(ctx context.Context, rec Record) error {
	l, err := openLayout(ctx, rec)
	if err == nil && l.sealed {
		return nil
	}
	if err == nil {
		return makeGitDir(ctx, rec)
	}
	if _, lerr := openLegacy(ctx, rec); lerr == nil {
		// Set up half-way: the link still names the repository's metadata.
		if err := removeGitDir(rec.Path); err != nil {
			return err
		}
		return makeGitDir(ctx, rec)
	}
	return err
}

func lockWorktree(ctx context.Context, lk *repoLock, rec Record, reason string) error {
	if _, err := lk.run(ctx, rec.RepoRoot, "worktree", "lock", "--reason", reason, rec.Path); err != nil {
		return fmt.Errorf("lock worktree %s: %w", rec.Path, err)
	}
	return nil
}

// Unlock removes the worktree's lock, holding the repository's lock while
// it does so; an unlocked worktree is not an error.
func Unlock(ctx context.Context, rec Record) error {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return fmt.Errorf("unlock worktree %s: %w", rec.Path, err)
	}
	defer lk.unlock()
	return unlockWorktree(ctx, lk, rec)
}

func unlockWorktree(ctx context.Context, lk *repoLock, rec Record) error {
	_, err := lk.run(ctx, rec.RepoRoot, "worktree", "unlock", rec.Path)
	if err != nil && !strings.Contains(err.Error(), "is not locked") {
		return fmt.Errorf("unlock worktree %s: %w", rec.Path, err)
	}
	return nil
}

// lockPID reads the pid from ink's lock reason "ink <id> pid <pid>".
func lockPID(reason string) int {
	f := strings.Fields(reason)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "pid" {
			if n, err := strconv.Atoi(f[i+1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// pidAlive reports whether a process with pid exists on this host.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
