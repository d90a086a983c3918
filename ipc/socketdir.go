package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
//
// A directory whose filesystem cannot hold a Unix socket (FUSE, some
// network filesystems: bind fails) is replaced by a private runtime
// directory, $XDG_RUNTIME_DIR/ink/run when there is one that can, else a
// fresh 0700 directory under the system temp dir; note then says so, in
// words for the user.
func prepareSocketBase(dir string) (base socketBase, note string, err error) {
	why := "it is too long for a Unix socket"
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return socketBase{}, "", fmt.Errorf("socket dir %s: %w", dir, err)
		}
		if len(abs)+socketNameBudget <= maxSocketPath {
			if err := ensurePrivateDir(abs); err != nil {
				return socketBase{}, "", err
			}
			berr := canBind(abs)
			if berr == nil {
				return socketBase{dir: abs}, "", nil
			}
			why = fmt.Sprintf("its filesystem cannot hold a Unix socket (%v)", berr)
			note = fmt.Sprintf("worker sockets cannot live in %s: %s; using a private runtime directory instead", abs, why)
			if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
				run := filepath.Join(rt, "ink", "run")
				if len(run)+socketNameBudget <= maxSocketPath && ensurePrivateDir(run) == nil && canBind(run) == nil {
					return socketBase{dir: run}, note + " (" + run + ")", nil
				}
			}
		}
	}
	tmp := os.TempDir()
	if len(tmp)+len("/"+fallbackPrefix)+10+socketNameBudget > maxSocketPath {
		tmp = "/tmp"
	}
	fresh, err := os.MkdirTemp(tmp, fallbackPrefix)
	if err != nil {
		return socketBase{}, "", fmt.Errorf("socket dir: %s cannot be used (%s) and no private temp dir could be made: %w", dir, why, err)
	}
	if len(fresh)+socketNameBudget > maxSocketPath {
		_ = os.Remove(fresh)
		return socketBase{}, "", fmt.Errorf("socket dir: %s cannot be used (%s) and the temp dir %s is too long for a Unix socket; set TMPDIR to a short directory", dir, why, tmp)
	}
	if note != "" {
		if berr := canBind(fresh); berr != nil {
			_ = os.Remove(fresh)
			return socketBase{}, "", fmt.Errorf("socket dir: neither %s nor the temp dir %s can hold a Unix socket (%v); set INK_HOME or TMPDIR to a local disk", dir, tmp, berr)
		}
		note += " (" + fresh + ")"
	}
	return socketBase{dir: fresh, fallback: true}, note, nil
}

// bindable caches canBind's answer per directory: a filesystem does not
// change its mind about sockets while ink runs.
var bindable sync.Map // dir -> error (nil stored as errOK)

var errOK = errors.New("ok")

// canBind reports whether a Unix socket can be bound in dir, by binding
// and removing one, once per directory and process.
func canBind(dir string) error {
	if v, ok := bindable.Load(dir); ok {
		if v.(error) == errOK {
			return nil
		}
		return v.(error)
	}
	p := filepath.Join(dir, fmt.Sprintf(".probe-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6))
	l, err := net.Listen("unix", p)
	if err == nil {
		l.Close()
		_ = os.Remove(p)
		bindable.Store(dir, errOK)
		return nil
	}
	_ = os.Remove(p)
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	bindable.Store(dir, err)
	return err
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
