package orchestrator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// fakeIdle is an idle worker of the pool tests.
type fakeIdle struct {
	id        int
	dead      atomic.Bool
	runErr    error
	ran       atomic.Pointer[ipc.AttemptSpec]
	discarded atomic.Bool
	// launch, when set, plays the attempt (a fake worker of the
	// supervisor's tests).
	launch func(ipc.AttemptSpec) (Worker, error)
}

func (f *fakeIdle) Run(spec ipc.AttemptSpec) (Worker, error) {
	if f.runErr != nil {
		f.discarded.Store(true)
		return nil, f.runErr
	}
	f.ran.Store(&spec)
	if f.launch != nil {
		return f.launch(spec)
	}
	return &stepWorker{}, nil
}

// stepWorker is the worker of a child launched on a fakeIdle: its first
// message is its first model request (turn.start), then its stream ends.
type stepWorker struct{ sent atomic.Bool }

func (w *stepWorker) Pid() int                             { return 0 }
func (w *stepWorker) Send(ipc.HostMsg) error               { return nil }
func (w *stepWorker) Close()                               {}
func (w *stepWorker) Kill()                                {}
func (w *stepWorker) Exit(time.Duration) (ExitState, bool) { return ExitState{}, true }
func (w *stepWorker) Beats() <-chan ipc.Heartbeat          { return nil }
func (w *stepWorker) Recv() (ipc.WorkerMsg, error) {
	if w.sent.CompareAndSwap(false, true) {
		return ipc.Event{Seq: 1, Body: event.TurnStart{Turn: 1}}, nil
	}
	return nil, io.EOF
}

// firstRequest plays what the supervisor reads of the child launched on
// w: its first model request.
func firstRequest(t *testing.T, w Worker) {
	t.Helper()
	m, err := w.Recv()
	if ev, ok := m.(ipc.Event); err != nil || !ok {
		t.Fatalf("the child's first message: %+v, %v; want its turn.start", m, err)
	} else if _, ok := ev.Body.(event.TurnStart); !ok {
		t.Fatalf("the child's first event: %+v; want its turn.start", ev.Body)
	}
}

// aWhile is time let pass on a bubble's clock to show that the pool did
// nothing more: it has no timer but its shrinkDelay.
const aWhile = 30 * time.Millisecond

func (f *fakeIdle) Alive() bool { return !f.dead.Load() }
func (f *fakeIdle) Discard()    { f.discarded.Store(true) }

// fakeStarter starts fakeIdle workers; fail makes starts fail.
type fakeStarter struct {
	home, dir string // where workers must be started ("" = anywhere)

	mu      sync.Mutex
	started []*fakeIdle
	fail    error
	// prepare, when set, adjusts each worker before the pool gets it.
	prepare func(*fakeIdle)
}

func (s *fakeStarter) StartIdle(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	if s.home != "" && (inkHome != s.home || dir != s.dir) {
		return nil, errors.New("started with the wrong home or directory")
	}
	w := &fakeIdle{id: len(s.started) + 1}
	if s.prepare != nil {
		s.prepare(w)
	}
	s.started = append(s.started, w)
	return w, nil
}

func (s *fakeStarter) all() []*fakeIdle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*fakeIdle(nil), s.started...)
}

// countingLauncher counts fresh launches.
type countingLauncher struct{ n atomic.Int32 }

func (c *countingLauncher) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	c.n.Add(1)
	return nil, nil
}

// testPool is a pool over fakes whose wanted size the test sets.
func testPool(t *testing.T, cap int, want *atomic.Int32) (*warmPool, *fakeStarter, *countingLauncher) {
	t.Helper()
	s, fresh := &fakeStarter{home: "/home/ink", dir: "/work"}, &countingLauncher{}
	p := newWarmPool(fresh, s, "/home/ink", "/work", cap, func() int { return int(want.Load()) }, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(p.close)
	return p, s, fresh
}

// TestPoolFillsAfterTheFirstLaunch: the pool starts nothing before its
// first launch (which runs on a fresh worker), then holds one idle worker,
// the next launch takes it, and it grows by one a launch to its cap.
func TestPoolFillsAfterTheFirstLaunch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var want atomic.Int32
		want.Store(8)
		p, s, fresh := testPool(t, 3, &want)
		if n := len(s.all()); n != 0 {
			t.Fatalf("%d workers started before any launch", n)
		}
		if _, err := p.Launch(context.Background(), ipc.AttemptSpec{Label: "main"}); err != nil {
			t.Fatal(err)
		}
		if fresh.n.Load() != 1 {
			t.Fatalf("the first launch did not start a fresh worker")
		}
		eventually(t, "the pool holds 1 idle worker", func() bool { return p.idleCount() == 1 })
		w1, err := p.Launch(context.Background(), ipc.AttemptSpec{Label: "main/1"})
		if err != nil {
			t.Fatal(err)
		}
		if fresh.n.Load() != 1 {
			t.Fatalf("a launch started a fresh worker although idle ones were ready")
		}
		first := s.all()[0]
		if sp := first.ran.Load(); sp == nil || sp.Label != "main/1" {
			t.Fatalf("the oldest idle worker did not get the attempt: %+v", sp)
		}
		eventually(t, "the pool is refilled to 2", func() bool { return p.idleCount() == 2 && len(s.all()) == 3 })
		firstRequest(t, w1)
		w2, err := p.Launch(context.Background(), ipc.AttemptSpec{Label: "main/2"})
		if err != nil {
			t.Fatal(err)
		}
		firstRequest(t, w2)
		eventually(t, "the pool is refilled to its cap of 3", func() bool { return p.idleCount() == 3 && len(s.all()) == 5 })
	})
}

