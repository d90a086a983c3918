package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// repoLock serialises ink's worktree add, remove, prune and merge in one
// repository, across goroutines and processes: each holder opens its own
// descriptor on $INK_HOME/locks/worktree-<sha256(root)>.lock (never deleted).
type repoLock struct {
	fl *flock.Flock
}

// lockRepo blocks until it holds the repository's lock or ctx is done. The
// caller must call unlock.
func lockRepo(ctx context.Context, inkHome, root string) (*repoLock, error) {
	dir := filepath.Join(inkHome, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("repository lock: %w", err)
	}
	path := filepath.Join(dir, "worktree-"+repoHash(root)+".lock")
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLockContext(ctx, 10*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("repository lock %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("repository lock %s: %w", path, ctx.Err())
	}
	return &repoLock{fl: fl}, nil
}

// unlock releases the lock.
func (l *repoLock) unlock() {
	_ = l.fl.Unlock()
}
