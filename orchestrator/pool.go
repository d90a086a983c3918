package orchestrator

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
)

// DefaultWarmWorkers is how many idle workers a supervisor keeps ready at
// most when its front end asks for a warm pool (Config.WarmWorkers): enough
// for the few children a model usually starts at once, few enough that the
// idle processes cost little memory.
const DefaultWarmWorkers = 4

// warmPool is a Launcher that keeps started, handshaken, idle workers, so
// that a child skips the process start, the Go runtime's and ink's
// initialisation and the go-plugin handshake: its worker only has to be
// sent the attempt.
//
// It pays for itself by holding only what the parent is about to use. Its
// size is the demand — none until the parent's first task call (a run
// that never delegates starts no worker for it; its first child takes the
// worker its call's announcement started, or starts fresh), then as many
// as the task calls launched so far, or the task calls announced and not
// yet started if more — never more than its cap nor the free slots of the
// window (what the parent can still start). Refills come in the
// background after every launch, every announced call, every slot given
// back and every worker ready, maxStarting starts at a time (fill). While
// a child launched on one of its workers has not made its first model
// request yet and the pool still holds a worker, it starts none, so that
// the child's first steps have the CPU; a pool that holds none is behind
// and starts at once. A launch that finds no idle worker takes a start in
// progress, if no other launch took it, and the refill goes on beside it
// with the next; with none in progress it starts a fresh worker rather
// than wait. When nothing happened for shrinkAfter the demand halves and
// idle workers above it end, down to none. An idle worker holds no lease
// and no session; like any worker it exits when its host is lost. close
// ends the idle ones. warmPool is safe for concurrent use.
type warmPool struct {
	fresh   Launcher
	starter ipc.IdleStarter
	inkHome string
	dir     string
	cap     int
	// want is how many idle workers could be used right away: the free
	// slots of the window.
	want func() int
	// pending is how many task calls were announced (seen in a message)
	// and have not started yet: the children the parent will start next.
	pending func() int
	logger  *slog.Logger
	// shrinkAfter is how long the pool waits, with nothing happening,
	// before it halves its demand (shrinkDelay).
	shrinkAfter time.Duration

	ctx    context.Context // ends with close: aborts a start in progress
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{} // closed when the refiller has stopped
	starts sync.WaitGroup

	mu     sync.Mutex
	idle   []ipc.IdleWorker
	closed bool
	// demand is how many idle workers the parent's pace asks for (see
	// the type's comment); size caps it.
	demand int
	// starting are the starts in progress that no launch took (the
	// refiller begins one while there are fewer than maxStarting); taken
	// are those launches took, oldest first.
	starting, taken []*idleStart
	// waiting are the launches that took a start and wait for a worker,
	// oldest first: never more than the starts they took that are in
	// progress.
	waiting []chan ipc.IdleWorker
	// settling counts the children launched on the pool's workers that
	// have not made their first model request yet.
	settling int
	// behind is set when the pool was found empty and cleared once its
	// starts reach its size: until then it does not hold them for the
	// children settling.
	behind bool
}

// idleStart is one start of an idle worker by the refiller. A launch that
// finds no idle worker takes it (claimed) and waits for the next worker
// ready; when that is another start's, the two swap roles.
type idleStart struct {
	claimed bool // p.mu guards it
}

var _ Launcher = (*warmPool)(nil)

// newWarmPool returns a pool that keeps up to cap idle workers started by
// starter (in dir, sockets under inkHome), launching fresh ones with fresh
// when it has none; want and pending are the window's free slots and its
// announced calls (nil: none). It starts no worker until a task call is
// announced or launched, so that the pool never delays the first agent of a run and a
// run that never delegates never pays for it.
func newWarmPool(fresh Launcher, starter ipc.IdleStarter, inkHome, dir string, cap int, want, pending func() int, logger *slog.Logger) *warmPool {
	ctx, cancel := context.WithCancel(context.Background())
	if pending == nil {
		pending = func() int { return 0 }
	}
	p := &warmPool{
		fresh: fresh, starter: starter, inkHome: inkHome, dir: dir, cap: cap, want: want, pending: pending, logger: logger,
		shrinkAfter: shrinkDelay, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go p.refill()
	return p
}

// LaunchReady is Launch after ready: a warm worker is started already (or
// being started: it goes on while ready runs), so there is nothing to
// overlap it with but a fresh one's start.
func (p *warmPool) LaunchReady(ctx context.Context, spec ipc.AttemptSpec, ready func() error) (Worker, error) {
	if p.peek() {
		if err := ready(); err != nil {
			return nil, err
		}
		return p.Launch(ctx, spec)
	}
	p.grow()
	defer p.nudge()
	return launchReady(ctx, p.fresh, spec, ready)
}

// idleCount is how many idle workers the pool holds.
func (p *warmPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// peek reports whether an idle worker is waiting or being started for
// the next launch to take.
func (p *warmPool) peek() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0 || len(p.starting) > 0
}

// Launch sends spec to an idle worker, or to the one being started, or
// starts a fresh one when there is neither, and then has the pool
// refilled.
func (p *warmPool) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	p.grow()
	defer p.nudge()
	for {
		idle := p.take()
		if idle == nil {
			idle = p.claim(ctx)
		}
		if idle == nil {
			break
		}
		w, err := p.run(idle, spec)
		if err == nil {
			return w, nil
		}
		// It died while idle: the attempt never reached it, so another
		// worker can take it.
		p.logger.Debug("Idle worker lost; trying another", "err", err)
	}
	return p.fresh.Launch(ctx, spec)
}

