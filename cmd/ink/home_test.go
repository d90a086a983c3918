package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnwritableInkHome: an INK_HOME ink may not write (read-only, or
// another user's) is bad input, named with the variable to set, and ink
// writes nothing: no session, lease or log. Reading commands still work
// there. As root, whom permissions do not stop, the test runs ink as an
// unprivileged user.
func TestUnwritableInkHome(t *testing.T) {
	t.Parallel()
	root := openDir(t)
	home := filepath.Join(root, "inkhome")
	work := filepath.Join(root, "work")
	for _, d := range []string{home, work, filepath.Join(root, "home")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(root, "ink")
	data, err := os.ReadFile(inkBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "s.yaml"), []byte("rules:\n  - reply: {text: \"hi\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o555); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(exe, args...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "INK_HOME=" + home, "TMPDIR=" + root}
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if os.Geteuid() == 0 {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatalf("ink %v did not finish", args)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	want := "ink: INK_HOME=" + home + " is not writable: you may not write there; set INK_HOME to a directory you can write (ink keeps sessions, leases, logs and worktrees there)\n"
	for _, args := range [][]string{
		{"run", "--model", "script:s.yaml", "hello"},
		{"task", "--model", "script:s.yaml", "hello"},
		{"trust", "."},
	} {
		code, _, stderr := run(args...)
		if code != exitUsage || stderr != want {
			t.Errorf("ink %v: exit %d, stderr %q; want %d and %q", args, code, stderr, exitUsage, want)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("ink wrote into the unwritable INK_HOME: %v", entries)
	}
	if code, stdout, stderr := run("sessions", "ls"); code != 0 || !strings.HasPrefix(stdout, "no sessions for ") {
		t.Errorf("ink sessions ls on a read-only home: exit %d\n%s%s", code, stdout, stderr)
	}
}

// openDir is a fresh directory every user may enter (t.TempDir's parents
// are private to the test's user), removed when the test ends.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ink-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
