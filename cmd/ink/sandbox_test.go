package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// The real binary runs the hidden sandbox step before any command parsing:
// what it starts may write its writable directory and nothing else, and a
// bad command line is refused with exit 126. Where the kernel lacks
// Landlock the test fails, unless INK_TEST_NO_LANDLOCK=1 declares (and the
// kernel confirms) that; then the step must refuse to run anything.
func TestSandboxExecCommand(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, tmp := filepath.Join(base, "root"), filepath.Join(base, "tmp")
	for _, d := range []string{root, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(inkBin, append([]string{sandbox.Command}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run ink %s: %v", sandbox.Command, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, code := run()
	if code != 126 || !strings.Contains(out, "no program to run") {
		t.Fatalf("no arguments: exit %d, output %q", code, out)
	}

	avail := sandbox.Check()
	if os.Getenv("INK_TEST_NO_LANDLOCK") == "1" {
		if avail == nil {
			t.Fatal("INK_TEST_NO_LANDLOCK=1 says this machine has no Landlock, but the kernel offers it; unset it")
		}
		out, code = run("-write", tmp, "--", "bash", "-c", "touch "+root+"/ran")
		if code != 126 || !strings.Contains(out, "Landlock") {
			t.Fatalf("without Landlock: exit %d, output %q", code, out)
		}
		if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
			t.Fatal("the command ran unconfined")
		}
		return
	}
	if avail != nil {
		t.Fatalf("the bash sandbox cannot run here: %v\n(on a machine without Landlock, set INK_TEST_NO_LANDLOCK=1)", avail)
	}

	out, code = run("-mode", "read-only", "-write", tmp, "--", "bash", "-c", "touch "+root+"/denied")
	if code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a write outside: exit %d, output %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(root, "denied")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused write landed: %v", err)
	}
	out, code = run("-mode", "read-only", "-write", tmp, "--", "bash", "-c", `sh -c "echo ok > `+tmp+`/allowed" && cat `+tmp+`/allowed`)
	if code != 0 || out != "ok\n" {
		t.Fatalf("a write inside: exit %d, output %q", code, out)
	}
}
