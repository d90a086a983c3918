package tools

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.ReadMaxLines = 4 })
	k.write(t, "abc.txt", "alpha\nbeta\ngamma\n")
	k.write(t, "noeol.txt", "one\ntwo")
	k.write(t, "crlf.txt", "one\r\ntwo\r\n")
	k.write(t, "ten.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
	k.write(t, "empty.txt", "")
	k.write(t, "long.txt", strings.Repeat("é", 1500)+"\n")
	k.write(t, "sub/deep.txt", "deep\n")
	tests := []struct {
		name string
		args any
		want string
	}{
		{"whole file, numbered", map[string]any{"path": "abc.txt"},
			"     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{"absolute path inside the root", map[string]any{"path": k.path("abc.txt")},
			"     1\talpha\n     2\tbeta\n     3\tgamma\n"},
		{"offset and limit", map[string]any{"path": "abc.txt", "offset": 2, "limit": 1},
			"     2\tbeta\n[showed lines 2-2 of 3; continue with offset=3 to read more]"},
		{"offset to the end", map[string]any{"path": "abc.txt", "offset": 3},
			"     3\tgamma\n"},
		{"last line without newline", map[string]any{"path": "noeol.txt"},
			"     1\tone\n     2\ttwo\n"},
		{"CRLF line endings are not shown", map[string]any{"path": "crlf.txt"},
			"     1\tone\n     2\ttwo\n"},
		{"default line limit with a note", map[string]any{"path": "ten.txt"},
			"     1\t1\n     2\t2\n     3\t3\n     4\t4\n[showed lines 1-4 of 10; continue with offset=5 to read more]"},
		{"empty file", map[string]any{"path": "empty.txt"}, "(empty.txt is empty)"},
		{"nested path", map[string]any{"path": "sub/../sub/deep.txt"}, "     1\tdeep\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.run(t, "read", tc.args)
			wantOK(t, r)
			if r.Content != tc.want {
				t.Fatalf("content:\n%q\nwant:\n%q", r.Content, tc.want)
			}
		})
	}
	k.write(t, "huge-line.txt", strings.Repeat("a", 1<<20))
	t.Run("a huge line without newline is clipped", func(t *testing.T) {
		t.Parallel()
		r := k.run(t, "read", map[string]any{"path": "huge-line.txt"})
		wantOK(t, r)
		if want := "     1\t" + strings.Repeat("a", 2000) + "… [line truncated: 1048576 bytes]\n"; r.Content != want {
			t.Fatalf("content ends %q", r.Content[len(r.Content)-60:])
		}
	})
	t.Run("long line is clipped on a rune boundary", func(t *testing.T) {
		t.Parallel()
		r := k.run(t, "read", map[string]any{"path": "long.txt"})
		wantOK(t, r)
		if !strings.Contains(r.Content, "… [line truncated: 3000 bytes]") || strings.ContainsRune(r.Content, '\uFFFD') {
			t.Fatalf("content: %q", r.Content[len(r.Content)-80:])
		}
	})
}

func TestReadByteCap(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.ReadMaxBytes = 100 })
	k.write(t, "big.txt", strings.Repeat("0123456789012345678\n", 50))
	r := k.run(t, "read", map[string]any{"path": "big.txt"})
	wantOK(t, r)
	lines := strings.Count(r.Content, "\t0123456789012345678\n")
	if lines != 3 {
		t.Fatalf("showed %d lines under a 100-byte cap, want 3:\n%s", lines, r.Content)
	}
	if !strings.HasSuffix(r.Content, "[output capped at 100 bytes: showed lines 1-3 of 50; continue with offset=4]") {
		t.Fatalf("missing cap note:\n%s", r.Content)
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, "abc.txt", "alpha\nbeta\n")
	k.write(t, "bin.dat", "GIF89a\x00\x01\x02binary")
	k.write(t, "dir/x", "")
	tests := []struct {
		name string
		args any
		want []string
	}{
		{"missing path", `{}`, []string{"path is required"}},
		{"blank path", map[string]any{"path": " "}, []string{"path is required"}},
		{"no such file", map[string]any{"path": "nope.txt"}, []string{"nope.txt does not exist; check the path with ls or find"}},
		{"directory", map[string]any{"path": "dir"}, []string{"dir is a directory; use ls"}},
		{"binary file", map[string]any{"path": "bin.dat"}, []string{"bin.dat is a binary file"}},
		{"offset zero", map[string]any{"path": "abc.txt", "offset": 0}, []string{"offset must be 1 or more"}},
		{"negative limit", map[string]any{"path": "abc.txt", "limit": -1}, []string{"limit must be 1 or more"}},
		{"offset past the end", map[string]any{"path": "abc.txt", "offset": 5}, []string{"offset 5 is past the end of abc.txt, which has 2 lines"}},
		{"offset as a string", `{"path":"abc.txt","offset":"2"}`, []string{`"offset" must be a whole number`}},
		{"fractional limit", `{"path":"abc.txt","limit":1.5}`, []string{`"limit" must be a whole number`}},
		{"unknown argument", `{"file_path":"abc.txt"}`, []string{`unknown argument "file_path"; read takes: path, offset, limit`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, k.run(t, "read", tc.args), tc.want...)
		})
	}
}
