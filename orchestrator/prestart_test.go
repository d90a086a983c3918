package orchestrator

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// firstWorkerOrch is an orchestrator over a fake launcher that can start
// idle workers, each of which plays its attempt with the fake.
func firstWorkerOrch(t *testing.T, cfg Config, p play) (*Orchestrator, *fakeStarter, *freshCounter) {
	t.Helper()
	cfg.InkHome, cfg.Cwd = t.TempDir(), t.TempDir()
	cfg.Binding, cfg.HeartbeatInterval = testBinding, 25*time.Millisecond
	store := newMemStore()
	cfg.Store, cfg.Workspaces = store, newMemWorkspaces()
	fl := newFakeLauncher(t, store, p)
	s := &fakeStarter{home: cfg.InkHome, dir: cfg.Cwd}
	s.prepare = func(f *fakeIdle) {
		f.launch = func(spec ipc.AttemptSpec) (Worker, error) { return fl.Launch(context.Background(), spec) }
	}
	fresh := &freshCounter{fakeLauncher: fl}
	cfg.Launcher = &poolLauncher{freshCounter: fresh, starter: s}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o, s, fresh
}

// TestFirstWorkerStartsAtNew: with Config.FirstWorker, `ink task`'s child
// runs on the worker New started before the command asked for anything —
// its process start overlaps the shell session's and the plan's — and no
// fresh worker starts.
func TestFirstWorkerStartsAtNew(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o, s, fresh := firstWorkerOrch(t, Config{MaxDepth: 1, FirstWorker: true}, completes("done", model.Usage{Input: 10, Output: 1}))
		synctest.Wait()
		if n := len(s.all()); n != 1 {
			t.Fatalf("%d workers started by New, want 1 before the task", n)
		}
		res, err := o.Task(context.Background(), TaskOptions{Args: TaskArgs{Prompt: "look"}})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("task: %+v %v", res, err)
		}
		w := s.all()[0]
		if sp := w.ran.Load(); sp == nil || sp.Label != "shell/1" {
			t.Fatalf("the child did not run on the first worker (ran %+v)", sp)
		}
		if n := fresh.n.Load(); n != 0 {
			t.Fatalf("%d fresh workers started beside the first one", n)
		}
		o.Close()
		if w.discarded.Load() || len(s.all()) != 1 {
			t.Fatalf("Close touched the worker a child took, or more were started (%d)", len(s.all()))
		}
	})
}

// TestFirstWorkerOfARun: `ink run`'s main agent runs on the first worker;
// the warm pool still waits for the first task call.
func TestFirstWorkerOfARun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o, s, fresh := firstWorkerOrch(t, Config{MaxDepth: 1, MaxParallel: 4, FirstWorker: true, WarmWorkers: 2},
			completes("all done", model.Usage{Input: 10, Output: 1}))
		res, err := o.Run(context.Background(), RunOptions{Prompt: "go"})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		all := s.all()
		if len(all) != 1 {
			t.Fatalf("%d idle workers started for a run that never delegates, want the first one only", len(all))
		}
		if sp := all[0].ran.Load(); sp == nil || sp.Label != "main" {
			t.Fatalf("the main agent did not run on the first worker (ran %+v)", sp)
		}
		if n := fresh.n.Load(); n != 0 {
			t.Fatalf("%d fresh workers started", n)
		}
	})
}

// TestFirstWorkerUnused: a task refused before it launches, and a child
// that runs on a remote launcher, leave the first worker to Close, which
// ends it; with a remote launcher none is started at all, and none
// without Config.FirstWorker.
func TestFirstWorkerUnused(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o, s, fresh := firstWorkerOrch(t, Config{MaxDepth: 0, FirstWorker: true}, completes("done", model.Usage{}))
			res, err := o.Task(context.Background(), TaskOptions{Args: TaskArgs{Prompt: "look"}})
			if err != nil || res.Status != StatusRejected {
				t.Fatalf("task: %+v %v", res, err)
			}
			o.Close()
			all := s.all()
			if len(all) != 1 || all[0].ran.Load() != nil || !all[0].discarded.Load() || fresh.n.Load() != 0 {
				t.Fatalf("after a refused task and Close: %d started, ran %v, discarded %v, %d fresh",
					len(all), all[0].ran.Load() != nil, all[0].discarded.Load(), fresh.n.Load())
			}
		})
	})
	t.Run("remote", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, s, _ := firstWorkerOrch(t, Config{MaxDepth: 1, FirstWorker: true, RemoteLauncher: &countingLauncher{}}, completes("done", model.Usage{}))
			synctest.Wait()
			if n := len(s.all()); n != 0 {
				t.Fatalf("%d workers started ahead of children that run remotely", n)
			}
		})
	})
	t.Run("not asked", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o, s, fresh := firstWorkerOrch(t, Config{MaxDepth: 1}, completes("done", model.Usage{}))
			synctest.Wait()
			if n := len(s.all()); n != 0 {
				t.Fatalf("%d workers started without FirstWorker", n)
			}
			if res, err := o.Task(context.Background(), TaskOptions{Args: TaskArgs{Prompt: "look"}}); err != nil || res.Status != StatusCompleted || fresh.n.Load() != 1 {
				t.Fatalf("task: %+v %v, %d fresh", res, err, fresh.n.Load())
			}
		})
	})
}

// TestFirstWorkerLost: a first worker that failed to start, or died while
// idle, costs the child nothing but its fresh start.
func TestFirstWorkerLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(*fakeStarter)
	}{
		{"start failed", func(s *fakeStarter) { s.fail = errors.New("no such binary") }},
		{"died idle", func(s *fakeStarter) {
			prev := s.prepare
			s.prepare = func(f *fakeIdle) { prev(f); f.dead.Store(true) }
		}},
		{"lost before the attempt", func(s *fakeStarter) {
			prev := s.prepare
			s.prepare = func(f *fakeIdle) { prev(f); f.runErr = errors.New("connection reset") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var starter *fakeStarter
				o, s, fresh := firstWorkerOrch(t, Config{MaxDepth: 1}, completes("done", model.Usage{Input: 10, Output: 1}))
				starter = s
				tc.prepare(starter)
				// The first worker starts now, with the fault in place.
				o.first = startFirstWorker(o.launcher.(ipc.IdleStarter), o.cfg.InkHome, o.cfg.Cwd)
				res, err := o.Task(context.Background(), TaskOptions{Args: TaskArgs{Prompt: "look"}})
				if err != nil || res.Status != StatusCompleted {
					t.Fatalf("task: %+v %v", res, err)
				}
				if n := fresh.n.Load(); n != 1 {
					t.Fatalf("%d fresh launches, want the child's one", n)
				}
				for _, w := range starter.all() {
					if !w.discarded.Load() {
						t.Fatalf("the lost first worker was not ended")
					}
				}
			})
		})
	}
}
