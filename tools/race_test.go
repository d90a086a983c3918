package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// swapper exchanges two names inside the root, a directory and a symbolic
// link to the outside directory, as fast as it can, so that "d" keeps
// flipping between the two while tools use paths through it.
type swapper struct {
	a, b  string
	stop  chan struct{}
	done  chan struct{}
	swaps atomic.Int64
}

func startSwapper(t *testing.T, a, b string) *swapper {
	t.Helper()
	s := &swapper{a: a, b: b, stop: make(chan struct{}), done: make(chan struct{})}
	exchange := func() error {
		return unix.Renameat2(unix.AT_FDCWD, s.a, unix.AT_FDCWD, s.b, unix.RENAME_EXCHANGE)
	}
	if err := exchange(); err != nil {
		// No atomic exchange on this file system: swap in three renames.
		tmp := s.a + ".swap"
		exchange = func() error {
			if err := os.Rename(s.a, tmp); err != nil {
				return err
			}
			if err := os.Rename(s.b, s.a); err != nil {
				return err
			}
			return os.Rename(tmp, s.b)
		}
		if err := exchange(); err != nil {
			t.Fatalf("cannot swap %s and %s: %v", a, b, err)
		}
	}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if err := exchange(); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			s.swaps.Add(1)
		}
	}()
	t.Cleanup(s.halt)
	return s
}

// halt stops the swapper and waits for it; it may be called twice.
func (s *swapper) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// snapshot lists every file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		} else if !d.IsDir() {
			out[p] = "<" + d.Type().String() + ">"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// snapshotDiff describes how after differs from before (at most ten
// paths), or returns "".
func snapshotDiff(before, after map[string]string) string {
	var lines []string
	for p, a := range after {
		if b, ok := before[p]; !ok {
			lines = append(lines, fmt.Sprintf("new %s: %q", p, a))
		} else if a != b {
			lines = append(lines, fmt.Sprintf("changed %s: %q -> %q", p, b, a))
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			lines = append(lines, "gone "+p)
		}
	}
	slices.Sort(lines)
	if n := len(lines); n > 10 {
		lines = append(lines[:10], fmt.Sprintf("... and %d more", n-10))
	}
	return strings.Join(lines, "\n")
}

// While "d" flips between a directory inside the root and a link to a
// directory outside it, at least 20,000 write, edit, read, ls, find and
// grep calls through "d" never put a byte outside the root, never change
// a file there, and never show its content or names.
func TestSwapRaceNeverEscapes(t *testing.T) {
	t.Parallel()
	k := newKit(t, func(e *Env) { e.testNoSync = true })
	// Outside: files whose names and content must never show, and an
	// f.txt identical to the one inside, so only confinement (not the
	// re-read check) stops an edit landing on it.
	writeFile(t, filepath.Join(k.outside, "f.txt"), "v0\n")
	writeFile(t, filepath.Join(k.outside, "g.txt"), "OUTSIDE\n")
	writeFile(t, filepath.Join(k.outside, "secret-name.txt"), "OUTSIDE\n")
	before := snapshot(t, k.outside)
	k.write(t, "d/f.txt", "v0\n")
	k.write(t, "d/g.txt", "inside\n")
	if err := os.Symlink(k.outside, k.path("l")); err != nil {
		t.Fatal(err)
	}
	sw := startSwapper(t, k.path("d"), k.path("l"))

	const perWorker = 10000
	var tries atomic.Int64
	var mu sync.Mutex
	var leaks []string
	leak := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(leaks) < 10 {
			leaks = append(leaks, fmt.Sprintf(format, a...))
		}
	}
	call := func(tl map[string]Tool, name string, args string) Result {
		tries.Add(1)
		r := tl[name].Run(context.Background(), []byte(args))
		if strings.Contains(r.Content, "OUTSIDE") || strings.Contains(r.Content, "secret-name") {
			leak("%s %s showed outside content: %q", name, args, r.Content)
		}
		return r
	}
	// Each worker is its own agent (its own tool set and read tracker).
	agent := func() map[string]Tool {
		m := map[string]Tool{}
		for _, tl := range builtins(t, k.env) {
			m[tl.Spec().Name] = tl
		}
		return m
	}
	var wg sync.WaitGroup
	wg.Go(func() { // write: new files through d
		tl := agent()
		for i := 0; i < perWorker; i++ {
			call(tl, "write", fmt.Sprintf(`{"path":"d/new-%d.txt","content":"written %d\n"}`, i, i))
		}
	})
	wg.Go(func() { // read then edit d/f.txt, toggling v0 and v1
		tl := agent()
		for i := 0; i < perWorker/2; i++ {
			r := call(tl, "read", `{"path":"d/f.txt"}`)
			switch {
			case strings.Contains(r.Content, "\tv0"):
				call(tl, "edit", `{"path":"d/f.txt","oldText":"v0","newText":"v1"}`)
			case strings.Contains(r.Content, "\tv1"):
				call(tl, "edit", `{"path":"d/f.txt","oldText":"v1","newText":"v0"}`)
			}
		}
	})
	wg.Go(func() { // the read-only tools through d
		tl := agent()
		for i := 0; i < perWorker/4; i++ {
			call(tl, "read", `{"path":"d/g.txt"}`)
			call(tl, "ls", `{"path":"d"}`)
			call(tl, "grep", `{"pattern":"OUTS[I]DE|inside","path":"d"}`)
			call(tl, "find", `{"pattern":"*","path":"d"}`)
		}
	})
	wg.Wait()
	sw.halt()
	t.Logf("%d tool calls during %d swaps", tries.Load(), sw.swaps.Load())
	if n := tries.Load(); n < 20000 {
		t.Fatalf("only %d tool calls ran; the race needs at least 20000", n)
	}
	if sw.swaps.Load() < 1000 {
		t.Fatalf("only %d swaps happened; the race was not exercised", sw.swaps.Load())
	}
	for _, l := range leaks {
		t.Error(l)
	}
	if diff := snapshotDiff(before, snapshot(t, k.outside)); diff != "" {
		t.Fatalf("the outside directory changed:\n%s", diff)
	}
	// Inside, every write landed in the directory (under whichever name
	// it had) and no temporary file was left behind.
	real := k.path("d")
	if fi, err := os.Lstat(real); err != nil || !fi.IsDir() {
		real = k.path("l")
	}
	names, _ := filepath.Glob(filepath.Join(real, "*"))
	for _, n := range names {
		if strings.Contains(filepath.Base(n), ".ink-") {
			t.Errorf("temporary file left behind: %s", n)
		}
	}
	hidden, _ := filepath.Glob(filepath.Join(real, ".*"))
	if len(hidden) > 0 {
		t.Errorf("temporary files left behind: %v", hidden)
	}
}

