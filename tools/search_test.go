package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// searchTree lays out a small project with the things walks must skip.
func searchTree(t *testing.T, k *kit) {
	t.Helper()
	k.write(t, "a.go", "package a\n\nfunc Hello() {}\n")
	k.write(t, "sub/b.go", "package sub\n\nfunc hello() {}\n")
	k.write(t, "sub/c.txt", "Hello text\n")
	k.write(t, "sub/deeper/d.ts", "export const Hello = 1;\n")
	k.write(t, ".git/config", "Hello from git\n")
	k.write(t, "node_modules/x/index.js", "Hello from deps\n")
	k.write(t, "bin.dat", "Hello\x00binary\n")
	k.write(t, "empty/.keep", "")
	if err := os.Symlink("../a.go", k.path("sub/link.go")); err != nil {
		t.Fatal(err)
	}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	searchTree(t, k)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"walks the tree, skipping .git, node_modules, binaries and links", map[string]any{"pattern": "Hello"},
			"a.go:3: func Hello() {}\nsub/c.txt:1: Hello text\nsub/deeper/d.ts:1: export const Hello = 1;"},
		{"case-insensitive with a base-name glob", map[string]any{"pattern": "(?i)func hello", "glob": "*.go"},
			"a.go:3: func Hello() {}\nsub/b.go:3: func hello() {}"},
		{"glob with alternatives", map[string]any{"pattern": "Hello", "glob": "*.{ts,txt}"},
			"sub/c.txt:1: Hello text\nsub/deeper/d.ts:1: export const Hello = 1;"},
		{"glob on the relative path", map[string]any{"pattern": "Hello", "glob": "sub/**/*.ts"},
			"sub/deeper/d.ts:1: export const Hello = 1;"},
		{"one directory", map[string]any{"pattern": "Hello", "path": "sub"},
			"sub/c.txt:1: Hello text\nsub/deeper/d.ts:1: export const Hello = 1;"},
		{"one file", map[string]any{"pattern": "^package", "path": "sub/b.go"},
			"sub/b.go:1: package sub"},
		{"a file given through a link", map[string]any{"pattern": "^package", "path": "sub/link.go"},
			"a.go:1: package a"},
		{"inside a skipped directory when asked", map[string]any{"pattern": "Hello", "path": "node_modules"},
			"node_modules/x/index.js:1: Hello from deps"},
		{"no matches is not an error", map[string]any{"pattern": "Goodbye"},
			`no matches for "Goodbye" in .`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.run(t, "grep", tc.args)
			wantOK(t, r)
			if r.Content != tc.want {
				t.Fatalf("content:\n%s\nwant:\n%s", r.Content, tc.want)
			}
		})
	}
}

func TestGrepCap(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.GrepMaxMatches = 3 })
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	k.write(t, "many.txt", b.String())
	r := k.run(t, "grep", map[string]any{"pattern": "match"})
	wantOK(t, r)
	want := "many.txt:1: match 1\nmany.txt:2: match 2\nmany.txt:3: match 3\n[3 of 10 matches shown; 7 more not shown: narrow the pattern, path or glob]"
	if r.Content != want {
		t.Fatalf("content:\n%s\nwant:\n%s", r.Content, want)
	}
}

func TestGrepClipsLongLines(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "min.js", "var x=1;"+strings.Repeat("y", 5000)+"\n")
	r := k.run(t, "grep", map[string]any{"pattern": "var x"})
	wantOK(t, r)
	if want := "min.js:1: var x=1;" + strings.Repeat("y", 1992) + "… [line truncated: 5008 bytes]"; r.Content != want {
		t.Fatalf("content ends %q", r.Content[len(r.Content)-60:])
	}
}

func TestGrepErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	searchTree(t, k)
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"missing pattern", `{}`, "pattern is required"},
		{"bad regexp", map[string]any{"pattern": "func("}, `pattern "func(" is not a valid Go regular expression: missing closing ): ` + "`func(`"},
		{"bad glob", map[string]any{"pattern": "x", "glob": "[a"}, `glob pattern "[a" is malformed`},
		{"unbalanced braces", map[string]any{"pattern": "x", "glob": "*.{go"}, "{ without a matching }"},
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, "nope does not exist"},
		{"unknown argument", map[string]any{"pattern": "x", "-i": true}, `unknown argument "-i"; grep takes: pattern, path, glob`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "grep", tc.args), tc.want)
		})
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	searchTree(t, k)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"base name at any depth, links listed not followed", map[string]any{"pattern": "*.go"}, "a.go\nsub/b.go\nsub/link.go"},
		{"anchored double star", map[string]any{"pattern": "sub/**/*.ts"}, "sub/deeper/d.ts"},
		{"leading double star", map[string]any{"pattern": "**/*.txt"}, "sub/c.txt"},
		{"alternatives", map[string]any{"pattern": "*.{ts,txt}"}, "sub/c.txt\nsub/deeper/d.ts"},
		{"directories get a slash", map[string]any{"pattern": "deep*"}, "sub/deeper/"},
		{"hidden files are found", map[string]any{"pattern": ".keep"}, "empty/.keep"},
		{"under a path", map[string]any{"pattern": "*", "path": "sub/deeper"}, "sub/deeper/d.ts"},
		{"skips .git and node_modules", map[string]any{"pattern": "{config,index.js}"}, `no files match "{config,index.js}" in .`},
		{"no match is not an error", map[string]any{"pattern": "*.rs"}, `no files match "*.rs" in .`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.run(t, "find", tc.args)
			wantOK(t, r)
			if r.Content != tc.want {
				t.Fatalf("content:\n%s\nwant:\n%s", r.Content, tc.want)
			}
		})
	}
}

func TestFindCapAndErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.FindMaxResults = 2 })
	searchTree(t, k)
	r := k.run(t, "find", map[string]any{"pattern": "*"})
	wantOK(t, r)
	if !strings.HasPrefix(r.Content, "a.go\nbin.dat\n[2 of ") || !strings.HasSuffix(r.Content, "more not shown: narrow the pattern or path]") {
		t.Fatalf("content:\n%s", r.Content)
	}
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"missing pattern", `{}`, "pattern is required"},
		{"bad pattern", map[string]any{"pattern": "[x"}, "malformed"},
		{"path is a file", map[string]any{"pattern": "*", "path": "a.go"}, "a.go is a file, not a directory"},
		{"missing path", map[string]any{"pattern": "*", "path": "nope"}, "nope does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "find", tc.args), tc.want)
		})
	}
}

func TestLs(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	searchTree(t, k)
	k.write(t, "sub/.hidden", "")
	tests := []struct {
		name string
		args any
		want string
	}{
		{"root by default", `{}`, ".git/\na.go\nbin.dat\nempty/\nnode_modules/\nsub/"},
		{"a subdirectory, with links and hidden files", map[string]any{"path": "sub"}, ".hidden\nb.go\nc.txt\ndeeper/\nlink.go -> ../a.go"},
		{"absolute path", map[string]any{"path": k.path("sub/deeper")}, "d.ts"},
		{"dot-dot inside the root", map[string]any{"path": "sub/deeper/.."}, ".hidden\nb.go\nc.txt\ndeeper/\nlink.go -> ../a.go"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.run(t, "ls", tc.args)
			wantOK(t, r)
			if r.Content != tc.want {
				t.Fatalf("content:\n%s\nwant:\n%s", r.Content, tc.want)
			}
		})
	}
	k2 := newKit(t)
	if err := os.Mkdir(k2.path("void"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := k2.run(t, "ls", map[string]any{"path": "void"}); r.IsError || r.Content != "(void is an empty directory)" {
		t.Fatalf("empty directory: %+v", r)
	}
	wantError(t, k.run(t, "ls", map[string]any{"path": "a.go"}), "a.go is a file, not a directory; use read")
	wantError(t, k.run(t, "ls", map[string]any{"path": "nope"}), "nope does not exist")
	wantError(t, k.run(t, "ls", map[string]any{"dir": "sub"}), `unknown argument "dir"; ls takes: path`)
}

func TestLsCap(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.LsMaxEntries = 2 })
	for _, n := range []string{"a", "b", "c", "d"} {
		k.write(t, n, "")
	}
	r := k.run(t, "ls", `{}`)
	wantOK(t, r)
	if r.Content != "a\nb\n[2 of 4 entries shown; use find with a pattern to narrow]" {
		t.Fatalf("content:\n%s", r.Content)
	}
}

// Special files are refused rather than opened (a FIFO would block).
func TestSpecialFilesRefused(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	if err := unix.Mkfifo(k.path("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, k.run(t, "grep", map[string]any{"pattern": "x", "path": "pipe"}), "pipe is not a regular file or directory")
	wantError(t, k.run(t, "read", map[string]any{"path": "pipe"}), "pipe is not a regular file")
	wantError(t, k.run(t, "write", map[string]any{"path": "pipe", "content": "x"}), "pipe is not a regular file")
	wantError(t, k.run(t, "edit", map[string]any{"path": "pipe", "oldText": "a", "newText": "b"}), "pipe is not a regular file")
	// A walk passes it by.
	k.write(t, "a.txt", "x\n")
	if r := k.run(t, "grep", map[string]any{"pattern": "x"}); r.IsError || r.Content != "a.txt:1: x" {
		t.Fatalf("grep over a tree with a FIFO: %+v", r)
	}
}

func TestSearchHonoursCancel(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	searchTree(t, k)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped by the user"))
	wantError(t, k.runCtx(t, ctx, "grep", map[string]any{"pattern": "Hello"}), "grep: interrupted: stopped by the user")
	wantError(t, k.runCtx(t, ctx, "grep", map[string]any{"pattern": "Hello", "path": "a.go"}), "grep: interrupted: stopped by the user")
	wantError(t, k.runCtx(t, ctx, "find", map[string]any{"pattern": "*"}), "find: interrupted: stopped by the user")
}
