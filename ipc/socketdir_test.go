package ipc

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestPrepareSocketBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dir      func(t *testing.T) string
		fallback bool
	}{
		{"short run dir is used", func(t *testing.T) string { return filepath.Join(shortTempDir(t), "run") }, false},
		{"empty falls back", func(*testing.T) string { return "" }, true},
		{"long run dir falls back", func(t *testing.T) string {
			return filepath.Join(shortTempDir(t), strings.Repeat("x", maxSocketPath))
		}, true},
		{"relative dir is made absolute", func(t *testing.T) string {
			rel, err := filepath.Rel(mustGetwd(t), filepath.Join(shortTempDir(t), "run"))
			if err != nil {
				t.Fatal(err)
			}
			return rel
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.dir(t)
			base, _, err := prepareSocketBase(dir)
			if err != nil {
				t.Fatalf("prepareSocketBase(%q): %v", dir, err)
			}
			if base.fallback {
				t.Cleanup(func() { _ = os.RemoveAll(base.dir) })
			}
			if base.fallback != tt.fallback {
				t.Fatalf("fallback = %v, want %v (dir %s)", base.fallback, tt.fallback, base.dir)
			}
			if !filepath.IsAbs(base.dir) || len(base.dir)+socketNameBudget > maxSocketPath {
				t.Errorf("base %q is not absolute or too long for a socket", base.dir)
			}
			assertPrivateDir(t, base.dir)
		})
	}
}

// TestUnbindableSocketDirFallsBack: a run directory whose filesystem
// cannot hold a Unix socket (FUSE: bind fails with ENOSYS) is replaced by
// a private runtime directory, with a note that says why, and a worker
// still starts there.
func TestUnbindableSocketDirFallsBack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortTempDir(t), "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bindable.Store(dir, syscall.ENOSYS) // what bind said on such a filesystem
	base, note, err := prepareSocketBase(dir)
	if err != nil {
		t.Fatal(err)
	}
	if base.fallback {
		t.Cleanup(func() { _ = os.RemoveAll(base.dir) })
	}
	if base.dir == dir || !strings.Contains(note, dir) || !strings.Contains(note, "cannot hold a Unix socket") || !strings.Contains(note, base.dir) {
		t.Fatalf("base %q, note %q: want another directory and a note naming both and why", base.dir, note)
	}
	assertPrivateDir(t, base.dir)
	if err := canBind(base.dir); err != nil {
		t.Fatalf("the fallback %s cannot hold a socket either: %v", base.dir, err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestPruneStaleSocketDirs: a dead worker's socket directory that is old
// enough is removed; a live one, a young one and foreign entries stay.
func TestPruneStaleSocketDirs(t *testing.T) {
	base := t.TempDir()
	old := time.Now().Add(-2 * staleSocketAge)
	mk := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// A dead socket: bound, then its listener closed without unlinking.
	dead := mk("plugin-dir1")
	l, err := net.Listen("unix", filepath.Join(dead, "plugin1"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	// A live socket.
	live := mk("plugin-dir2")
	ll, err := net.Listen("unix", filepath.Join(live, "plugin2"))
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	empty := mk("plugin-dir3")
	young := mk("plugin-dir4")
	other := mk("keep-me")
	for _, d := range []string{dead, live, empty, other} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	pruneStaleSocketDirs(base)
	for d, want := range map[string]bool{dead: false, empty: false, live: true, young: true, other: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(d), got, want)
		}
	}
}

// TestUnbindableSocketDirSaidOnce: workers started with a socket
// directory whose filesystem cannot hold a Unix socket all start, in a
// private runtime directory ($XDG_RUNTIME_DIR/ink/run when it can hold
// them, else a fresh private temp directory that Kill removes), and the
// user is told once, with what failed, however many start.
func TestUnbindableSocketDirSaidOnce(t *testing.T) {
	for _, runtime := range []bool{true, false} {
		t.Run(fmt.Sprintf("runtime-dir-%v", runtime), func(t *testing.T) {
			rt := ""
			if runtime {
				rt = shortTempDir(t)
			}
			t.Setenv("XDG_RUNTIME_DIR", rt)
			socketNoteOnce = sync.Once{}
			dir := filepath.Join(shortTempDir(t), "run")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			bindable.Store(dir, syscall.ENOSYS)
			var mu sync.Mutex
			var said []string
			warn := func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() }
			var used []string
			for range 2 {
				w := newWorkerCmd(t, "worker")
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				c, err := Start(ctx, ClientConfig{Cmd: w.cmd, SocketDir: dir, Warn: warn})
				cancel()
				if err != nil {
					t.Fatalf("Start with an unbindable socket dir: %v", err)
				}
				used = append(used, c.socket.dir)
				c.Kill()
			}
			if len(said) != 1 || !strings.Contains(said[0], dir) || !strings.Contains(said[0], "cannot hold a Unix socket (function not implemented)") {
				t.Fatalf("told %q; want one note naming %s and what failed", said, dir)
			}
			for _, u := range used {
				switch {
				case u == dir:
					t.Errorf("a worker's socket went in %s", dir)
				case runtime && u != filepath.Join(rt, "ink", "run"):
					t.Errorf("a worker's socket went in %s, not in $XDG_RUNTIME_DIR/ink/run", u)
				case !runtime && dirExists(u):
					t.Errorf("the private temp dir %s outlived its worker", u)
				}
			}
		})
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
