package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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

// TestDoctorSaysWhatTheSandboxEnforces: ink doctor names the Landlock ABI
// the kernel reports (asked here with the raw system call) and marks each
// protection enforced exactly when that ABI (or this machine) provides it,
// in its text and in --json.
func TestDoctorSaysWhatTheSandboxEnforces(t *testing.T) {
	t.Parallel()
	raw, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1) // LANDLOCK_CREATE_RULESET_VERSION
	kernelABI := int(raw)
	if errno != 0 {
		kernelABI = 0
	}
	e := newEnv(t)
	p, _ := e.run("doctor", "--json")
	var rep struct {
		Sandbox struct {
			ABI  int `json:"landlockABI"`
			List []struct {
				What     string `json:"what"`
				Enforced bool   `json:"enforced"`
				Why      string `json:"why"`
			} `json:"capabilities"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("ink doctor --json: %v\n%s\n%s", err, p.stdout.String(), p.stderr.String())
	}
	abi := rep.Sandbox.ABI
	// A kernel of ABI 6 or newer without the signal-scoping fix counts as 5.
	if abi != kernelABI && !(kernelABI >= 6 && abi == 5) {
		t.Fatalf("ink doctor --json says Landlock ABI %d, the kernel says %d", abi, kernelABI)
	}
	_, nsErr := sandbox.ProbeNamespaces(inkBin)
	want := map[string]bool{
		"writes outside the workspace denied":           abi >= 3,
		"network cut: TCP connect and bind denied":      abi >= 4,
		"ioctl on devices denied":                       abi >= 5,
		"signals to processes outside denied":           abi >= 6,
		"git directory read-only under workspace-write": nsErr == nil,
	}
	q, _ := e.run("doctor")
	text := q.stdout.String()
	header := "no Landlock"
	if abi > 0 {
		header = fmt.Sprintf("Landlock ABI %d", abi)
	}
	if !strings.Contains(text, "bash sandbox (Linux ") || !strings.Contains(text, ", "+header+";") {
		t.Errorf("ink doctor does not name the Landlock ABI (%s):\n%s", header, text)
	}
	seen := 0
	for _, c := range rep.Sandbox.List {
		mark := "✗"
		if c.Enforced {
			mark = "✓"
		}
		if !strings.Contains(text, fmt.Sprintf("  %s %s: %s\n", mark, c.What, c.Why)) {
			t.Errorf("ink doctor does not show %s %q as --json does:\n%s", mark, c.What, text)
		}
		if w, ok := want[c.What]; ok {
			seen++
			if c.Enforced != w {
				t.Errorf("%q enforced = %v (%s), want %v with Landlock ABI %d", c.What, c.Enforced, c.Why, w, abi)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("ink doctor lists %d of the %d protections checked here:\n%s", seen, len(want), text)
	}
}
