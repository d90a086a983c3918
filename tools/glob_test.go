package tools

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		rel     string
		want    bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/ink/main.go", true}, // base name
		{"*.go", "main.gox", false},
		{"cmd/*.go", "cmd/main.go", true},
		{"cmd/*.go", "cmd/ink/main.go", false},
		{"cmd/**/*.go", "cmd/main.go", true},
		{"cmd/**/*.go", "cmd/ink/deep/main.go", true},
		{"cmd/**/*.go", "pkg/cmd/main.go", false},
		{"**/testdata/**", "a/testdata/x/y.txt", true},
		{"**", "anything/at/all", true},
		{"./src/*.ts", "src/a.ts", true},
		{"*.{ts,tsx}", "web/App.tsx", true},
		{"*.{ts,tsx}", "web/App.jsx", false},
		{"{cmd,pkg}/**/*_test.go", "pkg/x/y_test.go", true},
		{"a{b,c{d,e}}f", "acef", true},
		{"a{b,c{d,e}}f", "acf", false},
		{"file?.txt", "file1.txt", true},
		{"[ab].txt", "c.txt", false},
		{"\\{x\\}.txt", "{x}.txt", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+" "+tc.rel, func(t *testing.T) {
			t.Parallel()
			g, err := compileGlob(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.matchBaseOrPath(tc.rel); got != tc.want {
				t.Fatalf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pattern, want string }{
		{"", "empty"},
		{"[", "malformed"},
		{"a/[x/b", "malformed"},
		{"{a,b", "{ without a matching }"},
		{"a}", "} without a matching {"},
		{strings.Repeat("{a,b}", 9), "more than 8"},
	} {
		if _, err := compileGlob(tc.pattern); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compileGlob(%q) = %v, want an error mentioning %q", tc.pattern, err, tc.want)
		}
	}
}

func TestCappedOutput(t *testing.T) {
	t.Parallel()
	t.Run("under the cap keeps everything", func(t *testing.T) {
		c := newCappedOutput(10)
		c.Write([]byte("abc"))
		c.Write([]byte("defg"))
		if c.String() != "abcdefg" || c.dropped() != 0 {
			t.Fatalf("got %q, dropped %d", c.String(), c.dropped())
		}
	})
	t.Run("over the cap keeps head and tail", func(t *testing.T) {
		c := newCappedOutput(10)
		for i := 0; i < 100; i++ {
			c.Write([]byte("0123456789"))
		}
		got := c.String()
		if !strings.HasPrefix(got, "01234\n[... 990 bytes of output dropped here") || !strings.HasSuffix(got, "]\n56789") {
			t.Fatalf("got %q", got)
		}
		if c.dropped() != 990 {
			t.Fatalf("dropped = %d", c.dropped())
		}
	})
	t.Run("a rune cut at a seam becomes a replacement character", func(t *testing.T) {
		c := newCappedOutput(4)
		c.Write([]byte("xé" + strings.Repeat("y", 10) + "éz"))
		if got := c.String(); !strings.HasPrefix(got, "x\uFFFD\n") || !strings.HasSuffix(got, "\n\uFFFDz") {
			t.Fatalf("got %q", got)
		}
	})
}
