package worktree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
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
		cmd.Env = append(os.Environ(), helperEnv+"=1", "INK_TEST_REPO="+root, "INK_TEST_HOME="+home, fmt.Sprintf("INK_TEST_ID=proc%d", i))
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
