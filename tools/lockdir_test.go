package tools

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// privateTemp is a fresh directory of this user's with mode 0700.
func privateTemp(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// wantPrivateDir fails unless dir is a directory of uid's with mode 0700.
func wantPrivateDir(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: mode %v, want a 0700 directory", dir, fi.Mode())
	}
}

func TestDefaultLockDirChoice(t *testing.T) {
	t.Parallel()
	uid := os.Getuid()
	runtime := privateTemp(t)
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	runUser := t.TempDir() // holds <uid> only where a test makes it
	temp := t.TempDir()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		uid     int
		runUser string
		want    string
	}{
		{"XDG_RUNTIME_DIR", map[string]string{"XDG_RUNTIME_DIR": runtime}, uid, runUser,
			filepath.Join(runtime, "ink", "locks")},
		{"no XDG_RUNTIME_DIR falls back to the temp dir", nil, uid, runUser,
			filepath.Join(temp, "ink-"+itoa(uid), "locks")},
		{"relative XDG_RUNTIME_DIR is ignored", map[string]string{"XDG_RUNTIME_DIR": "run"}, uid, runUser,
			filepath.Join(temp, "ink-"+itoa(uid), "locks")},
		{"XDG_RUNTIME_DIR open to others is ignored", map[string]string{"XDG_RUNTIME_DIR": open}, uid, runUser,
			filepath.Join(temp, "ink-"+itoa(uid), "locks")},
		{"missing XDG_RUNTIME_DIR is ignored", map[string]string{"XDG_RUNTIME_DIR": filepath.Join(runtime, "gone")}, uid, runUser,
			filepath.Join(temp, "ink-"+itoa(uid), "locks")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := defaultLockDir(envOf(tc.env), tc.uid, tc.runUser, temp)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("lock dir = %s, want %s", got, tc.want)
			}
			wantPrivateDir(t, got)
			wantPrivateDir(t, filepath.Dir(got))
		})
	}
}

// Without XDG_RUNTIME_DIR, /run/user/<uid> is used when it is private, so
// a process started without the variable meets the others there.
func TestDefaultLockDirRunUser(t *testing.T) {
	t.Parallel()
	uid := os.Getuid()
	runUser := t.TempDir()
	mine := filepath.Join(runUser, itoa(uid))
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := defaultLockDir(envOf(nil), uid, runUser, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(mine, "ink", "locks"); got != want {
		t.Fatalf("lock dir = %s, want %s", got, want)
	}
}

// The temp fallback is refused, with a message saying how to fix it, when
// it is not a private directory of this user's; nothing is changed there.
func TestDefaultLockDirRefusesForeignTempDir(t *testing.T) {
	t.Parallel()
	uid := os.Getuid()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"open to others", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, []string{"has mode 0777", "chmod 700"}},
		{"a symbolic link", func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), dir); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a symbolic link", "remove it"}},
		{"a file", func(t *testing.T, dir string) {
			writeFile(t, dir, "")
		}, []string{"is not a directory", "remove it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			temp := t.TempDir()
			dir := filepath.Join(temp, "ink-"+itoa(uid))
			tc.setup(t, dir)
			before, _ := os.Lstat(dir)
			_, err := defaultLockDir(envOf(nil), uid, "", temp)
			if err == nil {
				t.Fatal("a foreign lock directory was accepted")
			}
			for _, w := range append(tc.want, "no place for edit locks", dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			after, _ := os.Lstat(dir)
			if before.Mode() != after.Mode() {
				t.Fatalf("mode changed from %v to %v", before.Mode(), after.Mode())
			}
		})
	}
	// Owned by someone else: the test asks as another uid about
	// directories this process made, which belong to someone else as far
	// as that uid is concerned. A private XDG_RUNTIME_DIR of someone
	// else's is passed over for the temp dir, which is refused.
	t.Run("owned by another user", func(t *testing.T) {
		t.Parallel()
		temp := t.TempDir()
		other := uid + 1
		dir := filepath.Join(temp, "ink-"+itoa(other))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		runtime := privateTemp(t)
		_, err := defaultLockDir(envOf(map[string]string{"XDG_RUNTIME_DIR": runtime}), other, "", temp)
		want := dir + " belongs to uid " + itoa(uid) + ", not to you (uid " + itoa(other) + ")"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want one saying %q", err, want)
		}
		if _, err := os.Stat(filepath.Join(runtime, "ink")); err == nil {
			t.Fatal("someone else's XDG_RUNTIME_DIR was written to")
		}
	})
}

// A tool set without a LockDir override keeps its locks in the default
// place, and an edit there works.
func TestEditUsesDefaultLockDir(t *testing.T) {
	runtime := privateTemp(t)
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	k := newKit(t, func(e *Env) { e.LockDir = "" })
	p := k.write(t, "a.txt", "one\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "a.txt"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"}))
	if _, err := os.Stat(lockPath(filepath.Join(runtime, "ink", "locks"), p)); err != nil {
		t.Fatalf("no lock file under XDG_RUNTIME_DIR/ink/locks: %v", err)
	}
}

// Where no lock directory can be had, edit and write refuse with the
// reason and leave the file alone.
func TestEditWithoutLockDirRefuses(t *testing.T) {
	t.Parallel()
	temp := t.TempDir()
	dir := filepath.Join(temp, "ink-"+itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	k := newKit(t, func(e *Env) {
		e.LockDir = ""
		e.locks = &lockDirCache{find: func() (string, error) {
			return defaultLockDir(envOf(nil), os.Getuid(), "", temp)
		}}
	})
	p := k.write(t, "a.txt", "one\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "a.txt"}))
	wantError(t, k.run(t, "edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"}),
		"edit: a.txt: no place for edit locks", "chmod 700 "+dir)
	wantError(t, k.run(t, "write", map[string]any{"path": "a.txt", "content": "x"}), "write: a.txt: no place for edit locks")
	wantError(t, k.run(t, "write", map[string]any{"path": "new.txt", "content": "x"}), "write: new.txt: no place for edit locks")
	if got := readFile(t, p); got != "one\n" {
		t.Fatalf("file changed to %q", got)
	}
	if _, err := os.Lstat(k.path("new.txt")); err == nil {
		t.Fatal("a refused write created its file")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
