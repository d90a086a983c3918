package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every path tool refuses paths that leave the root: through "..", an
// absolute path, a symlinked directory or file, or a dangling link, and
// the refusal names the path and the root. Nothing outside changes.
func TestPathsStayInsideRoot(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	secret := filepath.Join(k.outside, "secret.txt")
	writeFile(t, secret, "SECRET\n")
	k.write(t, "inside.txt", "inside\n")
	for link, target := range map[string]string{
		"escape-dir":  k.outside,
		"escape-file": secret,
		"dangling":    filepath.Join(k.outside, "not-yet.txt"),
	} {
		if err := os.Symlink(target, k.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	escapes := []struct {
		name, path string
	}{
		{"dot-dot", "../outside/secret.txt"},
		{"dot-dot after a real directory", "sub/../../outside/secret.txt"},
		{"absolute", secret},
		{"symlinked directory", "escape-dir/secret.txt"},
		{"symlinked file", "escape-file"},
	}
	dirEscapes := []struct {
		name, path string
	}{
		{"dot-dot", ".."},
		{"absolute", k.outside},
		{"symlinked directory", "escape-dir"},
		{"root's parent by absolute path", filepath.Dir(k.root)},
	}
	calls := map[string]func(p string) map[string]any{
		"read": func(p string) map[string]any { return map[string]any{"path": p} },
		"edit": func(p string) map[string]any {
			return map[string]any{"path": p, "oldText": "SECRET", "newText": "owned"}
		},
		"write": func(p string) map[string]any { return map[string]any{"path": p, "content": "owned"} },
		"grep":  func(p string) map[string]any { return map[string]any{"pattern": "SECRET", "path": p} },
	}
	dirCalls := map[string]func(p string) map[string]any{
		"ls":   func(p string) map[string]any { return map[string]any{"path": p} },
		"find": func(p string) map[string]any { return map[string]any{"pattern": "*", "path": p} },
		"grep": func(p string) map[string]any { return map[string]any{"pattern": "SECRET", "path": p} },
	}
	check := func(t *testing.T, tool string, args map[string]any) {
		r := k.run(t, tool, args)
		wantError(t, r, "outside the root "+k.root, args["path"].(string))
		if strings.Contains(r.Content, "SECRET\n") || strings.Contains(r.Content, "secret.txt\n") {
			t.Fatalf("refusal leaked outside content: %s", r.Content)
		}
	}
	for tool, mk := range calls {
		for _, e := range escapes {
			t.Run(tool+"/"+e.name, func(t *testing.T) { check(t, tool, mk(e.path)) })
		}
	}
	for tool, mk := range dirCalls {
		for _, e := range dirEscapes {
			t.Run(tool+"/dir "+e.name, func(t *testing.T) { check(t, tool, mk(e.path)) })
		}
	}
	for _, tc := range []struct{ name, path string }{
		{"new file through a symlinked directory", "escape-dir/new.txt"},
		{"new file in a new directory through a link", "escape-dir/deep/new.txt"},
		{"dangling symlink", "dangling"},
		{"new file via dot-dot", "../outside/new.txt"},
	} {
		t.Run("write/"+tc.name, func(t *testing.T) {
			wantError(t, k.run(t, "write", map[string]any{"path": tc.path, "content": "owned"}), tc.path)
		})
	}
	if got := readFile(t, secret); got != "SECRET\n" {
		t.Fatalf("a file outside the root changed: %q", got)
	}
	entries, _ := os.ReadDir(k.outside)
	if len(entries) != 1 {
		t.Fatalf("files appeared outside the root: %v", entries)
	}
	// The dangling link's target was not created through the link.
	if _, err := os.Lstat(filepath.Join(k.outside, "not-yet.txt")); err == nil {
		t.Fatal("write followed a dangling link out of the root")
	}
}

// Walks list a link that leads outside but never descend through it.
func TestWalksDoNotFollowLinksOut(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	writeFile(t, filepath.Join(k.outside, "secret.txt"), "SECRET\n")
	k.write(t, "inside.txt", "not a secret\n")
	if err := os.Symlink(k.outside, k.path("escape-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(k.outside, "secret.txt"), k.path("escape-file")); err != nil {
		t.Fatal(err)
	}
	r := k.run(t, "grep", map[string]any{"pattern": "SECRET"})
	if r.IsError || r.Content != `no matches for "SECRET" in .` {
		t.Fatalf("grep walked out of the root: %+v", r)
	}
	r = k.run(t, "find", map[string]any{"pattern": "*secret*"})
	if r.IsError || r.Content != `no files match "*secret*" in .` {
		t.Fatalf("find walked out of the root: %+v", r)
	}
	r = k.run(t, "find", map[string]any{"pattern": "*"})
	wantOK(t, r)
	if r.Content != "escape-dir\nescape-file\ninside.txt" {
		t.Fatalf("find listing: %q", r.Content)
	}
}

// A cwd below the root resolves relative paths from there and may still
// reach the rest of the root.
func TestCwdBelowRoot(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "pkg/inner/x.txt", "x\n")
	k.write(t, "top.txt", "top\n")
	pool := builtins(t, Env{Root: k.root, Cwd: k.path("pkg"), LockDir: k.env.LockDir, SandboxExe: testExe})
	read, _ := Select(pool, []string{"read", "find", "bash"})
	if r := read[0].Run(t.Context(), rawArgs(t, map[string]any{"path": "inner/x.txt"})); r.IsError || r.Content != "     1\tx\n" {
		t.Fatalf("relative read from cwd: %+v", r)
	}
	if r := read[0].Run(t.Context(), rawArgs(t, map[string]any{"path": "../top.txt"})); r.IsError {
		t.Fatalf("dot-dot within the root refused: %s", r.Content)
	}
	if r := read[1].Run(t.Context(), rawArgs(t, map[string]any{"pattern": "*.txt", "path": ".."})); r.IsError || r.Content != "../top.txt\ninner/x.txt" {
		t.Fatalf("find above cwd: %+v", r)
	}
	if r := read[2].Run(t.Context(), rawArgs(t, map[string]any{"command": "pwd"})); r.Content != k.path("pkg")+"\n\n[exit code 0]" {
		t.Fatalf("bash cwd: %q", r.Content)
	}
}

func TestBuiltinsRejectsBadEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, "f")
	writeFile(t, file, "")
	other := t.TempDir()
	locks := filepath.Join(t.TempDir(), "locks")
	for _, tc := range []struct {
		name string
		env  Env
		want string
	}{
		{"empty root", Env{LockDir: locks}, "Root is empty"},
		{"relative root", Env{Root: "rel", LockDir: locks}, "not an absolute path"},
		{"missing root", Env{Root: filepath.Join(root, "nope"), LockDir: locks}, "root"},
		{"root is a file", Env{Root: file, LockDir: locks}, "not a directory"},
		{"cwd outside root", Env{Root: root, Cwd: other, LockDir: locks}, "outside Root"},
		{"relative cwd", Env{Root: root, Cwd: "x", LockDir: locks}, "not an absolute path"},
		{"relative lock dir", Env{Root: root, LockDir: "locks"}, "LockDir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Builtins(tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// A root given through a symlink is resolved once, so paths under the
// link's real target are inside.
func TestRootThroughSymlink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	writeFile(t, filepath.Join(real, "a.txt"), "a\n")
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	pool := builtins(t, Env{Root: link, LockDir: filepath.Join(base, "locks")})
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		if r := pool[0].Run(t.Context(), rawArgs(t, map[string]any{"path": p})); r.IsError {
			t.Errorf("read %s: %s", p, r.Content)
		}
	}
}

// Links that stay inside the root work, whether relative, absolute or
// through ".."; a link loop, a link that climbs out through "..", and a
// link to nothing get clear refusals; and every result names the path as
// the model gave it or as it resolved inside the root.
func TestLinksInsideRoot(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "pkg/real.txt", "real\n")
	links := map[string]string{
		"abs":       k.path("pkg"),       // absolute, inside
		"pkg/up":    "..",                // relative, to the root itself
		"pkg/again": "../pkg/real.txt",   // through ".." and back in
		"chain":     "pkg/again",         // a link to a link
		"loop1":     "loop2",             // a loop
		"loop2":     "loop1",             //
		"climb":     "pkg/../../outside", // out through ".."
		"nothing":   "missing.txt",       // dangling, inside
		"nodir":     "missing-dir",       // dangling directory link
	}
	for link, target := range links {
		if err := os.Symlink(target, k.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"abs/real.txt", "     1\treal\n"},
		{filepath.Join(k.root, "abs", "real.txt"), "     1\treal\n"},
		{"pkg/up/pkg/real.txt", "     1\treal\n"},
		{"pkg/again", "     1\treal\n"},
		{"chain", "     1\treal\n"},
	} {
		if r := k.run(t, "read", map[string]any{"path": tc.path}); r.IsError || r.Content != tc.want {
			t.Errorf("read %s: %+v", tc.path, r)
		}
	}
	wantError(t, k.run(t, "read", map[string]any{"path": "loop1"}), `path "loop1" goes through more than 40 symbolic links`)
	wantError(t, k.run(t, "read", map[string]any{"path": "climb/x"}), `path "climb/x" resolves to `+filepath.Join(k.outside, "x")+", which is outside the root "+k.root)
	wantError(t, k.run(t, "write", map[string]any{"path": "nothing", "content": "x"}), `path "nothing" goes through a symbolic link to something that does not exist`)
	wantError(t, k.run(t, "write", map[string]any{"path": "nodir/new.txt", "content": "x"}), `path "nodir/new.txt" goes through a symbolic link to something that does not exist`)
	for _, p := range []string{"missing.txt", "missing-dir"} {
		if _, err := os.Lstat(k.path(p)); err == nil {
			t.Errorf("a write through a dangling link created %s", p)
		}
	}
	// A write through an absolute link inside the root lands at the real
	// place, shown by its real path; the link stays a link.
	r := k.run(t, "write", map[string]any{"path": "abs/new.txt", "content": "n\n"})
	if r.IsError || r.Content != "wrote pkg/new.txt: new file, 2 bytes" {
		t.Fatalf("write through an absolute link: %+v", r)
	}
	if fi, err := os.Lstat(k.path("abs")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("abs is no longer a link: %v", err)
	}
	// find and grep list links but do not descend through them.
	r = k.run(t, "find", map[string]any{"pattern": "*.txt"})
	if r.IsError || r.Content != "pkg/new.txt\npkg/real.txt" {
		t.Fatalf("find: %+v", r)
	}
}

// Closing the tool set releases its root; a later call fails cleanly
// instead of reaching the disk by name.
func TestClosedToolSetFails(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "a\n")
	pool, closer, err := Builtins(Env{Root: root, LockDir: filepath.Join(t.TempDir(), "locks")})
	if err != nil {
		t.Fatal(err)
	}
	if r := pool[0].Run(t.Context(), rawArgs(t, map[string]any{"path": "a.txt"})); r.IsError {
		t.Fatalf("read before Close: %s", r.Content)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, tc := range []struct {
		i    int
		args map[string]any
	}{
		{0, map[string]any{"path": "a.txt"}},
		{5, map[string]any{"path": "b.txt", "content": "x"}},
	} {
		r := pool[tc.i].Run(t.Context(), rawArgs(t, tc.args))
		wantError(t, r, "closed")
	}
	if _, err := os.Stat(filepath.Join(root, "b.txt")); err == nil {
		t.Fatal("a write after Close created its file")
	}
}