// TestPoolFollowsTheWindow: the pool holds no more idle workers than the
// window has free slots; when slots free up, it grows again.
func TestPoolFollowsTheWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var want atomic.Int32
		want.Store(1)
		p, s, _ := testPool(t, 4, &want)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		eventually(t, "one idle worker", func() bool { return p.idleCount() == 1 })
		want.Store(0)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		p.nudge()
		// Both launches and their nudges are handled, the refill delay
		// has passed: with no free slot nothing more started.
		settleAfter(aWhile)
		if n := len(s.all()); n != 1 || p.idleCount() != 0 {
			t.Fatalf("with a full window the pool started %d workers and holds %d", n, p.idleCount())
		}
		want.Store(2)
		p.nudge()
		eventually(t, "two idle workers once two slots are free", func() bool { return p.idleCount() == 2 })
	})
}

// TestPoolSkipsLostWorkers: an idle worker that died, or whose attempt
// cannot be sent, is discarded and the launch goes to the next one, or to
// a fresh worker.
func TestPoolSkipsLostWorkers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var want atomic.Int32
		want.Store(2)
		p, s, fresh := testPool(t, 2, &want)
		// Two task calls, both before the refill: both fresh, and the
		// pool holds two for the next ones.
		p.Launch(context.Background(), ipc.AttemptSpec{})
		p.Launch(context.Background(), ipc.AttemptSpec{})
		eventually(t, "two idle workers", func() bool { return p.idleCount() == 2 })
		ws := s.all()
		ws[0].dead.Store(true)
		ws[1].runErr = errors.New("connection reset")
		want.Store(0) // no refill, so that the launch must go fresh
		if _, err := p.Launch(context.Background(), ipc.AttemptSpec{Label: "x"}); err != nil {
			t.Fatal(err)
		}
		if !ws[0].discarded.Load() || !ws[1].discarded.Load() {
			t.Fatalf("lost idle workers were not discarded")
		}
		if fresh.n.Load() != 3 {
			t.Fatalf("the launch did not fall back to a fresh worker (%d fresh launches)", fresh.n.Load())
		}
	})
}

// TestPoolStartFailureIsNotRetriedInALoop: a worker that cannot start is
// not started again and again; each later launch tries once more.
func TestPoolStartFailureIsNotRetriedInALoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var want atomic.Int32
		want.Store(4)
		s, fresh := &fakeStarter{fail: errors.New("no such binary")}, &countingLauncher{}
		var tries atomic.Int32
		counting := startFunc(func(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
			tries.Add(1)
			return s.StartIdle(ctx, inkHome, dir)
		})
		p := newWarmPool(fresh, counting, "/home/ink", "/work", 4, func() int { return int(want.Load()) }, nil, slog.New(slog.DiscardHandler))
		t.Cleanup(p.close)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		eventually(t, "one start was tried", func() bool { return tries.Load() >= 1 })
		settleAfter(10 * aWhile)
		if n := tries.Load(); n != 1 {
			t.Fatalf("a failing start was tried %d times after one launch", n)
		}
	})
}

// startFunc adapts a function to ipc.IdleStarter.
type startFunc func(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error)

func (f startFunc) StartIdle(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
	return f(ctx, inkHome, dir)
}

// TestPoolClose: close discards every idle worker and stops refilling; a
// launch after close starts a fresh worker.
func TestPoolClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var want atomic.Int32
		want.Store(3)
		p, s, fresh := testPool(t, 3, &want)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		eventually(t, "one idle worker", func() bool { return p.idleCount() == 1 })
		p.close()
		for _, w := range s.all() {
			if !w.discarded.Load() {
				t.Fatalf("idle worker %d was not ended by close", w.id)
			}
		}
		p.Launch(context.Background(), ipc.AttemptSpec{})
		p.nudge()
		if fresh.n.Load() != 2 || len(s.all()) != 1 || p.idleCount() != 0 {
			t.Fatalf("after close: %d fresh launches, %d started, %d idle", fresh.n.Load(), len(s.all()), p.idleCount())
		}
		p.close() // idempotent
	})
}

