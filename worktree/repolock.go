package worktree

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// repoLockName is the lock file ink keeps in a repository's common git
// directory. It is created on first use and never deleted: deleting a flock
// target lets two processes lock two different files of the same name.
const repoLockName = "ink-worktrees.lock"

// repoLock is an exclusive flock on <git-common-dir>/ink-worktrees.lock of
// one repository. It serialises every change ink makes to that
// repository's worktree metadata — `git worktree add/remove/prune/lock/
// unlock`, deleting an ink/<id> branch, merging and committing for `ink
// worktrees merge` — across goroutines (each holder opens its own
// descriptor), processes, INK_HOMEs and users: the lock lives with the
// repository, so everything that can change the repository can see it.
//
// The descriptor is handed to every git command run under the lock (as an
// inherited file), so if ink dies mid-command the lock stays held until
// that git command has finished too: nobody inspects a half-written
// worktree while git is still writing it.
type repoLock struct {
	f    *os.File
	root string
}

// commonDirs caches the common git directory of each repository root.
var commonDirs sync.Map // root -> string

// gitCommonDir returns the absolute common git directory of the repository
// whose main checkout is root.
func gitCommonDir(ctx context.Context, root string) (string, error) {
	if d, ok := commonDirs.Load(root); ok {
		return d.(string), nil
	}
	dir := filepath.Join(root, ".git")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		out, err := read(ctx, root, "rev-parse", "--path-format=absolute", "--git-common-dir")
		if err != nil {
			return "", err
		}
		dir = strings.TrimSpace(out)
	}
	commonDirs.Store(root, dir)
	return dir, nil
}

// lockRepo blocks until it holds the lock of the repository at root, or ctx
// is done. The caller must call unlock.
func lockRepo(ctx context.Context, root string) (*repoLock, error) {
	common, err := gitCommonDir(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("lock repository %s: %w", root, err)
	}
	path := filepath.Join(common, repoLockName)
	// Read-only is enough for flock, so any user who may read the
	// repository's git directory can take the lock once it exists.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock repository %s: %w (ink needs to create or open this file to serialise its git worktree commands)", root, err)
	}
	delay := 2 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &repoLock{f: f, root: root}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock repository %s: flock %s: %w", root, path, err)
		}
		// Jittered backoff keeps waiting processes from waking in step.
		wait := delay/2 + rand.N(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock repository %s: waiting for %s: %w", root, path, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// unlock releases the lock by closing the descriptor. It does not call
// LOCK_UN, which would also release it for a git command still running with
// the inherited descriptor.
func (l *repoLock) unlock() {
	_ = l.f.Close()
}

// run runs a git command that changes the repository, under the lock, with
// the lock's descriptor inherited (like every call of ink's git it runs no
// hook and no automatic gc, which would inherit the lock).
func (l *repoLock) run(ctx context.Context, dir string, args ...string) (string, error) {
	return l.call(gitCall{dir: dir, args: args}).exec(ctx)
}

// call prepares c to run under the lock. Every git command ink runs to
// write — the branch, the refs, the commits of a merge — runs here, with
// durableGit.
func (l *repoLock) call(c gitCall) gitCall {
	c.lock = l
	c.config = append(append([]string(nil), durableGit...), c.config...)
	return c
}

// durableGit makes git sync the objects and refs (and index) it writes
// before it publishes them (core.fsync, git 2.36 and later): git does not
// by default, and a crash of the machine — even long after the child
// ended — could then leave an empty ink/<id> ref that breaks `git gc`.
// Older git ignores the keys; Create then syncs the branch it made itself
// (syncBranch).
var durableGit = []string{"core.fsync=committed,index", "core.fsyncMethod=fsync"}
