package lease

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Every case builds a lease file ink must refuse. Root bypasses permission
// bits, so "cannot be used" is made real with file types, not chmod.
func TestBadLeaseFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		make  func(t *testing.T, lease string)
		want  []string
		check func(t *testing.T, lease string)
	}{
		{"symlink to a regular file", func(t *testing.T, lease string) {
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, lease); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a symlink", "rm "}, isSymlink},
		{"dangling symlink", func(t *testing.T, lease string) {
			if err := os.Symlink(filepath.Join(t.TempDir(), "nowhere"), lease); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a symlink", "rm "}, func(t *testing.T, lease string) {
			isSymlink(t, lease)
			target, _ := os.Readlink(lease)
			if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
				t.Error("the symlink's target was created")
			}
		}},
		{"directory", func(t *testing.T, lease string) {
			if err := os.Mkdir(lease, 0o700); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a directory", "move the directory"}, func(t *testing.T, lease string) {
			if fi, err := os.Lstat(lease); err != nil || !fi.IsDir() {
				t.Errorf("directory changed: %v", err)
			}
		}},
		{"named pipe (cannot be read as a lock file)", func(t *testing.T, lease string) {
			if err := syscall.Mkfifo(lease, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a named pipe (FIFO)", "rm "}, func(t *testing.T, lease string) {
			if fi, err := os.Lstat(lease); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("FIFO changed: %v", err)
			}
		}},
		{"socket (cannot be opened at all)", func(t *testing.T, lease string) {
			// Unix socket paths are short; bind in a short dir and move it.
			dir, err := os.MkdirTemp("", "lsock")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "s")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
			if err := os.Rename(sock, lease); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a socket", "rm "}, func(t *testing.T, lease string) {
			if fi, err := os.Lstat(lease); err != nil || fi.Mode()&fs.ModeSocket == 0 {
				t.Errorf("socket changed: %v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := transcriptPath(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			lease := FilePath(path)
			c.make(t, lease)

			_, err := Acquire(path, Owner{AttemptID: "a"})
			assertBadLeaseFile(t, "Acquire", err, lease, c.want)
			_, err = Probe(path)
			assertBadLeaseFile(t, "Probe", err, lease, c.want)
			_, err = Break(t.Context(), path, BreakOptions{Force: true})
			assertBadLeaseFile(t, "Break", err, lease, c.want)

			c.check(t, lease)
			if _, err := os.Lstat(MetaPath(path)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("metadata written beside a bad lease file: %v", err)
			}
		})
	}
}

func assertBadLeaseFile(t *testing.T, op string, err error, lease string, want []string) {
	t.Helper()
	if !errors.Is(err, ErrBadLeaseFile) || errors.Is(err, ErrBusy) {
		t.Fatalf("%s = %v, want an ErrBadLeaseFile error", op, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, lease) {
		t.Errorf("%s error %q does not name %s", op, msg, lease)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s error %q lacks %q", op, msg, w)
		}
	}
}

func isSymlink(t *testing.T, lease string) {
	t.Helper()
	if fi, err := os.Lstat(lease); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("symlink changed: %v", err)
	}
}

func TestSymlinkedMetadataIsRefused(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(target, []byte(`{"epoch":7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, MetaPath(path)); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(path, Owner{AttemptID: "a"})
	if err == nil || !strings.Contains(err.Error(), "is a symlink") || !strings.Contains(err.Error(), MetaPath(path)) {
		t.Fatalf("Acquire with symlinked metadata = %v", err)
	}
	if data, _ := os.ReadFile(target); string(data) != `{"epoch":7}` {
		t.Errorf("symlink target was written: %q", data)
	}
}
