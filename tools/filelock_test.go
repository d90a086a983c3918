package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The counter helper: a separate process that increments "count: N" in a
// file through the read and edit tools, retrying whenever the re-read rule
// refuses its edit, until it has made its share of successful edits. It
// prints how many edits succeeded. It builds its tools as an ink worker
// does: no LockDir override, so the lock directory is the host-wide
// default (found from XDG_RUNTIME_DIR, which the test points into a
// temporary directory); each helper gets its own INK_HOME.
const (
	helperCounter  = "edit-counter"
	counterRootEnv = "INK_TOOLS_COUNTER_ROOT"
	counterNEnv    = "INK_TOOLS_COUNTER_N"
	counterUnsafe  = "INK_TOOLS_COUNTER_UNSAFE"
	counterFile    = "counter.txt"
	counterDelay   = 3 * time.Millisecond
)

var countLine = regexp.MustCompile(`count: (\d+)`)

// runHelper runs the helper process named by mode and returns its exit code.
func runHelper(mode string) int {
	if mode != helperCounter {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
		return 2
	}
	n, err := strconv.Atoi(os.Getenv(counterNEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad", counterNEnv, err)
		return 2
	}
	unsafe := os.Getenv(counterUnsafe) == "1"
	env := Env{
		Root: os.Getenv(counterRootEnv),
		// Widen the window between the checks and the replace, so that
		// without the lock and the re-check two processes overlap in it.
		testHook: func(point string) {
			if point == hookBeforeWrite {
				time.Sleep(counterDelay)
			}
		},
		testNoLock: unsafe,
		testNoCAS:  unsafe,
		testNoSync: true,
	}
	pool, closer, err := Builtins(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer closer.Close()
	read, _ := Select(pool, []string{"read"})
	edit, _ := Select(pool, []string{"edit"})
	ctx := context.Background()
	done := 0
	for attempts := 0; done < n; attempts++ {
		if attempts > 100*n {
			fmt.Fprintf(os.Stderr, "gave up after %d attempts\n", attempts)
			return 1
		}
		r := read[0].Run(ctx, []byte(`{"path":"`+counterFile+`"}`))
		m := countLine.FindStringSubmatch(r.Content)
		if r.IsError || m == nil {
			fmt.Fprintln(os.Stderr, "read:", r.Content)
			return 1
		}
		k, _ := strconv.Atoi(m[1])
		args := fmt.Sprintf(`{"path":%q,"oldText":"count: %d\n","newText":"count: %d\n"}`, counterFile, k, k+1)
		e := edit[0].Run(ctx, []byte(args))
		switch {
		case !e.IsError:
			done++
		case strings.Contains(e.Content, "re-read it first"):
			// Another process changed it since our read: read again.
		default:
			fmt.Fprintln(os.Stderr, "edit:", e.Content)
			return 1
		}
	}
	fmt.Println(done)
	return 0
}

// counterRun is the outcome of runCounters.
type counterRun struct {
	final, reported int
	runtime         string // the XDG_RUNTIME_DIR the helpers shared
}

// runCounters starts two counter helpers with different INK_HOMEs over
// one file, each making n edits, and returns the final count and the sum
// of reported successes.
func runCounters(t *testing.T, n int, unsafe bool) counterRun {
	t.Helper()
	root := t.TempDir()
	runtime := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, counterFile), "count: 0\n")
	flag := "0"
	if unsafe {
		flag = "1"
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			helperEnv+"="+helperCounter,
			"INK_HOME="+filepath.Join(t.TempDir(), "inkhome"),
			"XDG_RUNTIME_DIR="+runtime,
			"TMPDIR="+t.TempDir(),
			counterRootEnv+"="+root,
			counterNEnv+"="+strconv.Itoa(n),
			counterUnsafe+"="+flag,
		)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := cmd.Process
		t.Cleanup(func() { p.Kill() })
		cmds = append(cmds, cmd)
		outs = append(outs, &out)
		t.Cleanup(func() {
			if t.Failed() && errb.Len() > 0 {
				t.Logf("helper %d stderr: %s", p.Pid, errb.String())
			}
		})
	}
	res := counterRun{runtime: runtime}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		got, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Fatalf("helper %d printed %q", i, outs[i].String())
		}
		res.reported += got
	}
	m := countLine.FindStringSubmatch(readFile(t, filepath.Join(root, counterFile)))
	if m == nil {
		t.Fatal("counter file lost its count line")
	}
	res.final, _ = strconv.Atoi(m[1])
	return res
}