// swapAtResolve builds a kit whose tools, once armed, find "d" swapped
// for a link to the outside directory right after they resolved a path:
// the os.Root must refuse what the check let through.
func swapAtResolve(t *testing.T) (k *kit, arm func()) {
	t.Helper()
	var armed atomic.Bool
	k = newKit(t, func(e *Env) {
		e.testHook = func(point string) {
			if point != hookResolved || !armed.CompareAndSwap(true, false) {
				return
			}
			if err := unix.Renameat2(unix.AT_FDCWD, k.path("d"), unix.AT_FDCWD, k.path("l"), unix.RENAME_EXCHANGE); err != nil {
				if err := os.Rename(k.path("d"), k.path("d.moved")); err != nil {
					t.Error(err)
				}
				if err := os.Rename(k.path("l"), k.path("d")); err != nil {
					t.Error(err)
				}
			}
		}
	})
	writeFile(t, filepath.Join(k.outside, "f.txt"), "OUTSIDE\n")
	k.write(t, "d/f.txt", "inside\n")
	if err := os.Symlink(k.outside, k.path("l")); err != nil {
		t.Fatal(err)
	}
	return k, func() { armed.Store(true) }
}

// A link swapped in after a path was resolved is refused by the root,
// with the same refusal as a link that was there all along, for every
// file tool; nothing outside is read or changed.
func TestSwappedLinkIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool      string
		args      map[string]any
		readFirst bool
	}{
		{"read", map[string]any{"path": "d/f.txt"}, false},
		{"ls", map[string]any{"path": "d"}, false},
		{"find", map[string]any{"pattern": "*", "path": "d"}, false},
		{"grep", map[string]any{"pattern": "OUTSIDE", "path": "d"}, false},
		{"grep", map[string]any{"pattern": "OUTSIDE", "path": "d/f.txt"}, false},
		{"write", map[string]any{"path": "d/new.txt", "content": "owned"}, false},
		{"write", map[string]any{"path": "d/deeper/new.txt", "content": "owned"}, false},
		{"write", map[string]any{"path": "d/f.txt", "content": "owned"}, true},
		{"edit", map[string]any{"path": "d/f.txt", "oldText": "inside", "newText": "owned"}, true},
	} {
		t.Run(fmt.Sprint(tc.tool, tc.args), func(t *testing.T) {
			t.Parallel()
			k, arm := swapAtResolve(t)
			before := snapshot(t, k.outside)
			if tc.readFirst {
				wantOK(t, k.run(t, "read", map[string]any{"path": "d/f.txt"}))
			}
			arm()
			r := k.run(t, tc.tool, tc.args)
			wantError(t, r, "outside the root "+k.root, tc.args["path"].(string))
			if strings.Contains(r.Content, "\tOUTSIDE") || strings.Contains(r.Content, ": OUTSIDE") {
				t.Fatalf("refusal showed outside content: %s", r.Content)
			}
			if diff := snapshotDiff(before, snapshot(t, k.outside)); diff != "" {
				t.Fatalf("the outside directory changed:\n%s", diff)
			}
			if got := readFile(t, k.path("l/f.txt")); got != "inside\n" {
				t.Fatalf("the inside file changed to %q", got)
			}
		})
	}
}
