package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/inkdev/ink/lease"
)

// lockPath is the cross-process edit lock of the file at real path:
// LockDir/<sha256(realpath)>.lock, shared by every ink process on the host.
func (e *Env) lockPath(real string) string {
	sum := sha256.Sum256([]byte(real))
	return filepath.Join(e.LockDir, hex.EncodeToString(sum[:])+".lock")
}

// lockFile blocks until this process holds the edit lock of the file at
// real path, or ctx is done. The caller must call the returned unlock.
func (e *Env) lockFile(ctx context.Context, real string) (unlock func(), err error) {
	if e.testNoLock {
		return func() {}, nil
	}
	l, err := lease.LockFile(ctx, e.lockPath(real))
	if err != nil {
		return nil, err
	}
	return func() { l.Unlock() }, nil
}