// Two processes with different INK_HOMEs editing one file through the
// edit tool lose no update: they share the host-wide lock directory, and
// the lock makes the re-read check and the replace one step.
func TestEditLockSerialisesHomes(t *testing.T) {
	t.Parallel()
	const n = 40
	res := runCounters(t, n, false)
	if res.reported != 2*n {
		t.Fatalf("helpers reported %d successful edits, want %d", res.reported, 2*n)
	}
	if res.final != 2*n {
		t.Fatalf("counter is %d after %d successful edits: updates were lost", res.final, res.reported)
	}
	locks, _ := filepath.Glob(filepath.Join(res.runtime, "ink", "locks", "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("want the one lock file under XDG_RUNTIME_DIR/ink/locks, found %v", locks)
	}
}

// The negative control: with the lock and the re-check off, the same two
// processes do lose updates, so the check above can fail.
func TestEditWithoutLockLosesUpdates(t *testing.T) {
	t.Parallel()
	const n = 40
	res := runCounters(t, n, true)
	if res.reported != 2*n {
		t.Fatalf("helpers reported %d successful edits, want %d", res.reported, 2*n)
	}
	if res.final >= res.reported {
		t.Fatalf("counter is %d after %d successful edits without the lock; expected lost updates", res.final, res.reported)
	}
	t.Logf("without the lock: %d successful edits, counter %d (%d lost)", res.reported, res.final, res.reported-res.final)
}

// Two tool sets in one process, built as two agents of different homes
// would build them, exclude each other too: the lock is per open file,
// not per process.
func TestEditLockSerialisesToolSetsInOneProcess(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, counterFile, "count: 0\n")
	const n, sets = 30, 3
	errs := make(chan error, sets)
	for i := 0; i < sets; i++ {
		env := k.env
		env.testHook = func(point string) {
			if point == hookBeforeWrite {
				time.Sleep(time.Millisecond)
			}
		}
		env.testNoSync = true
		pool := builtins(t, env)
		read, _ := Select(pool, []string{"read"})
		edit, _ := Select(pool, []string{"edit"})
		go func() {
			ctx := context.Background()
			for done, tries := 0, 0; done < n; tries++ {
				if tries > 100*n {
					errs <- fmt.Errorf("gave up after %d tries", tries)
					return
				}
				r := read[0].Run(ctx, []byte(`{"path":"`+counterFile+`"}`))
				m := countLine.FindStringSubmatch(r.Content)
				if r.IsError || m == nil {
					errs <- fmt.Errorf("read: %s", r.Content)
					return
				}
				v, _ := strconv.Atoi(m[1])
				e := edit[0].Run(ctx, []byte(fmt.Sprintf(`{"path":%q,"oldText":"count: %d\n","newText":"count: %d\n"}`, counterFile, v, v+1)))
				switch {
				case !e.IsError:
					done++
				case !strings.Contains(e.Content, "re-read it first"):
					errs <- fmt.Errorf("edit: %s", e.Content)
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < sets; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, p); got != fmt.Sprintf("count: %d\n", n*sets) {
		t.Fatalf("after %d successful edits the file holds %q: updates were lost", n*sets, got)
	}
}

// The lock file of a path is <lock dir>/<sha256(realpath)>.lock and stays
// after the edit.
func TestEditLeavesLockFileInLockDir(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "a.txt", "one\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "a.txt"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"}))
	lock := lockPath(k.env.LockDir, p)
	if filepath.Dir(lock) != k.env.LockDir || !regexp.MustCompile(`^[0-9a-f]{64}\.lock$`).MatchString(filepath.Base(lock)) {
		t.Fatalf("lock path %s is not LockDir/<sha256>.lock", lock)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("lock file missing after edit: %v", err)
	}
}

// An edit waiting for a lock held elsewhere gives up when its context is
// cancelled, and says so.
func TestEditLockWaitHonoursCancel(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "a.txt", "one\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "a.txt"}))
	env, _ := k.env.normalize()
	env.locks = &lockDirCache{}
	held, err := env.lockFile(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := k.runCtx(t, ctx, "edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"})
	wantError(t, r, "waiting for the file lock", "interrupted")
	if got := readFile(t, p); got != "one\n" {
		t.Fatalf("file changed to %q while the lock was held elsewhere", got)
	}
}
