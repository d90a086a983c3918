package lease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// FileLock is an exclusive advisory lock on a lock file, held until Unlock.
// It is not safe for concurrent use; the lock file is never deleted.
type FileLock struct {
	fl *flock.Flock
}

// LockFile blocks until it holds an exclusive flock on path (created 0600,
// along with its directory, if missing) or ctx is done. Two LockFile calls
// on one path conflict even within one process. The caller must Unlock.
func LockFile(ctx context.Context, path string) (*FileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
	}
	return &FileLock{fl: fl}, nil
}

// Unlock releases the lock and closes its file.
func (l *FileLock) Unlock() error {
	return l.fl.Unlock()
}
