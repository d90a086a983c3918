package orchestrator

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// sizedPool is a pool over fakes, in a synctest bubble, whose free slots
// and announced calls the test sets.
func sizedPool(t *testing.T, cap int, free, pending *atomic.Int32) (*warmPool, *fakeStarter, *countingLauncher) {
	t.Helper()
	s, fresh := &fakeStarter{}, &countingLauncher{}
	p := newWarmPool(fresh, s, "/home/ink", "/work", cap,
		func() int { return int(free.Load()) }, func() int { return int(pending.Load()) }, slog.New(slog.DiscardHandler))
	t.Cleanup(p.close)
	return p, s, fresh
}

// settle lets the refiller act on what it was told: a while passes and
// every goroutine of the bubble waits.
func settle() {
	time.Sleep(2 * aWhile)
	synctest.Wait()
}

// TestPoolGrowsWithDemand: a pool with room for eight starts nothing
// until a task call is announced (a run that never delegates pays for no
// worker), then holds one worker; each task call's launch takes a warm
// worker and the pool grows by one, up to its cap.
func TestPoolGrowsWithDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		p, s, fresh := sizedPool(t, 4, &free, &pending)
		settle()
		if n := len(s.all()); n != 0 {
			t.Fatalf("%d workers started before any task call", n)
		}
		pending.Store(1)
		p.nudge()
		settle()
		if n, idle := len(s.all()), p.idleCount(); n != 1 || idle != 1 {
			t.Fatalf("one task call announced: %d started, %d idle; want one", n, idle)
		}
		pending.Store(0)
		for i, want := range []int{1, 2, 3, 4, 4} {
			w, err := p.Launch(context.Background(), ipc.AttemptSpec{})
			if err != nil {
				t.Fatal(err)
			}
			firstRequest(t, w)
			settle()
			if idle := p.idleCount(); idle != want {
				t.Fatalf("after task call %d: %d idle, want %d", i+1, idle, want)
			}
		}
		if n := fresh.n.Load(); n != 0 {
			t.Fatalf("%d task calls started a fresh worker although the pool held one ready", n)
		}
	})
}

// TestPoolSizedToWhatTheParentCanStart: announced calls grow the pool
// beyond its demand at once, and never beyond the window's free slots.
func TestPoolSizedToWhatTheParentCanStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		pending.Store(3)
		p, _, _ := sizedPool(t, 4, &free, &pending)
		p.nudge()
		settle()
		if idle := p.idleCount(); idle != 3 {
			t.Fatalf("three calls announced: %d idle, want 3", idle)
		}
		free.Store(1)
		pending.Store(6)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		settle()
		if idle := p.idleCount(); idle != 2 {
			// The launch took one of the three; with one free slot none
			// is started, and none ended: the window frees slots again.
			t.Fatalf("one free slot: %d idle, want the 2 left", idle)
		}
		free.Store(0)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		p.Launch(context.Background(), ipc.AttemptSpec{})
		settle()
		if idle := p.idleCount(); idle != 0 {
			t.Fatalf("a full window: %d idle, want 0", idle)
		}
	})
}

// TestPoolShrinksWhenUnused: with nothing happening for shrinkDelay the
// demand halves and the idle workers above it end (the newest first),
// down to none; the next task call grows it again.
func TestPoolShrinksWhenUnused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		p, s, _ := sizedPool(t, 4, &free, &pending)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		p.Launch(context.Background(), ipc.AttemptSpec{})
		settle()
		if idle := p.idleCount(); idle != 2 {
			t.Fatalf("%d idle after two task calls, want 2", idle)
		}
		for _, want := range []int{1, 0} {
			time.Sleep(shrinkDelay)
			synctest.Wait()
			if idle := p.idleCount(); idle != want {
				t.Fatalf("unused: %d idle, want %d", idle, want)
			}
		}
		ended := 0
		for _, w := range s.all() {
			if w.discarded.Load() {
				ended++
			}
		}
		if ended != 2 {
			t.Fatalf("%d idle workers ended by shrinking, want 2", ended)
		}
		started := len(s.all())
		time.Sleep(10 * shrinkDelay)
		synctest.Wait()
		if n := len(s.all()); n != started {
			t.Fatalf("an unused pool started %d more workers", n-started)
		}
		p.Launch(context.Background(), ipc.AttemptSpec{})
		settle()
		if idle := p.idleCount(); idle != 1 {
			t.Fatalf("a task call after the pool shrank: %d idle, want 1", idle)
		}
	})
}

