package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// The tests of this file are integration tests of the default Workspaces
// (package worktree on real git): the supervisor's transcripts stay in
// memory, its worktrees are real.

// gitRepo makes a repository with one commit in a temporary directory and
// returns its path (symlinks resolved, as git reports it).
func gitRepo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README")
	runGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// runGit runs git in dir and returns its trimmed output.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// lockedByUs reports whether git has the child's worktree locked by this
// process (the supervisor) while it runs.
func lockedByUs(inkHome, childID string) bool {
	info, err := worktree.Find(context.Background(), inkHome, childID)
	return err == nil && info.Locked && info.LockPID == os.Getpid()
}

// TestWorktreeChildren: a child asked for a worktree works on its own
// branch in its own checkout, locked while it runs; afterwards a clean,
// completed one is removed, one with work is kept, one that can still be
// resumed is kept, and the result says which and why.
func TestWorktreeChildren(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		work        func(t testing.TB, w *fakeWorker) bool
		die         bool
		disposition string
		line        string // %[1]s is the worktree path, %[2]s the branch
		exists      bool
	}{
		{name: "clean and completed", disposition: "removed",
			line: "[task] no changes: worktree %[1]s and branch %[2]s removed"},
		{name: "committed work", disposition: "kept-work", exists: true,
			work: func(t testing.TB, w *fakeWorker) bool {
				if err := os.WriteFile(filepath.Join(w.Spec.Cwd, "fix.go"), []byte("package fix\n"), 0o644); err != nil {
					t.Error(err)
					return false
				}
				_, err1 := gitOut(w.Spec.Cwd, "add", "fix.go")
				out, err2 := gitOut(w.Spec.Cwd, "commit", "-q", "-m", "fix")
				if err1 != nil || err2 != nil {
					t.Errorf("commit in the worktree: %v %v %s", err1, err2, out)
					return false
				}
				return true
			},
			line: "[task] changes kept in worktree %[1]s on branch %[2]s ("},
		{name: "uncommitted work", disposition: "kept-work", exists: true,
			work: func(t testing.TB, w *fakeWorker) bool {
				return os.WriteFile(filepath.Join(w.Spec.Cwd, "README"), []byte("changed\n"), 0o644) == nil
			},
			line: "[task] changes kept in worktree %[1]s on branch %[2]s ("},
		{name: "crashed, clean", die: true, disposition: "kept-resumable", exists: true,
			line: "kept so that the child can be resumed in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				repo := gitRepo(t)
				var lockedWhileRunning bool
				h := newHarness(t, Config{Workspaces: gitWorkspaces{}, Cwd: repo, MaxDepth: 1}, cast{
					main: delegates(`{"prompt":"risky edit","worktree":true}`),
					child: func(w *fakeWorker) {
						if !w.Start() {
							return
						}
						lockedWhileRunning = lockedByUs(w.Spec.InkHome, w.Spec.SessionID)
						if tc.work != nil && !tc.work(t, w) {
							w.Die("SIGABRT")
							return
						}
						if tc.die {
							w.Die("SIGKILL")
							return
						}
						w.Complete("edited", model.Usage{})
					},
				}.play)
				res := h.run(t, RunOptions{Prompt: "p"})
				if res.Status != StatusCompleted {
					t.Fatalf("run %s %s", res.Status, res.Reason)
				}
				child := h.l.byLabel("main/1")
				sp := child.Spec
				wt := sp.Create.Launch.Worktree
				if wt == nil || sp.Root != wt.Path || sp.Cwd != wt.Path || wt.RepoRoot != repo || wt.Branch != "ink/"+sp.SessionID ||
					wt.Baseline != runGit(t, repo, "rev-parse", "HEAD") {
					t.Fatalf("child spec root %s cwd %s, worktree %+v", sp.Root, sp.Cwd, wt)
				}
				if !strings.Contains(sp.System, "# Worktree\nYou work in your own git worktree at "+wt.Path+", on branch "+wt.Branch) {
					t.Errorf("the child's system prompt lacks the worktree notice")
				}
				if !lockedWhileRunning {
					t.Errorf("the worktree was not locked by the supervisor while the child ran")
				}
				if ts := h.rec.waitFor(t, "task.start", is[event.TaskStart]("main/1")).Body.(event.TaskStart); ts.Worktree != wt.Path {
					t.Errorf("task.start worktree %q, want %q", ts.Worktree, wt.Path)
				}
				a := h.l.byLabel("main").answer(t, "call-1")
				line := tc.line
				if strings.Contains(line, "%[") {
					line = fmt.Sprintf(line, wt.Path, wt.Branch)
				}
				if !strings.Contains(a.Content, line) {
					t.Errorf("result lacks %q:\n%s", line, a.Content)
				}
				o := a.Record.Worktree
				if o == nil || o.Disposition != tc.disposition || o.Path != wt.Path || o.Branch != wt.Branch {
					t.Errorf("record worktree = %+v, want %s", o, tc.disposition)
				}
				end := h.rec.waitFor(t, "task.end", is[event.TaskEnd]("main/1")).Body.(event.TaskEnd)
				if end.Worktree == nil || end.Worktree.Disposition != tc.disposition {
					t.Errorf("task.end worktree %+v", end.Worktree)
				}
				_, statErr := os.Stat(wt.Path)
				branch, _ := gitOut(repo, "branch", "--list", wt.Branch)
				if exists := statErr == nil; exists != tc.exists || (branch != "") != tc.exists {
					t.Errorf("worktree exists=%v branch %q, want exists=%v", exists, branch, tc.exists)
				}
				if tc.exists {
					if info, err := worktree.Find(context.Background(), h.cfg.InkHome, sp.SessionID); err != nil || info.Locked {
						t.Errorf("kept worktree after the attempt: locked=%v err=%v; want unlocked", info.Locked, err)
					}
				}
			})
		})
	}
}

