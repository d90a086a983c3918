package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of the "crash" helper and of the fake git.
const (
	envRepo     = "INK_TEST_REPO"
	envHome     = "INK_TEST_HOME"
	envID       = "INK_TEST_ID"
	envStep     = "INK_TEST_STEP"     // Create step to stop at, or "returned"
	envMark     = "INK_TEST_MARK"     // file written once the helper stopped
	envRealGit  = "INK_TEST_REAL_GIT" // the git the fake git stands for
	envGitPause = "INK_TEST_GIT_PAUSE"
	envGitLog   = "INK_TEST_GIT_LOG" // file the fake git logs its arguments to
)

// stopForGood writes the mark file and sleeps until the test kills the
// process.
func stopForGood() {
	if err := os.WriteFile(os.Getenv(envMark), []byte("stopped"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	time.Sleep(time.Hour)
	os.Exit(3)
}

// helperCrash runs Create and stops for good at step envStep.
func helperCrash() int {
	ctx := context.Background()
	id, step := os.Getenv(envID), os.Getenv(envStep)
	createHooks.Store(id, func(s string) error {
		if s == step {
			stopForGood()
		}
		return nil
	})
	repo, err := Detect(ctx, os.Getenv(envRepo))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := Create(ctx, repo, os.Getenv(envHome), id, os.Getpid()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if step == "returned" {
		stopForGood()
	}
	fmt.Fprintf(os.Stderr, "Create never reached step %q\n", step)
	return 1
}

// fakeGit stands for git (the test binary under the name "git"): with
// envGitPause "branch", `git worktree add -b B P H` only creates branch B
// (as git does first) and stops; with "added" it runs the real command and
// stops before returning. Everything else runs the real git. With
// envGitLog it first appends its arguments to that file.
func fakeGit() int {
	real := os.Getenv(envRealGit)
	args := os.Args[1:]
	if log := os.Getenv(envGitLog); log != "" {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return 1
		}
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
	add := slices.Index(args, "worktree")
	isAdd := add >= 0 && add+1 < len(args) && args[add+1] == "add"
	switch pause := os.Getenv(envGitPause); {
	case isAdd && pause == "branch":
		b := slices.Index(args, "-b")
		dir := args[slices.Index(args, "-C")+1]
		cmd := exec.Command(real, "-C", dir, "-c", "core.logAllRefUpdates=true", "branch", args[b+1], args[b+3])
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return 1
		}
		stopForGood()
	case isAdd && pause == "added":
		cmd := exec.Command(real, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return 1
		}
		stopForGood()
	}
	err := syscall.Exec(real, append([]string{"git"}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "fake git:", err)
	return 1
}

// TestCreateCrashAtEveryStep kills a real process, and the git it runs, at
// each step of Create. What is left must be nothing, or something List
// attributes to the child (repository, child id, the dead pid of its lock)
// and Prune removes entirely; a crashed worktree that someone then put work
// into is listed and kept. No temporary record file survives Prune.
func TestCreateCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fakeDir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(fakeDir, "git")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, step, gitPause string
		// registered: git lists the worktree after the crash.
		registered bool
		// work: put a file into the worktree after the crash; prune keeps it.
		work bool
	}{
		{name: "lock taken", step: "locked"},
		{name: "record written", step: "recorded"},
		{name: "git made the branch only", step: "never", gitPause: "branch"},
		{name: "git added the worktree", step: "never", gitPause: "added", registered: true},
		{name: "worktree added", step: "added", registered: true},
		{name: "includes copied", step: "finished", registered: true},
		{name: "between unlock and relock", step: "relocking", registered: true},
		{name: "Create returned", step: "returned", registered: true},
		{name: "Create returned, then work", step: "returned", registered: true, work: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := newRepo(t)
			writeFile(t, root, ".worktreeinclude", ".env\n")
			writeFile(t, root, ".env", "SECRET=1\n")
			home := newInkHome(t)
			id := fmt.Sprintf("crash%d", i)
			mark := filepath.Join(t.TempDir(), "mark")
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=crash", envRepo+"="+root, envHome+"="+home, envID+"="+id,
				envStep+"="+tc.step, envMark+"="+mark, envRealGit+"="+realGit, envGitPause+"="+tc.gitPause,
				"PATH="+fakeDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() })
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			deadline := time.After(2 * time.Minute)
			for !exists(mark) {
				select {
				case err := <-exited:
					t.Fatalf("the helper ended before stopping (%v):\n%s", err, out.String())
				case <-deadline:
					t.Fatalf("the helper never stopped at %s:\n%s", tc.step, out.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			// SIGKILL the helper and every git it runs.
			if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited

			path := filepath.Join(homeReal(home), "worktrees", RepoSlug(root), id)
			if tc.work {
				writeFile(t, path, "notes.txt", "written after the crash\n")
			}
			infos, err := ListWith(ctx, home, ListOptions{Status: true})
			if err != nil {
				t.Fatal(err)
			}
			leftovers := exists(path) || exists(recordPath(path)) || branchExists(t, root, "ink/"+id)
			switch {
			case len(infos) == 0 && leftovers:
				t.Fatalf("the crash left something List does not show: dir %v, record %v, branch %v", exists(path), exists(recordPath(path)), branchExists(t, root, "ink/"+id))
			case len(infos) > 1 || len(infos) == 0 && tc.step != "locked":
				t.Fatalf("List shows %d worktrees after a crash at %s: %+v", len(infos), tc.name, infos)
			case len(infos) == 1:
				in := infos[0]
				if in.ChildID != id || in.Record.RepoRoot != root || in.Record.Path != path || in.Registered != tc.registered {
					t.Errorf("List does not attribute the leftover: %+v", in)
				}
				if in.Locked && (in.LockPID != pid || in.LockPIDAlive) {
					t.Errorf("List shows lock pid %d (alive %v), want the dead helper %d", in.LockPID, in.LockPIDAlive, pid)
				}
			}

			res, err := Prune(ctx, home, PruneOptions{Repos: []string{root}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.work {
				if len(res.Kept) != 1 || !strings.Contains(res.Kept[0].Why, "holds work") || len(res.Removed) != 0 {
					t.Fatalf("prune of a crashed worktree with work: %+v", res)
				}
				if data, _ := os.ReadFile(filepath.Join(path, "notes.txt")); string(data) != "written after the crash\n" {
					t.Fatal("prune lost the work")
				}
				infos, _ := ListWith(ctx, home, ListOptions{})
				if len(infos) != 1 || infos[0].LockPID != pid || infos[0].LockPIDAlive {
					t.Fatalf("ls does not list the kept worktree with its dead lock: %+v", infos)
				}
				if _, err := RemoveForce(ctx, infos[0], true); err != nil {
					t.Fatal(err)
				}
			} else if len(res.Kept) != 0 || len(res.Removed) != len(infos) {
				t.Fatalf("prune after a crash at %s: %+v", tc.step, res)
			}
			if exists(path) || branchExists(t, root, "ink/"+id) || len(registeredPaths(t, root)) != 1 {
				t.Errorf("after prune: dir %v, branch %v, registered %v", exists(path), branchExists(t, root, "ink/"+id), registeredPaths(t, root))
			}
			err = filepath.WalkDir(filepath.Join(home, "worktrees"), func(p string, d os.DirEntry, err error) error {
				if err != nil {
					if errors.Is(err, os.ErrNotExist) {
						return nil
					}
					return err
				}
				if !d.IsDir() {
					t.Errorf("left under INK_HOME after prune: %s", p)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if infos, _ := ListWith(ctx, home, ListOptions{Repos: []string{root}}); len(infos) != 0 {
				t.Errorf("List after prune: %+v", infos)
			}
			if out, err := gitTry(root, "worktree", "list"); err != nil {
				t.Errorf("git worktree list fails after prune: %v\n%s", err, out)
			}
		})
	}
}

// helperCycle creates, lists and removes worktrees in a loop, for
// TestManyHomesOneRepository, and prints every error as a JSON string.
func helperCycle() int {
	ctx := context.Background()
	root, home, id := os.Getenv(envRepo), os.Getenv(envHome), os.Getenv(envID)
	repo, err := Detect(ctx, root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	enc := json.NewEncoder(os.Stdout)
	failures := 0
	fail := func(err error) {
		failures++
		enc.Encode(err.Error())
	}
	for round := range 4 {
		rec, err := Create(ctx, repo, home, fmt.Sprintf("%s-%d", id, round), os.Getpid())
		if err != nil {
			fail(err)
			continue
		}
		infos, err := ListWith(ctx, home, ListOptions{Status: true})
		if err != nil {
			fail(err)
		}
		for _, in := range infos {
			if in.Problem != "" {
				fail(fmt.Errorf("list %s: %s", in.ChildID, in.Problem))
			}
		}
		if out := Settle(ctx, rec); out.Disposition != DispositionRemoved {
			fail(fmt.Errorf("settle %s: %s: %s", rec.ChildID(), out.Disposition, out.Text))
		}
	}
	if failures > 0 {
		return 1
	}
	return 0
}
