package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/sandbox"
)

// noLandlockEnv declares that the machine running the tests has no
// Landlock: the confinement tests then stand down (and fail if the claim
// is false), and the refusal tests run instead.
const noLandlockEnv = "INK_TEST_NO_LANDLOCK"

// truncateHelper makes the test binary truncate its argument with
// truncate(2), the one way of writing a file that never opens it.
const truncateHelper = "ink-test-truncate"

// testExe is this test binary, which also serves as the ink binary: it
// runs the hidden sandbox command as ink's main does.
var testExe string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Command {
		sandbox.Main(os.Args[2:])
	}
	if len(os.Args) > 2 && os.Args[1] == truncateHelper {
		if err := os.Truncate(os.Args[2], 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == socketsHelper {
		os.Exit(trySockets())
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox tests:", err)
		os.Exit(2)
	}
	testExe = exe
	os.Exit(m.Run())
}

// requireLandlock fails the test unless this machine can run the sandbox.
// Only a machine declared to lack Landlock (INK_TEST_NO_LANDLOCK=1), and
// shown to lack it, skips the confinement tests; there the refusal tests
// run instead.
func requireLandlock(t *testing.T) {
	t.Helper()
	err := sandbox.Check()
	if os.Getenv(noLandlockEnv) == "1" {
		if err == nil {
			t.Fatalf("%s=1 says this machine has no Landlock, but the kernel offers it; unset %s", noLandlockEnv, noLandlockEnv)
		}
		t.Skipf("no Landlock here (%v); the refusal tests cover this machine", err)
	}
	if err != nil {
		t.Fatalf("the sandbox cannot run here: %v\n(on a machine without Landlock, set %s=1 to run the refusal tests instead)", err, noLandlockEnv)
	}
}

// dirs is a fresh test layout: a root the agent owns, a sibling standing
// in for the user's checkout, a home, a cache home and a temp dir.
type dirs struct {
	root, sibling, home, cache, tmp string
}

func newDirs(t *testing.T) dirs {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := dirs{
		root:    filepath.Join(base, "root"),
		sibling: filepath.Join(base, "checkout"),
		home:    filepath.Join(base, "home"),
		cache:   filepath.Join(base, "home", ".cache"),
		tmp:     filepath.Join(base, "tmp"),
	}
	for _, p := range []string{d.root, d.sibling, d.home, d.tmp} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", d.home)
	t.Setenv("XDG_CACHE_HOME", d.cache)
	return d
}

// ran is what one sandboxed command did.
type ran struct {
	out     string
	code    int
	pid     int   // the pid the command was started as
	failure error // Launch.Failure
}

// runIn runs script with bash -c under p, in dir, and waits for it.
func runIn(t *testing.T, p sandbox.Policy, dir, script string) ran {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+p.TempDir, "INK_TEST_BIN="+testExe)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l, err := sandbox.Wrap(cmd, testExe, p)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	err = cmd.Start()
	l.Started()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the command did not finish within 60 s; output so far:\n%s", out.String())
	}
	return ran{out: out.String(), code: cmd.ProcessState.ExitCode(), pid: pid, failure: l.Failure()}
}

// wantDenied fails unless r is a command that failed with EACCES.
func wantDenied(t *testing.T, r ran) {
	t.Helper()
	if r.code == 0 || !strings.Contains(r.out, "Permission denied") {
		t.Fatalf("want a permission error, got exit %d:\n%s", r.code, r.out)
	}
}

// wantRan fails unless r exited 0.
func wantRan(t *testing.T, r ran) {
	t.Helper()
	if r.failure != nil {
		t.Fatalf("the sandbox failed: %v", r.failure)
	}
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
}

// wantAbsent fails if path exists.
func wantAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (err %v); the sandbox let a write through", path, err)
	}
}