// TestPoolIdleWhenTheRunCannotDelegate: a run whose main agent cannot
// delegate (--max-depth 0) starts no idle worker, however long it runs.
func TestPoolIdleWhenTheRunCannotDelegate(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	store := newMemStore()
	fl := newFakeLauncher(t, store, cast{main: completes("done", model.Usage{Input: 10, Output: 1})}.play)
	s := &fakeStarter{home: home, dir: cwd}
	orc, err := New(Config{
		InkHome: home, Cwd: cwd, Binding: testBinding, HeartbeatInterval: 25 * time.Millisecond,
		MaxDepth: 0, MaxParallel: 8, WarmWorkers: 4, Launcher: &poolLauncher{freshCounter: &freshCounter{fakeLauncher: fl}, starter: s},
		Store: store, Workspaces: newMemWorkspaces(),
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := orc.Run(context.Background(), RunOptions{Prompt: "go"})
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("run: %+v %v", res, err)
	}
	orc.pool.mu.Lock()
	demand := orc.pool.demand
	orc.pool.mu.Unlock()
	if n := len(s.all()); n != 0 || demand != 0 {
		t.Fatalf("a run that cannot delegate asked the pool for %d idle workers and started %d", demand, n)
	}
}

// TestPoolBehindStartsAtOnce: a launch that finds the pool empty has it
// start workers at once, so that a parent calling task back to back finds
// one at its next call; a pool that still holds one starts no more until
// the children just launched on its workers made their first model
// request, leaving them the CPU for their first steps — however long that
// takes.
func TestPoolBehindStartsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		p, s, fresh := sizedPool(t, 4, &free, &pending)
		p.Launch(context.Background(), ipc.AttemptSpec{})
		synctest.Wait()
		if n, f := len(s.all()), fresh.n.Load(); n != 1 || f != 1 {
			t.Fatalf("a launch into an empty pool: %d fresh, %d idle started at once; want 1 and 1", f, n)
		}
		w2, _ := p.Launch(context.Background(), ipc.AttemptSpec{}) // takes it: empty again, demand 2
		synctest.Wait()
		if n := len(s.all()); n != 3 {
			t.Fatalf("an emptied pool started %d workers at once, want the 2 it asks for", n-1)
		}
		w3, _ := p.Launch(context.Background(), ipc.AttemptSpec{}) // takes one: one left, demand 3
		settle()
		if n := len(s.all()); n != 3 {
			t.Fatalf("a pool holding a worker started %d more before the children launched made their first model request", n-3)
		}
		firstRequest(t, w2)
		settle()
		if n := len(s.all()); n != 3 {
			t.Fatalf("a pool holding a worker started %d more before the last child launched made its first model request", n-3)
		}
		firstRequest(t, w3)
		settle()
		if idle, n := p.idleCount(), len(s.all()); idle != 3 || n != 5 {
			t.Fatalf("after the children's first model requests: %d idle of %d started, want 3 of 5", idle, n)
		}
		if f := fresh.n.Load(); f != 1 {
			t.Fatalf("%d fresh launches, want only the first", f)
		}
	})
}

// TestPoolLaunchTakesTheStartInProgress: a launch that finds the pool
// empty while a worker is being started for it takes that worker rather
// than start a fresh one, and the pool starts its next worker beside it;
// a launch whose context ends while it waits leaves the worker to the
// pool and starts nothing.
func TestPoolLaunchTakesTheStartInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		gate := make(chan struct{})
		var begun atomic.Int32
		s := &fakeStarter{}
		slow := startFunc(func(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
			begun.Add(1)
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return s.StartIdle(ctx, inkHome, dir)
		})
		fresh := &countingLauncher{}
		p := newWarmPool(fresh, slow, "/home/ink", "/work", 4,
			func() int { return int(free.Load()) }, func() int { return int(pending.Load()) }, slog.New(slog.DiscardHandler))
		t.Cleanup(p.close)
		pending.Store(1) // a task call announced: the pool starts a worker
		p.nudge()
		synctest.Wait()
		if n := begun.Load(); n != 1 {
			t.Fatalf("%d starts begun for one announced call, want 1", n)
		}
		launched := make(chan struct{})
		go func() {
			defer close(launched)
			pending.Store(0)
			if _, err := p.Launch(context.Background(), ipc.AttemptSpec{Label: "main/1"}); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		select {
		case <-launched:
			t.Fatal("the launch did not wait for the worker being started")
		default:
		}
		if n := begun.Load(); n != 2 {
			t.Fatalf("%d starts begun once the launch took the first, want the next one beside it", n)
		}
		gate <- struct{}{} // the first start ends: it is the launch's
		<-launched
		if f := fresh.n.Load(); f != 0 {
			t.Fatalf("%d fresh launches, want none: the worker being started was taken", f)
		}
		if w := s.all(); len(w) != 1 || w[0].ran.Load() == nil || w[0].ran.Load().Label != "main/1" {
			t.Fatalf("the attempt did not run on the worker being started: %+v", w)
		}
		if idle := p.idleCount(); idle != 0 {
			t.Fatalf("%d idle before the second start ended, want 0", idle)
		}

		// A launch that gives up while it waits leaves the worker to the
		// pool.
		ctx, cancel := context.WithCancel(context.Background())
		gave := make(chan struct{})
		go func() {
			defer close(gave)
			p.Launch(ctx, ipc.AttemptSpec{Label: "main/2"})
		}()
		synctest.Wait()
		cancel()
		<-gave
		close(gate) // every start in progress ends
		settle()
		if f := fresh.n.Load(); f != 1 {
			t.Fatalf("%d fresh launches, want the cancelled launch's one (a real launcher fails it on its ended context)", f)
		}
		for _, w := range s.all() {
			if sp := w.ran.Load(); sp != nil && sp.Label == "main/2" {
				t.Fatalf("the cancelled launch ran its attempt on worker %d", w.id)
			}
		}
		if idle := p.idleCount(); idle < 1 {
			t.Fatalf("the worker the cancelled launch waited for did not join the pool: %d idle", idle)
		}
	})
}

