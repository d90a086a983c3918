package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
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
		{"[{]x.txt", "{x.txt", true},
		{"{a,b}/**/{c,d}.go", "b/x/y/d.go", true},
		{"{a/**,b}/x", "a/p/q/x", true},
		{"src/", "src", true},
		{strings.Repeat("{a,b}", 7), strings.Repeat("b", 7), true},
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
		{strings.Repeat("{a,b}", 8), "more than 128 alternatives"},
		{"{a,b,c,d,e,f,g,h}/{a,b,c,d,e,f,g,h}/{a,b,c}", "more than 128 alternatives"},
		{"{a,{b,{c,{d,e}}}}/" + strings.Repeat("{x,y}", 6), "more than 128 alternatives"},
		{strings.Repeat("a", 513), "more than the 512 allowed"},
		{"a/{b,[c}", "malformed"},
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

// deepPath is the 41-level path of the pathological glob case.
var deepPath = strings.Repeat("a/", 40) + "c"

// pathologicalGlob has ten "**/a/" segments and a last name that never
// matches deepPath: a naive matcher tries every way of sharing the path
// among the ten ** (about 10^10 ways).
var pathologicalGlob = strings.Repeat("**/a/", 10) + "b"

// runWithin runs a tool call in the background and fails the test if it
// has not answered by limit: a generous bound that a bounded matcher
// meets by orders of magnitude, and an exponential one misses.
func runWithin(t *testing.T, limit time.Duration, tl Tool, ctx context.Context, args any) Result {
	t.Helper()
	done := make(chan Result, 1)
	raw := rawArgs(t, args)
	go func() { done <- tl.Run(ctx, raw) }()
	select {
	case r := <-done:
		return r
	case <-time.After(limit):
		t.Fatalf("%s %s did not answer within %s", tl.Spec().Name, raw, limit)
		return Result{}
	}
}

func TestPathologicalGlobIsBounded(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, deepPath, "needle\n")
	const limit = 20 * time.Second
	g, err := compileGlob(pathologicalGlob)
	if err != nil {
		t.Fatal(err)
	}
	matched := make(chan bool, 1)
	go func() { matched <- g.matchBaseOrPath(deepPath) }()
	select {
	case m := <-matched:
		if m {
			t.Fatal("the pathological pattern matched a path ending in c")
		}
	case <-time.After(limit):
		t.Fatalf("one match of %q did not answer within %s", pathologicalGlob, limit)
	}

	r := runWithin(t, limit, k.tools["find"], t.Context(), map[string]any{"pattern": pathologicalGlob})
	if r.IsError || r.Content != `no files match "`+pathologicalGlob+`" in .` {
		t.Fatalf("find: %+v", r)
	}
	r = runWithin(t, limit, k.tools["grep"], t.Context(), map[string]any{"pattern": "needle", "glob": pathologicalGlob})
	if r.IsError || !strings.HasPrefix(r.Content, "no matches") {
		t.Fatalf("grep: %+v", r)
	}
	// The same shape that does match is found.
	matching := strings.Repeat("**/a/", 10) + "c"
	r = runWithin(t, limit, k.tools["find"], t.Context(), map[string]any{"pattern": matching})
	if r.IsError || r.Content != deepPath {
		t.Fatalf("find %s: %+v", matching, r)
	}
	r = runWithin(t, limit, k.tools["grep"], t.Context(), map[string]any{"pattern": "needle", "glob": matching})
	if r.IsError || r.Content != deepPath+":1: needle" {
		t.Fatalf("grep --glob %s: %+v", matching, r)
	}
}

// countdownCtx is a context that reports itself cancelled after its Err
// has been asked `left` times: it shows that a walk keeps checking ctx
// while it runs, not only when it starts.
type countdownCtx struct {
	context.Context
	mu    sync.Mutex
	left  int
	asked int
}

func (c *countdownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	if c.left <= 0 {
		return context.Canceled
	}
	c.left--
	return nil
}

func TestPathologicalGlobIsCancellable(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	k.write(t, deepPath, "needle\n")
	for i := 0; i < 20; i++ {
		k.write(t, fmt.Sprintf("wide/f%02d.txt", i), "needle\n")
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"find", map[string]any{"pattern": pathologicalGlob}},
		{"grep", map[string]any{"pattern": "needle", "glob": pathologicalGlob}},
	} {
		t.Run(tc.tool+" cancelled mid-walk", func(t *testing.T) {
			ctx := &countdownCtx{Context: context.Background(), left: 10}
			r := runWithin(t, 20*time.Second, k.tools[tc.tool], ctx, tc.args)
			wantError(t, r, tc.tool+": interrupted: context canceled")
			if ctx.asked < 11 {
				t.Fatalf("ctx was asked %d times; the walk did not keep checking it", ctx.asked)
			}
		})
		t.Run(tc.tool+" cancelled before", func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("stopped by the user"))
			r := runWithin(t, 20*time.Second, k.tools[tc.tool], ctx, tc.args)
			wantError(t, r, tc.tool+": interrupted: stopped by the user")
		})
	}
}

// dropped is how many bytes were written but not kept.
func (c *cappedOutput) dropped() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := int64(len(c.head) + min(len(c.tail), c.tailMax))
	return c.total - kept
}