// run sends spec to idle; until the child it runs makes its first model
// request, the pool holds its refills (see fill).
func (p *warmPool) run(idle ipc.IdleWorker, spec ipc.AttemptSpec) (Worker, error) {
	p.mu.Lock()
	p.settling++
	p.mu.Unlock()
	w, err := idle.Run(spec)
	if err != nil {
		p.settled()
		return nil, err
	}
	return &settlingWorker{Worker: w, pool: p}, nil
}

// settled counts one launched child as past its first steps (see
// settlingWorker) and has the pool refilled.
func (p *warmPool) settled() {
	p.mu.Lock()
	p.settling--
	p.mu.Unlock()
	p.nudge()
}

// settlingWorker is a worker of the pool running its attempt: its first
// model request — or its end, whichever comes first — tells the pool that
// the child's first steps are done and the CPU may go to the next start.
type settlingWorker struct {
	Worker
	pool *warmPool
	once sync.Once
}

func (w *settlingWorker) settle() { w.once.Do(w.pool.settled) }

func (w *settlingWorker) Recv() (ipc.WorkerMsg, error) {
	m, err := w.Worker.Recv()
	switch m := m.(type) {
	case ipc.Event:
		if _, ok := m.Body.(event.TurnStart); ok {
			w.settle()
		}
	case ipc.Outcome:
		w.settle()
	}
	if err != nil {
		w.settle()
	}
	return m, err
}

func (w *settlingWorker) Close() {
	w.settle()
	w.Worker.Close()
}

func (w *settlingWorker) Kill() {
	w.settle()
	w.Worker.Kill()
}

// claim takes the oldest of the refiller's starts in progress that no
// launch took, and waits for the first worker of the pool's starts to be
// ready (not necessarily that one: starts overtake each other); the
// refiller begins its next start beside it. It returns nil when no start
// is left to take, the start failed or ctx ended first (the worker then
// joins the pool when it is ready).
func (p *warmPool) claim(ctx context.Context) ipc.IdleWorker {
	p.mu.Lock()
	if len(p.starting) == 0 {
		p.mu.Unlock()
		return nil
	}
	s := p.starting[0]
	p.starting = p.starting[1:]
	s.claimed = true
	p.taken = append(p.taken, s)
	ready := make(chan ipc.IdleWorker, 1)
	p.waiting = append(p.waiting, ready)
	p.mu.Unlock()
	p.nudge()
	var w ipc.IdleWorker
	select {
	case w = <-ready:
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(p.waiting, ready); i >= 0 {
			p.waiting = slices.Delete(p.waiting, i, i+1)
			p.giveStart()
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
		// Handed over just now: it is this launch's to give back.
		if w = <-ready; w != nil {
			p.giveBack(w)
		}
		return nil
	}
	if w != nil && !w.Alive() {
		w.Discard()
		return nil
	}
	return w
}

// giveStart makes the oldest start a launch took the pool's again, if
// there is one: the launch was served otherwise, or gave up. p.mu is held.
func (p *warmPool) giveStart() {
	if len(p.taken) == 0 {
		return
	}
	t := p.taken[0]
	p.taken = p.taken[1:]
	t.claimed = false
	p.starting = append(p.starting, t)
}

// giveBack returns an idle worker no launch used to the pool (or ends it
// when the pool is closed).
func (p *warmPool) giveBack(w ipc.IdleWorker) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.Discard()
		return
	}
	p.idle = append(p.idle, w)
	p.mu.Unlock()
}

// take removes and returns a live idle worker, discarding dead ones; nil
// when there is none.
func (p *warmPool) take() ipc.IdleWorker {
	for {
		p.mu.Lock()
		if len(p.idle) == 0 {
			p.mu.Unlock()
			return nil
		}
		w := p.idle[0]
		p.idle = p.idle[1:]
		p.mu.Unlock()
		if w.Alive() {
			return w
		}
		w.Discard()
	}
}

// grow counts a task call's launch: the demand becomes one more than it
// was, up to the cap, so that a parent that delegates again and again
// finds a worker ready however fast it calls, and a parent that delegated
// once keeps one worker for its next call, not more.
func (p *warmPool) grow() {
	p.mu.Lock()
	p.demand = min(p.cap, p.demand+1)
	p.mu.Unlock()
}

