package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/inkdev/ink/lease"
)

// lockPath is the cross-process edit lock of the file at real path in
// lock directory dir: dir/<sha256(realpath)>.lock.
func lockPath(dir, real string) string {
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(dir, hex.EncodeToString(sum[:])+".lock")
}

// lockFile blocks until this process holds the edit lock of the file at
// real path, or ctx is done. The lock lives in the shared lock directory
// (Env.LockDir, else DefaultLockDir), so every ink process of this user
// on this host excludes the others, whatever INK_HOME each uses. The
// caller must call the returned unlock.
func (e *Env) lockFile(ctx context.Context, real string) (unlock func(), err error) {
	if e.testNoLock {
		return func() {}, nil
	}
	dir, err := e.locks.get(e.LockDir)
	if err != nil {
		return nil, err
	}
	l, err := lease.LockFile(ctx, lockPath(dir, real))
	if err != nil {
		return nil, fmt.Errorf("waiting for the file lock: %w", lockWaitError(ctx, err))
	}
	return func() { l.Unlock() }, nil
}

// lockWaitError says why waiting for a file lock failed, preferring ctx's
// cause when ctx ended the wait.
func lockWaitError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	return err
}
