package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/sandbox"
)

// helperEnv switches the test binary into a helper process (see
// runHelper) instead of running tests.
const helperEnv = "INK_TOOLS_TEST_HELPER"

// testExe is this test binary. It stands in for the ink binary as the
// bash sandbox's Env.SandboxExe: TestMain runs the hidden sandbox command
// as ink's main does.
var testExe string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Command {
		sandbox.Main(os.Args[2:])
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools tests:", err)
		os.Exit(2)
	}
	testExe = exe
	// Orphaned grandchildren of bash calls are re-parented to this process,
	// so the tests can reap them and see them truly gone even where PID 1
	// does not reap orphans.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "tools tests: cannot become a child subreaper:", err)
		os.Exit(2)
	}
	// bash under workspace-write may write the user's cache directory:
	// keep it, and HOME, inside a temp dir of this run.
	home, err := os.MkdirTemp("", "ink-tools-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools tests:", err)
		os.Exit(2)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// kit is one agent's built-in tools over a fresh temporary root, with a
// sibling directory outside the root for escape attempts.
type kit struct {
	root    string // the confinement root (real path)
	outside string // a directory beside the root, never reachable
	env     Env    // the Env the tools were built from
	tools   map[string]Tool
}

// newKit builds the tools over a fresh root; adjust may change the Env
// before the tools are built.
func newKit(t *testing.T, adjust ...func(*Env)) *kit {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := &kit{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{k.root, k.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	k.env = Env{Root: k.root, LockDir: filepath.Join(base, "locks"), SandboxExe: testExe}
	for _, f := range adjust {
		f(&k.env)
	}
	pool := builtins(t, k.env)
	k.tools = map[string]Tool{}
	for _, tl := range pool {
		k.tools[tl.Spec().Name] = tl
	}
	return k
}

// builtins builds the tools of env, closing them when the test ends.
func builtins(t testing.TB, env Env) []Tool {
	t.Helper()
	pool, closer, err := Builtins(env)
	if err != nil {
		t.Fatalf("Builtins: %v", err)
	}
	t.Cleanup(func() { closer.Close() })
	return pool
}

// run calls the named tool with args (a JSON string, json.RawMessage, or
// any value marshalled to JSON).
func (k *kit) run(t *testing.T, name string, args any) Result {
	t.Helper()
	return k.runCtx(t, context.Background(), name, args)
}

func (k *kit) runCtx(t *testing.T, ctx context.Context, name string, args any) Result {
	t.Helper()
	tl, ok := k.tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	return tl.Run(ctx, rawArgs(t, args))
}

func rawArgs(t *testing.T, args any) json.RawMessage {
	t.Helper()
	switch a := args.(type) {
	case string:
		return json.RawMessage(a)
	case json.RawMessage:
		return a
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// path is the absolute path of rel inside the root.
func (k *kit) path(rel string) string { return filepath.Join(k.root, filepath.FromSlash(rel)) }

// write creates rel (inside the root) with content, making parents.
func (k *kit) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := k.path(rel)
	writeFile(t, p, content)
	return p
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantOK fails unless r succeeded.
func wantOK(t *testing.T, r Result) {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected tool error: %s", r.Content)
	}
}

// wantError fails unless r is an error whose content holds every part.
func wantError(t *testing.T, r Result, parts ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result, got success: %s", r.Content)
	}
	for _, p := range parts {
		if !strings.Contains(r.Content, p) {
			t.Errorf("error %q does not mention %q", r.Content, p)
		}
	}
}

// waitGone waits until process pid no longer exists (reaping it if it was
// re-parented to this process), failing after limit.
func waitGone(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still exists after %s", pid, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killOnCleanup makes sure process pid, a sleep started by a test
// command, is gone when the test ends. It checks the command line first so
// that a reused pid is never signalled.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasPrefix(string(cmdline), "sleep\x00") {
			return
		}
		syscall.Kill(pid, syscall.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	})
}
