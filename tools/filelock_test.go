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
// prints how many edits succeeded.
const (
	helperCounter  = "edit-counter"
	counterRootEnv = "INK_TOOLS_COUNTER_ROOT"
	counterLockEnv = "INK_TOOLS_COUNTER_LOCKS"
	counterNEnv    = "INK_TOOLS_COUNTER_N"
	counterNoLock  = "INK_TOOLS_COUNTER_NOLOCK"
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
	env := Env{
		Root:    os.Getenv(counterRootEnv),
		LockDir: os.Getenv(counterLockEnv),
		// Widen the window between the re-read check and the write, so
		// that without the lock two processes overlap in it.
		testBeforeWrite: func() { time.Sleep(counterDelay) },
		testNoLock:      os.Getenv(counterNoLock) == "1",
	}
	pool, err := Builtins(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
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

// runCounters starts two counter helpers over one file, each making n
// edits, and returns the final count and the sum of reported successes.
func runCounters(t *testing.T, n int, noLock bool) (final, reported int) {
	t.Helper()
	root := t.TempDir()
	locks := filepath.Join(t.TempDir(), "locks")
	writeFile(t, filepath.Join(root, counterFile), "count: 0\n")
	nl := "0"
	if noLock {
		nl = "1"
	}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			helperEnv+"="+helperCounter,
			counterRootEnv+"="+root,
			counterLockEnv+"="+locks,
			counterNEnv+"="+strconv.Itoa(n),
			counterNoLock+"="+nl,
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
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
		got, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Fatalf("helper %d printed %q", i, outs[i].String())
		}
		reported += got
	}
	m := countLine.FindStringSubmatch(readFile(t, filepath.Join(root, counterFile)))
	if m == nil {
		t.Fatal("counter file lost its count line")
	}
	final, _ = strconv.Atoi(m[1])
	return final, reported
}

// Two processes editing one file through the edit tool lose no update:
// the per-file lock makes the re-read check and the write one step.
func TestEditLockSerialisesProcesses(t *testing.T) {
	t.Parallel()
	const n = 40
	final, reported := runCounters(t, n, false)
	if reported != 2*n {
		t.Fatalf("helpers reported %d successful edits, want %d", reported, 2*n)
	}
	if final != 2*n {
		t.Fatalf("counter is %d after %d successful edits: updates were lost", final, reported)
	}
}

// The negative control: with the lock off, the same two processes do lose
// updates, so the check above can fail.
func TestEditWithoutLockLosesUpdates(t *testing.T) {
	t.Parallel()
	const n = 40
	final, reported := runCounters(t, n, true)
	if reported != 2*n {
		t.Fatalf("helpers reported %d successful edits, want %d", reported, 2*n)
	}
	if final >= reported {
		t.Fatalf("counter is %d after %d successful edits without the lock; expected lost updates", final, reported)
	}
	t.Logf("without the lock: %d successful edits, counter %d (%d lost)", reported, final, reported-final)
}

// The lock file of a path is LockDir/<sha256(realpath)>.lock and stays
// after the edit.
func TestEditLeavesLockFileInLockDir(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	p := k.write(t, "a.txt", "one\n")
	wantOK(t, k.run(t, "read", map[string]any{"path": "a.txt"}))
	wantOK(t, k.run(t, "edit", map[string]any{"path": "a.txt", "oldText": "one", "newText": "two"}))
	env, _ := k.env.normalize()
	lock := env.lockPath(p)
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