// TestPoolInTheSupervisor: with WarmWorkers the supervisor starts the main
// agent fresh, starts no idle worker before the main agent's first task
// call (its model request alone starts none, so a run that never
// delegates pays for no worker), starts the first child fresh or on the
// worker its announcement started, and idle workers beside it, in its
// directory, launches the second child on one,
// grows no further than the cap, and ends the others when the run ends.
func TestPoolInTheSupervisor(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := t.TempDir(), t.TempDir()
		var orc *Orchestrator
		ready := make(chan struct{})
		var beforeRequest, afterRequest int
		store := newMemStore()
		fl := newFakeLauncher(t, store, cast{
			main: func(w *fakeWorker) {
				<-ready
				beforeRequest = orc.pool.idleCount() + len(orc.pool.starter.(*poolLauncher).starter.all())
				if !w.Start() || !w.Turn(1) {
					return
				}
				time.Sleep(10 * aWhile)
				synctest.Wait()
				afterRequest = len(orc.pool.starter.(*poolLauncher).starter.all())
				for i, id := range []string{"call-1", "call-2"} {
					if i > 0 {
						// The pool starts its workers on the bubble's clock.
						for deadline := time.Now().Add(waitLong); orc.pool.idleCount() < 1 && time.Now().Before(deadline); {
							time.Sleep(aWhile)
						}
					}
					call := taskCallOf(id, `{"prompt":"look around"}`)
					if !w.CallTasks(call) || !w.Request(call.ID, string(call.Args)) {
						return
					}
					a, ok := w.AwaitAnswer(call.ID)
					if !ok || !w.Record(call.ID, a) {
						return
					}
					w.Turn(2 + i)
				}
				w.Complete("main is done", model.Usage{Input: 1000, Output: 100})
			},
			child: completes("found it", model.Usage{Input: 50, Output: 5}),
		}.play)
		s := &fakeStarter{home: home, dir: cwd}
		s.prepare = func(f *fakeIdle) {
			f.launch = func(spec ipc.AttemptSpec) (Worker, error) { return fl.Launch(context.Background(), spec) }
		}
		fresh := &freshCounter{fakeLauncher: fl}
		var err error
		orc, err = New(Config{
			InkHome: home, Cwd: cwd, Binding: testBinding, HeartbeatInterval: 25 * time.Millisecond,
			MaxDepth: 1, MaxParallel: 8, WarmWorkers: 2, Launcher: &poolLauncher{freshCounter: fresh, starter: s},
			Store: store, Workspaces: newMemWorkspaces(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if orc.pool == nil {
			t.Fatal("no warm pool although the launcher can start idle workers")
		}
		close(ready)
		res, err := orc.Run(context.Background(), RunOptions{Prompt: "go"})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("run: %+v %v", res, err)
		}
		if beforeRequest != 0 || afterRequest != 0 {
			t.Fatalf("%d idle workers started before the main agent's first model request, %d after it; want none before a task call", beforeRequest, afterRequest)
		}
		// The first task call's announcement starts a worker at once (the
		// pool is empty): its launch finds it ready or, a moment earlier,
		// starts fresh. The second child always finds one.
		firstFresh := fresh.n.Load() == 2
		if n := fresh.n.Load(); n != 1 && n != 2 {
			t.Fatalf("%d fresh launches, want the main agent's and at most its first child's", n)
		}
		var ran []string
		for _, w := range s.all() {
			if sp := w.ran.Load(); sp != nil {
				ran = append(ran, sp.Label)
			} else if !w.discarded.Load() {
				t.Fatalf("idle worker %d outlived the run", w.id)
			}
		}
		want := []string{"main/1", "main/2"}
		if firstFresh {
			want = want[1:]
		}
		if !slices.Equal(ran, want) {
			t.Fatalf("attempts run on idle workers: %v, want %v", ran, want)
		}
		if n := len(s.all()); n > 4 {
			t.Fatalf("the pool started %d workers for a run of two children with a cap of 2", n)
		}
	})
}

// freshCounter counts the launches of fresh workers of a fake launcher.
type freshCounter struct {
	*fakeLauncher
	n atomic.Int32
}

func (f *freshCounter) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	f.n.Add(1)
	return f.fakeLauncher.Launch(ctx, spec)
}

// poolLauncher is a fake launcher that can also start idle workers.
type poolLauncher struct {
	*freshCounter
	starter *fakeStarter
}

func (p *poolLauncher) StartIdle(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
	return p.starter.StartIdle(ctx, inkHome, dir)
}
