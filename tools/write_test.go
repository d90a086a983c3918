package tools

import (
	"os"
	"testing"
)

func TestWriteNewFiles(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	for _, tc := range []struct {
		name, path, content, want string
	}{
		{"new file", "new.txt", "hello\n", "wrote new.txt: new file, 6 bytes"},
		{"creates parent directories", "a/b/c/deep.txt", "x", "wrote a/b/c/deep.txt: new file, 1 bytes"},
		{"empty content", "empty.txt", "", "wrote empty.txt: new file, 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.run(t, "write", map[string]any{"path": tc.path, "content": tc.content})
			wantOK(t, r)
			if r.Content != tc.want {
				t.Errorf("content = %q, want %q", r.Content, tc.want)
			}
			if got := readFile(t, k.path(tc.path)); got != tc.content {
				t.Errorf("file = %q, want %q", got, tc.content)
			}
			fi, _ := os.Stat(k.path(tc.path))
			if fi.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
			}
		})
	}
}

func TestWriteOverwriteRules(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "f.txt", "original\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}

	wantError(t, k.run(t, "write", map[string]any{"path": "f.txt", "content": "clobber"}),
		"f.txt exists and you have not read it; read it first")
	if got := readFile(t, p); got != "original\n" {
		t.Fatalf("refused write changed the file: %q", got)
	}

	wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
	writeFile(t, p, "changed elsewhere\n")
	wantError(t, k.run(t, "write", map[string]any{"path": "f.txt", "content": "mine"}),
		"f.txt changed since you last read it; re-read it first")
	if got := readFile(t, p); got != "changed elsewhere\n" {
		t.Fatalf("refused write changed the file: %q", got)
	}

	wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
	r := k.run(t, "write", map[string]any{"path": "f.txt", "content": "mine\n"})
	wantOK(t, r)
	if r.Content != "wrote f.txt: replaced 18 bytes with 5 bytes" {
		t.Errorf("content = %q", r.Content)
	}
	// Its own write counts as seen: writing again needs no re-read.
	wantOK(t, k.run(t, "write", map[string]any{"path": "f.txt", "content": "mine again\n"}))
	if got := readFile(t, p); got != "mine again\n" {
		t.Fatalf("file = %q", got)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want the original 0600", fi.Mode().Perm())
	}
	// A file created by write can be edited at once.
	wantOK(t, k.run(t, "write", map[string]any{"path": "g.txt", "content": "a\n"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "g.txt", "oldText": "a", "newText": "b"}))
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "dir/x", "")
	k.write(t, "file", "")
	k.write(t, "bin.dat", "\x00\x01")
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"missing content", map[string]any{"path": "a.txt"}, "content is required"},
		{"binary file", map[string]any{"path": "bin.dat", "content": "x"}, "bin.dat is a binary file"},
		{"missing path", map[string]any{"content": "x"}, "path is required"},
		{"directory", map[string]any{"path": "dir", "content": "x"}, "dir is a directory"},
		{"parent is a file", map[string]any{"path": "file/sub.txt", "content": "x"}, "file/sub.txt"},
		{"content not a string", `{"path":"a.txt","content":42}`, `"content" must be a string, got number`},
		{"unknown argument", `{"path":"a.txt","content":"x","append":true}`, `unknown argument "append"; write takes: path, content`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "write", tc.args), tc.want)
		})
	}
	if _, err := os.Stat(k.path("a.txt")); err == nil {
		t.Fatal("a failed write created a.txt")
	}
}