// TestPoolStartsTwoAtATime: a pool behind by three starts two workers at
// once and the third when one of them is ready, never more of its own at
// a time, and one at most while a child launched on its workers takes its
// first steps; a start a launch took does not count, and the next begins
// beside it.
func TestPoolStartsTwoAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		gate := make(chan struct{})
		var begun, ended atomic.Int32
		s := &fakeStarter{}
		slow := startFunc(func(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
			begun.Add(1)
			defer ended.Add(1)
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return s.StartIdle(ctx, inkHome, dir)
		})
		p := newWarmPool(&countingLauncher{}, slow, "/home/ink", "/work", 4,
			func() int { return int(free.Load()) }, func() int { return int(pending.Load()) }, slog.New(slog.DiscardHandler))
		t.Cleanup(p.close)
		pending.Store(3) // three task calls announced
		p.nudge()
		synctest.Wait()
		if n := begun.Load(); n != 2 {
			t.Fatalf("%d starts at once for three announced calls, want 2", n)
		}
		gate <- struct{}{}
		synctest.Wait()
		if b, e := begun.Load(), ended.Load(); b != 3 || e != 1 {
			t.Fatalf("once one start ended: %d begun, %d ended; want the third begun", b, e)
		}
		w, err := p.Launch(context.Background(), ipc.AttemptSpec{}) // takes the idle one
		if err != nil {
			t.Fatal(err)
		}
		taken := make(chan struct{})
		go func() {
			defer close(taken)
			p.Launch(context.Background(), ipc.AttemptSpec{}) // takes a start in progress
		}()
		synctest.Wait()
		if b := begun.Load(); b != 3 {
			t.Fatalf("%d starts begun while the child just launched takes its first steps, want no more than one in progress (3)", b)
		}
		firstRequest(t, w)
		synctest.Wait()
		if b := begun.Load(); b != 4 {
			t.Fatalf("%d starts begun once the child made its first model request, want the next beside the one taken (4)", b)
		}
		close(gate)
		<-taken
	})
}

// TestPoolStartOvertaken: when the start beside the one a launch took is
// ready first, the launch gets that worker and the start it took becomes
// the pool's: no further start begins, and the pool ends up at its size.
func TestPoolStartOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var free, pending atomic.Int32
		free.Store(8)
		gates := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
		var begun atomic.Int32
		s := &fakeStarter{}
		slow := startFunc(func(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
			gate := gates[min(int(begun.Add(1))-1, len(gates)-1)]
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return s.StartIdle(ctx, inkHome, dir)
		})
		fresh := &countingLauncher{}
		p := newWarmPool(fresh, slow, "/home/ink", "/work", 4,
			func() int { return int(free.Load()) }, func() int { return int(pending.Load()) }, slog.New(slog.DiscardHandler))
		t.Cleanup(func() {
			close(gates[2])
			p.close()
		})
		pending.Store(1)
		p.nudge()
		synctest.Wait()
		launched := make(chan struct{})
		go func() {
			defer close(launched)
			pending.Store(0)
			p.Launch(context.Background(), ipc.AttemptSpec{Label: "main/1"})
		}()
		synctest.Wait()
		if n := begun.Load(); n != 2 {
			t.Fatalf("%d starts begun, want the one taken and the one beside it", n)
		}
		close(gates[1]) // the start beside ends first
		<-launched
		synctest.Wait()
		if n := begun.Load(); n != 2 {
			t.Fatalf("%d starts begun after the launch was served by the start beside; want no more: the start it took is the pool's", n)
		}
		close(gates[0])
		synctest.Wait()
		if idle, n, f := p.idleCount(), begun.Load(), fresh.n.Load(); idle != 1 || n != 2 || f != 0 {
			t.Fatalf("%d idle, %d starts, %d fresh; want the pool's one worker, 2 starts, none fresh", idle, n, f)
		}
	})
}
