package worker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reapHelperEnv makes the test binary play a worker that leaves processes
// behind and then ends them (see TestEndDescendants).
const reapHelperEnv = "INK_TEST_REAP_HELPER"

func init() {
	if os.Getenv(reapHelperEnv) == "1" {
		os.Exit(reapHelper())
	}
}

// reapHelper becomes a subreaper, starts a shell that leaves two sleeps
// running — one in a process group of its own, one in a session of its own
// — and exits, prints their pids, then ends its descendants and says
// whether it could.
func reapHelper() int {
	if err := becomeSubreaper(); err != nil {
		fmt.Println("subreaper:", err)
		return 1
	}
	out, err := exec.Command("sh", "-c", `set -m; sleep 300 >/dev/null 2>&1 & echo $!; setsid sleep 300 >/dev/null 2>&1 & echo $!`).Output()
	if err != nil {
		fmt.Println("sh:", err)
		return 1
	}
	fmt.Print(string(out))
	// The shell has exited; its sleeps are this process's children now.
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids, _ := childPids()
		if len(kids) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("clean", endDescendants())
	return 0
}

// TestEndDescendants: processes a tool left behind, in a group or a
// session of their own, are re-parented to the worker and ended by it
// before it exits.
func TestEndDescendants(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), reapHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	var pids []int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			pids = append(pids, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if len(pids) != 2 || !strings.Contains(string(out), "clean true") {
		t.Fatalf("helper output:\n%s", out)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d that a tool left behind still runs after the worker ended its descendants", pid)
		}
	}
}
