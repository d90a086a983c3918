package worktree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestConcurrentCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	repo, err := Detect(ctx, root)
	if err != nil {
		t.Fatal(err)
	}

	// Two other processes create worktrees in the same repository while
	// four goroutines here do the same.
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=create", "INK_TEST_REPO="+root, "INK_TEST_HOME="+home, fmt.Sprintf("INK_TEST_ID=proc%d", i))
		out := &bytes.Buffer{}
		cmd.Stdout = out
		cmd.Stderr = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		procs = append(procs, cmd)
		outs = append(outs, out)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	recs := make([]Record, 4)
	for i := range 4 {
		wg.Go(func() {
			recs[i], errs[i] = Create(ctx, repo, home, fmt.Sprintf("g%d", i), os.Getpid())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	for i, cmd := range procs {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("process %d: %v\n%s", i, err, outs[i])
				continue
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("process %d did not finish", i)
		}
		var rec Record
		if err := json.Unmarshal(outs[i].Bytes(), &rec); err != nil {
			t.Errorf("process %d printed %q: %v", i, outs[i], err)
			continue
		}
		recs = append(recs, rec)
	}
	if t.Failed() {
		return
	}
	if n := len(registeredPaths(t, root)); n != 7 {
		t.Errorf("%d worktrees registered, want 7 (main + 6)", n)
	}
	for _, rec := range recs {
		if a := Assess(ctx, rec); a.State != Clean {
			t.Errorf("%s: %+v", rec.Path, a)
		}
	}
	// Concurrent removal is serialised the same way.
	rerrs := make([]error, len(recs))
	for i, rec := range recs {
		wg.Go(func() { rerrs[i] = Remove(ctx, rec) })
	}
	wg.Wait()
	for i, err := range rerrs {
		if err != nil {
			t.Errorf("remove %s: %v", recs[i].Path, err)
		}
	}
	if n := len(registeredPaths(t, root)); n != 1 {
		t.Errorf("%d worktrees registered after removal, want 1", n)
	}
}

// TestManyHomesOneRepository: eight processes, each with its own INK_HOME,
// create, list, assess and remove worktrees in one repository at the same
// time. None may fail: the repository's own lock serialises their git
// worktree commands whatever INK_HOME each uses, and reads retry the
// moments git's metadata is being rewritten.
func TestManyHomesOneRepository(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	const procs = 8
	type helper struct {
		cmd  *exec.Cmd
		out  bytes.Buffer
		done chan error
	}
	hs := make([]*helper, procs)
	for i := range procs {
		h := &helper{done: make(chan error, 1)}
		h.cmd = exec.Command(os.Args[0], "-test.run=^$")
		h.cmd.Env = append(os.Environ(), helperEnv+"=cycle", envRepo+"="+root, envHome+"="+newInkHome(t), fmt.Sprintf("%s=p%d", envID, i))
		h.cmd.Stdout = &h.out
		h.cmd.Stderr = &h.out
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := h.cmd.Process.Pid
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		go func() { h.done <- h.cmd.Wait() }()
		hs[i] = h
	}
	deadline := time.After(5 * time.Minute)
	for i, h := range hs {
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("process %d failed (%v):\n%s", i, err, h.out.String())
			}
		case <-deadline:
			t.Fatalf("process %d did not finish", i)
		}
	}
	if n := len(registeredPaths(t, root)); n != 1 {
		t.Errorf("%d worktrees registered at the end, want only the main checkout", n)
	}
	if b := git(t, root, "branch", "--list", "ink/*"); b != "" {
		t.Errorf("branches left: %s", b)
	}
}
