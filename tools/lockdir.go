package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// DefaultLockDir returns the directory that holds the per-file edit locks
// of every ink process this user runs on this host, whatever INK_HOME each
// uses, creating it (mode 0700) if needed. It is the first usable one of:
//
//   - $XDG_RUNTIME_DIR/ink/locks, when XDG_RUNTIME_DIR is set to an
//     absolute path of a directory that belongs to this user and is closed
//     to others (as the XDG spec requires);
//   - /run/user/<uid>/ink/locks under the same conditions: that is where
//     XDG_RUNTIME_DIR points on systemd hosts, so a process started
//     without the variable (cron, su, a service) still meets the others
//     there;
//   - <temp>/ink-<uid>/locks, with <temp> the system temp directory
//     (os.TempDir: $TMPDIR, else /tmp). ink creates ink-<uid> with mode
//     0700 and refuses it when it is not a real directory of this user's
//     closed to others: someone else may have planted it to watch or block
//     ink's locks. The error says how to fix it.
//
// Lock files are never deleted (a runtime directory is emptied at logout,
// the temp directory at boot). It is safe for concurrent use.
func DefaultLockDir() (string, error) {
	return defaultLockDir(os.Getenv, os.Getuid(), "/run/user", os.TempDir())
}

// defaultLockDir is DefaultLockDir with its inputs spelled out for tests.
func defaultLockDir(getenv func(string) string, uid int, runUser, tempDir string) (string, error) {
	var candidates []string
	if x := getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		candidates = append(candidates, filepath.Clean(x))
	}
	if r := filepath.Join(runUser, strconv.Itoa(uid)); runUser != "" && (len(candidates) == 0 || candidates[0] != r) {
		candidates = append(candidates, r)
	}
	for _, base := range candidates {
		if fi, err := os.Stat(base); err != nil || checkPrivateDir(base, fi, uid) != nil {
			continue
		}
		dir := filepath.Join(base, "ink")
		if privateDir(dir, uid) != nil {
			continue
		}
		locks := filepath.Join(dir, "locks")
		if privateDir(locks, uid) == nil {
			return locks, nil
		}
	}
	if !filepath.IsAbs(tempDir) {
		return "", fmt.Errorf("no place for edit locks: the temp directory %q is not an absolute path; set TMPDIR to one, or XDG_RUNTIME_DIR to a private directory of yours", tempDir)
	}
	dir := filepath.Join(tempDir, "ink-"+strconv.Itoa(uid))
	if err := privateDir(dir, uid); err != nil {
		return "", fmt.Errorf("no place for edit locks: %w", err)
	}
	locks := filepath.Join(dir, "locks")
	if err := privateDir(locks, uid); err != nil {
		return "", fmt.Errorf("no place for edit locks: %w", err)
	}
	return locks, nil
}

// privateDir makes sure dir is a directory of uid's that no one else may
// enter, creating it with mode 0700 when missing. It never follows a
// symbolic link at dir, and never loosens or tightens an existing one.
func privateDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, unwrapPathError(err))
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, unwrapPathError(err))
	}
	return checkPrivateDir(dir, fi, uid)
}

// checkPrivateDir says why fi (the stat of dir) is not a real directory
// that belongs to uid and is closed to group and others, or returns nil.
func checkPrivateDir(dir string, fi fs.FileInfo, uid int) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link, not a directory of yours; remove it and try again", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory; remove it and try again", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot tell who owns it", dir)
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d), so it cannot hold your locks; have it removed, or set XDG_RUNTIME_DIR to a private directory of yours", dir, st.Uid, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, so others may use it; make it private with chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// lockDirCache finds the lock directory on first use and remembers it; a
// failure is retried on the next use. It is safe for concurrent use.
type lockDirCache struct {
	find func() (string, error) // nil means DefaultLockDir
	mu   sync.Mutex
	dir  string
}

// get returns the lock directory: override when set, else the default.
func (c *lockDirCache) get(override string) (string, error) {
	if override != "" {
		return override, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		return c.dir, nil
	}
	find := c.find
	if find == nil {
		find = DefaultLockDir
	}
	dir, err := find()
	if err != nil {
		return "", err
	}
	c.dir = dir
	return dir, nil
}