// TestWorktreeResume: a crashed worktree child is resumed in its
// worktree, locked again while it runs, and its worktree is kept
// afterwards even when clean (a resumed child's worktree is never
// removed). A worktree locked by another live process is refused.
func TestWorktreeResume(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		repo := gitRepo(t)
		h := newHarness(t, Config{Workspaces: gitWorkspaces{}, Cwd: repo, MaxDepth: 1}, cast{
			main: delegates(`{"prompt":"risky","worktree":true}`),
			child: func(w *fakeWorker) {
				if w.Start() {
					w.Die("SIGKILL")
				}
			},
		}.play)
		first := h.run(t, RunOptions{Prompt: "p"})
		child := h.l.byLabel("main/1").Spec
		wt := child.Create.Launch.Worktree

		var locked bool
		again := newHarness(t, Config{Workspaces: gitWorkspaces{}, InkHome: h.cfg.InkHome, Cwd: repo, MaxDepth: 1}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() {
					return
				}
				args := fmt.Sprintf(`{"prompt":"go on","resume":%q}`, child.SessionID)
				if _, ok := w.Delegate("call-r", args); ok {
					w.Complete("ok", model.Usage{})
				}
			},
			child: func(w *fakeWorker) {
				if w.Start() {
					locked = lockedByUs(w.Spec.InkHome, w.Spec.SessionID)
					w.Complete("finished in the worktree", model.Usage{Input: 5, Output: 1})
				}
			},
		}.play)
		res := again.run(t, RunOptions{Prompt: "resume it", SessionID: first.SessionID})
		if res.Status != StatusCompleted {
			t.Fatalf("continued run %s %s", res.Status, res.Reason)
		}
		rs := again.l.byPrompt("go on")
		if rs == nil {
			t.Fatalf("the resume was not launched: %s", again.l.byLabel("main").answer(t, "call-r").Content)
		}
		if rs.Spec.Create != nil || rs.Spec.Cwd != wt.Path || rs.Spec.Root != wt.Path || rs.Spec.SessionID != child.SessionID || !rs.Spec.Repair {
			t.Errorf("resume spec: create %v cwd %s root %s", rs.Spec.Create, rs.Spec.Cwd, rs.Spec.Root)
		}
		if !locked {
			t.Error("the resumed worktree was not locked while the child ran")
		}
		a := again.l.byLabel("main").answer(t, "call-r")
		for _, want := range []string{"finished in the worktree", "kept (a resumed child's worktree is never removed; remove it with `ink worktrees rm " + child.SessionID + "`)",
			"(child lifetime: 2 attempts, ≥5 in / ≥1 out)"} {
			if !strings.Contains(a.Content, want) {
				t.Errorf("resume result lacks %q:\n%s", want, a.Content)
			}
		}
		if a.Record.Worktree == nil || a.Record.Worktree.Disposition != "kept-resumed" {
			t.Errorf("record worktree %+v", a.Record.Worktree)
		}
		if ts := again.rec.waitFor(t, "task.start", is[event.TaskStart]("main/1")).Body.(event.TaskStart); !ts.Resumed || ts.ChildID != child.SessionID {
			t.Errorf("task.start = %+v", ts)
		}
		if _, err := os.Stat(wt.Path); err != nil {
			t.Errorf("the resumed worktree is gone: %v", err)
		}

		// Locked by another live process (pid 1 stands in for a second ink):
		// refused, and the lock stays as it was.
		runGit(t, repo, "worktree", "lock", "--reason", fmt.Sprintf("ink %s pid 1", child.SessionID), wt.Path)
		third := newHarness(t, Config{Workspaces: gitWorkspaces{}, InkHome: h.cfg.InkHome, Cwd: repo, MaxDepth: 1}, func(w *fakeWorker) {
			if w.Spec.Depth > 0 {
				t.Errorf("a resume ran in a worktree locked by another process")
				return
			}
			if w.Start() {
				if _, ok := w.Delegate("call-3", fmt.Sprintf(`{"prompt":"again","resume":%q}`, child.SessionID)); ok {
					w.Complete("ok", model.Usage{})
				}
			}
		})
		third.run(t, RunOptions{Prompt: "p", SessionID: first.SessionID})
		b := third.l.byLabel("main").answer(t, "call-3")
		if want := fmt.Sprintf("task: the worktree %s is in use by process 1", wt.Path); !b.IsError || !strings.Contains(b.Content, want) || !strings.HasSuffix(b.Content, "Start a new task instead.") {
			t.Errorf("resume in a locked worktree answered %q, want %q", b.Content, want)
		}
		if info, err := worktree.Find(context.Background(), h.cfg.InkHome, child.SessionID); err != nil || info.LockPID != 1 {
			t.Errorf("the other process's lock was changed: %+v %v", info, err)
		}
	})
}