// nudge asks the refiller to bring the pool up to its size.
func (p *warmPool) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// size is how many idle workers the pool should hold now; p.mu is held.
func (p *warmPool) size() int {
	return max(0, min(p.cap, p.want(), max(p.demand, p.pending())))
}

// shrinkDelay is how long a pool with nothing happening — no launch, no
// announced call, no slot given back — keeps its idle workers before it
// halves its demand. A model's turn between two task calls takes seconds;
// an idle worker costs memory, not CPU.
const shrinkDelay = 20 * time.Second

// shrink halves the demand and ends the idle workers above the new size;
// it reports whether any demand is left (and so whether to shrink again).
func (p *warmPool) shrink() bool {
	p.mu.Lock()
	p.demand /= 2
	var extra []ipc.IdleWorker
	if n := len(p.idle) - p.size(); n > 0 {
		// The newest go first: the oldest have warmed up longest.
		extra = append(extra, p.idle[len(p.idle)-n:]...)
		p.idle = p.idle[:len(p.idle)-n]
	}
	left := p.demand > 0 || len(p.idle) > 0
	p.mu.Unlock()
	for _, w := range extra {
		w.Discard()
	}
	return left
}

// refill brings the pool up to its size whenever it is nudged, and
// shrinks it each shrinkAfter that passes with no nudge.
func (p *warmPool) refill() {
	defer close(p.done)
	unused := time.NewTimer(time.Hour)
	unused.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-unused.C:
			if p.shrink() {
				unused.Reset(p.shrinkAfter)
			}
			continue
		case <-p.wake:
		}
		unused.Reset(p.shrinkAfter)
		p.fill()
	}
}

// maxStarting is how many idle workers the refiller starts at once at
// most, besides the starts launches took. A start mostly waits — for
// exec, page faults, the handshake — so two overlap well even on 2 cores,
// where one at a time cannot keep up with a parent that calls task back
// to back; more would crowd the agents that run.
const maxStarting = 2

// fill starts idle workers while the pool, with the starts in progress,
// is below its size, maxStarting at a time — unless a child launched on
// one of its workers is still taking its first steps: then it starts none
// while the pool holds others, and one at a time while it is behind (that
// child's first model request nudges it again). A pool found empty is
// behind and starts at once, and then keeps starting until it reaches its
// size. A start that a launch takes does
// not count: the next one begins beside it. A start that fails is not
// retried until the next nudge: a fresh launch would fail the same way
// and say why.
func (p *warmPool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		p.behind = true
	}
	if p.settling > 0 && len(p.idle) > 0 && !p.behind {
		return
	}
	if len(p.idle)+len(p.starting) >= p.size() {
		p.behind = false
	}
	limit := maxStarting
	if p.settling > 0 {
		limit = 1 // the child taking its first steps shares the CPU with one start at most
	}
	for !p.closed && len(p.starting) < limit && len(p.idle)+len(p.starting) < p.size() {
		s := &idleStart{}
		p.starting = append(p.starting, s)
		p.starts.Add(1)
		go p.start(s)
	}
}

// start runs one start of an idle worker: its worker goes to the launch
// that has waited longest for one, or joins the pool, which the refiller
// then tops up. A start that a launch took and that failed sends that
// launch on to a fresh worker.
func (p *warmPool) start(s *idleStart) {
	defer p.starts.Done()
	w, err := p.starter.StartIdle(p.ctx, p.inkHome, p.dir)
	if err != nil && p.ctx.Err() == nil {
		p.logger.Debug("Warm worker did not start", "err", err)
	}
	p.mu.Lock()
	if i := slices.Index(p.starting, s); i >= 0 {
		p.starting = slices.Delete(p.starting, i, i+1)
	}
	if i := slices.Index(p.taken, s); i >= 0 {
		p.taken = slices.Delete(p.taken, i, i+1)
	}
	var to chan ipc.IdleWorker
	if len(p.waiting) > 0 && (err == nil || s.claimed) {
		to = p.waiting[0]
		p.waiting = p.waiting[1:]
		if !s.claimed {
			// It overtook a start a launch took: that one is the pool's
			// now.
			p.giveStart()
		}
	}
	discard := false
	switch {
	case to != nil:
		to <- w // nil when the start failed
	case err != nil:
	case p.closed:
		discard = true
	default:
		p.idle = append(p.idle, w)
		p.logger.Info("Warm worker ready", "idle", len(p.idle))
	}
	p.mu.Unlock()
	if discard {
		w.Discard()
	}
	if err == nil {
		p.nudge()
	}
}

// close ends every idle worker and the refiller, and waits for them.
// Launch still works after close, starting fresh workers; the pool is not
// refilled any more.
func (p *warmPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, w := range idle {
		wg.Go(w.Discard)
	}
	wg.Wait()
	<-p.done
	p.starts.Wait()
}
