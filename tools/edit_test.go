package tools

import (
	"os"
	"strings"
	"testing"
)

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string // initial content of f.txt
		read     bool   // read f.txt first
		args     map[string]any
		isError  bool
		want     []string // substrings of the content
		wantFile string   // content of f.txt afterwards
	}{
		{name: "replaces a unique match", file: "a\nb\nc\n", read: true,
			args: map[string]any{"oldText": "b\n", "newText": "B1\nB2\n"},
			want: []string{"edited f.txt: replaced 1 line at line 2 with 2 lines"}, wantFile: "a\nB1\nB2\nc\n"},
		{name: "empty newText deletes", file: "keep\ndrop\n", read: true,
			args: map[string]any{"oldText": "drop\n", "newText": ""},
			want: []string{"with nothing"}, wantFile: "keep\n"},
		{name: "not read first", file: "a\n",
			args:    map[string]any{"oldText": "a", "newText": "b"},
			isError: true, want: []string{"f.txt exists and you have not read it; read it first"}, wantFile: "a\n"},
		{name: "no match", file: "alpha\n", read: true,
			args:    map[string]any{"oldText": "beta", "newText": "gamma"},
			isError: true, want: []string{"oldText was not found in f.txt", "re-read the file"}, wantFile: "alpha\n"},
		{name: "several matches", file: "x = 1\nx = 1\nx = 1\n", read: true,
			args:    map[string]any{"oldText": "x = 1", "newText": "x = 2"},
			isError: true, want: []string{"oldText matches 3 places in f.txt", "more surrounding lines"}, wantFile: "x = 1\nx = 1\nx = 1\n"},
		{name: "overlapping matches are ambiguous", file: "aaa\n", read: true,
			args:    map[string]any{"oldText": "aa", "newText": "b"},
			isError: true, want: []string{"oldText matches 2 places in f.txt"}, wantFile: "aaa\n"},
		{name: "binary file", file: "\x00\x01bin",
			args:    map[string]any{"oldText": "bin", "newText": "txt"},
			isError: true, want: []string{"f.txt is a binary file", "use bash"}, wantFile: "\x00\x01bin"},
		{name: "CRLF file gets a hint", file: "a\r\nb\r\n", read: true,
			args:    map[string]any{"oldText": "a\nb", "newText": "c"},
			isError: true, want: []string{"CRLF"}, wantFile: "a\r\nb\r\n"},
		{name: "missing oldText", file: "a\n", read: true,
			args:    map[string]any{"newText": "b"},
			isError: true, want: []string{"oldText is required"}, wantFile: "a\n"},
		{name: "empty oldText", file: "a\n", read: true,
			args:    map[string]any{"oldText": "", "newText": "b"},
			isError: true, want: []string{"oldText is required"}, wantFile: "a\n"},
		{name: "missing newText", file: "a\n", read: true,
			args:    map[string]any{"oldText": "a"},
			isError: true, want: []string{"newText is required"}, wantFile: "a\n"},
		{name: "identical texts", file: "a\n", read: true,
			args:    map[string]any{"oldText": "a", "newText": "a"},
			isError: true, want: []string{"identical"}, wantFile: "a\n"},
		{name: "unknown argument", file: "a\n", read: true,
			args:    map[string]any{"oldText": "a", "newText": "b", "replaceAll": true},
			isError: true, want: []string{`unknown argument "replaceAll"; edit takes: path, oldText, newText`}, wantFile: "a\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			p := k.write(t, "f.txt", tc.file)
			if tc.read {
				wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
			}
			args := map[string]any{"path": "f.txt"}
			for key, v := range tc.args {
				args[key] = v
			}
			r := k.run(t, "edit", args)
			if r.IsError != tc.isError {
				t.Fatalf("isError = %v, want %v: %s", r.IsError, tc.isError, r.Content)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("content %q lacks %q", r.Content, w)
				}
			}
			if got := readFile(t, p); got != tc.wantFile {
				t.Errorf("file = %q, want %q", got, tc.wantFile)
			}
		})
	}
}

func TestEditPathErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "dir/x", "")
	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"missing file", "new.txt", "new.txt does not exist; use write to create a new file"},
		{"directory", "dir", "dir is a directory"},
		{"blank path", "", "path is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "edit", map[string]any{"path": tc.path, "oldText": "a", "newText": "b"}), tc.want)
		})
	}
	if _, err := os.Stat(k.path("new.txt")); err == nil {
		t.Fatal("edit created a missing file")
	}
}

// Consecutive edits need no re-read: the tracker learns the agent's own
// changes. An external change is refused until the agent reads again.
func TestEditReReadRule(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "f.txt", "one\ntwo\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "f.txt", "oldText": "one", "newText": "ONE"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "f.txt", "oldText": "two", "newText": "TWO"}))

	writeFile(t, p, "ONE\nTWO\nthree (added elsewhere)\n")
	wantError(t, k.run(t, "edit", map[string]any{"path": "f.txt", "oldText": "ONE", "newText": "1"}),
		"f.txt changed since you last read it; re-read it first")
	if got := readFile(t, p); got != "ONE\nTWO\nthree (added elsewhere)\n" {
		t.Fatalf("refused edit changed the file: %q", got)
	}

	wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt", "offset": 3}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "f.txt", "oldText": "ONE", "newText": "1"}))
	if got := readFile(t, p); got != "1\nTWO\nthree (added elsewhere)\n" {
		t.Fatalf("file = %q", got)
	}
}

// A second agent (its own tracker) must read before it edits, even after
// the first agent did.
func TestEditTrackerIsPerAgent(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "f.txt", "a\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "f.txt"}))
	other := builtins(t, k.env)
	edit, _ := Select(other, []string{"edit"})
	r := edit[0].Run(t.Context(), rawArgs(t, map[string]any{"path": "f.txt", "oldText": "a", "newText": "b"}))
	wantError(t, r, "you have not read it")
}

func TestEditPreservesMode(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	wantOK(t, k.run(t, "read", map[string]any{"path": "run.sh"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "run.sh", "oldText": "hi", "newText": "ho"}))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode = %v, want 0751", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(k.root)
	if len(entries) != 1 {
		t.Fatalf("temporary files left beside the edited file: %v", entries)
	}
}

// Editing through a symlink inside the root changes the target and keeps
// the link.
func TestEditThroughSymlinkInsideRoot(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	target := k.write(t, "real.txt", "v1\n")
	if err := os.Symlink("real.txt", k.path("link.txt")); err != nil {
		t.Fatal(err)
	}
	wantOK(t, k.run(t, "read", map[string]any{"path": "link.txt"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "link.txt", "oldText": "v1", "newText": "v2"}))
	if got := readFile(t, target); got != "v2\n" {
		t.Fatalf("target = %q", got)
	}
	if fi, err := os.Lstat(k.path("link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.txt is no longer a symlink: %v", err)
	}
}
