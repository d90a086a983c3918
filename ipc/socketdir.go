package ipc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxSocketPath is the longest Unix socket path ink lets go-plugin create.
// The kernel limit is 104 bytes on macOS and 108 on Linux, counting the
// terminating NUL; a little headroom is kept.
const maxSocketPath = 100

// socketNameBudget is what go-plugin appends to the base directory: a fresh
// "/plugin-dir<up to 10 digits>" directory holding "/plugin<up to 10 digits>".
const socketNameBudget = len("/plugin-dir") + 10 + len("/plugin") + 10

// fallbackPrefix names the fresh directories made under the system temp dir.
const fallbackPrefix = "ink-run-"

// socketBase is where one worker's socket directory will be created.
type socketBase struct {
	// dir is handed to go-plugin as UnixSocketConfig.TempDir; go-plugin
	// creates a fresh 0700 directory inside it and removes that on Kill.
	dir string
	// fallback is set when dir is a fresh directory under the system temp
	// dir that ink created and must remove on Kill.
	fallback bool
}

// prepareSocketBase makes dir (normally $INK_HOME/run) ready to hold worker
// sockets: it is created 0700, must be a directory owned by the current
// user, and is narrowed to 0700 if it is wider. When dir is empty or so long
// that a socket inside it would exceed the Unix limit, a fresh 0700
// directory under the system temp dir is used instead.
func prepareSocketBase(dir string) (socketBase, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return socketBase{}, fmt.Errorf("socket dir %s: %w", dir, err)
		}
		if len(abs)+socketNameBudget <= maxSocketPath {
			if err := ensurePrivateDir(abs); err != nil {
				return socketBase{}, err
			}
			return socketBase{dir: abs}, nil
		}
	}
	tmp := os.TempDir()
	if len(tmp)+len("/"+fallbackPrefix)+10+socketNameBudget > maxSocketPath {
		tmp = "/tmp"
	}
	fresh, err := os.MkdirTemp(tmp, fallbackPrefix)
	if err != nil {
		return socketBase{}, fmt.Errorf("socket dir: %s is too long for a Unix socket and no short temp dir could be made: %w", dir, err)
	}
	if len(fresh)+socketNameBudget > maxSocketPath {
		_ = os.Remove(fresh)
		return socketBase{}, fmt.Errorf("socket dir: both %s and the temp dir %s are too long for a Unix socket; set TMPDIR to a short directory", dir, tmp)
	}
	return socketBase{dir: fresh, fallback: true}, nil
}

// ensurePrivateDir creates dir with mode 0700 if needed and checks that it
// is a directory owned by the current user with no access for anyone else,
// tightening the mode when the user owns it.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket dir %s is not a directory (%s); remove it so ink can create it", dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("socket dir %s: cannot read its owner", dir)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("socket dir %s belongs to uid %d, not to you (uid %d); remove it or point INK_HOME elsewhere", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("socket dir %s has mode %o and could not be made private: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// staleSocketAge is how old a worker's socket directory must be before a
// later Start may remove it for holding no live socket; younger ones may
// belong to a worker another ink is starting right now.
const staleSocketAge = time.Minute

// pruneStaleSocketDirs removes the per-worker socket directories in base
// ("plugin-dir*", made by go-plugin) whose socket no process listens on any
// more: what a killed supervisor left behind. A directory is kept while it
// is young or while its socket accepts connections.
func pruneStaleSocketDirs(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "plugin-dir") {
			continue
		}
		dir := filepath.Join(base, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || time.Since(fi.ModTime()) < staleSocketAge {
			continue
		}
		if socketsLive(dir) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// socketsLive reports whether any Unix socket in dir accepts a connection.
func socketsLive(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true // unreadable: leave it alone
	}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		c, err := net.DialTimeout("unix", filepath.Join(dir, e.Name()), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
	}
	return false
}