// TestRefusedNewWorktreeChildLeavesNothing: when the worker refuses a new
// worktree child (its transcript busy), the worktree made for it is
// removed and the answer says so.
func TestRefusedNewWorktreeChildLeavesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		repo := gitRepo(t)
		h := newHarness(t, Config{Workspaces: gitWorkspaces{}, Cwd: repo, MaxDepth: 1}, cast{
			main: delegates(`{"prompt":"x","worktree":true}`),
			child: func(w *fakeWorker) {
				w.Finish(ipc.Outcome{Status: StatusRefused, Code: session.CodeCreateFailed, Reason: "create transcript: file exists"})
			},
		}.play)
		h.run(t, RunOptions{Prompt: "p"})
		a := h.l.byLabel("main").answer(t, "call-1")
		sp := h.l.byLabel("main/1").Spec
		wt := sp.Create.Launch.Worktree
		if !a.IsError || !strings.HasPrefix(a.Content, "task: create transcript: file exists. Start a new task instead.") ||
			!strings.Contains(a.Content, "[task] no changes: worktree "+wt.Path+" and branch "+wt.Branch+" removed") {
			t.Errorf("answer %q", a.Content)
		}
		// A valid rejection record (the worker's decoder checks it): nothing
		// launched, no child id.
		if err := a.Record.Validate(); err != nil || a.Record.Status != StatusRejected || a.Record.ChildID != "" {
			t.Errorf("record %+v: %v", a.Record, err)
		}
		if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
			t.Errorf("the refused child's worktree remains: %v", err)
		}
	})
}
