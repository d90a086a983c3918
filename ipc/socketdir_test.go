package ipc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			base, err := prepareSocketBase(dir)
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

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
