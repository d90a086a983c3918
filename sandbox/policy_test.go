package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// Not parallel: it sets HOME and XDG_CACHE_HOME.
func TestWritableDirs(t *testing.T) {
	d := newDirs(t)
	extra := filepath.Join(d.sibling, "extra")
	tests := []struct {
		name    string
		p       sandbox.Policy
		want    []string
		wantErr string
	}{
		{name: "read-only writes its temp dir only",
			p:    sandbox.Policy{Mode: sandbox.ReadOnly, TempDir: d.tmp, Root: d.root, Writable: []string{extra}},
			want: []string{d.tmp}},
		{name: "workspace-write adds root, cache and extras, once each",
			p:    sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root, Writable: []string{extra, d.root + "/", extra}},
			want: []string{d.tmp, d.root, d.cache, extra}},
		{name: "no temp dir", p: sandbox.Policy{Mode: sandbox.ReadOnly}, wantErr: "private temp dir"},
		{name: "relative root", p: sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: "root"}, wantErr: `root "root" is not an absolute path`},
		{name: "relative extra", p: sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: d.tmp, Root: d.root, Writable: []string{"x"}}, wantErr: `writable directory "x"`},
		{name: "unconfined", p: sandbox.Policy{Mode: sandbox.DangerFullAccess, TempDir: d.tmp}, wantErr: "confines nothing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.WritableDirs()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("WritableDirs = %v, %v; want error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("WritableDirs = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if fi, err := os.Stat(d.cache); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the missing cache dir was not created 0700: %v %v", fi, err)
	}
}

func TestCheckWritable(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "dir")
	file := filepath.Join(base, "file")
	link := filepath.Join(base, "link")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: dir, want: dir},
		{in: link, want: dir},
		{in: "", wantErr: "writable directory is empty"},
		{in: "build/out", wantErr: `writable directory "build/out" is not an absolute path; give it in full`},
		{in: filepath.Join(base, "missing"), wantErr: "does not exist; create it first or leave it out"},
		{in: file, wantErr: "is not a directory"},
	}
	for _, tc := range tests {
		got, err := sandbox.CheckWritable(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CheckWritable(%q) = %q, %v; want error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CheckWritable(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
