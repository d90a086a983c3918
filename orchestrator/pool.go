package orchestrator

import (
	"context"
	"log/slog"
	"sync"
	"time"

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
// that never delegates starts no worker for it; its first child starts
// fresh), then as many as the task calls launched so far, or the task
// calls announced and not yet started if more — never more than its cap nor the free slots of the window
// (what the parent can still start). Refills come in the background after
// every launch, every announced call and every slot given back; a launch
// that finds none starts a fresh worker rather than wait. When nothing
// happened for shrinkAfter the demand halves and idle workers above it
// end, down to none. An idle worker holds no lease and no session; like
// any worker it exits when its host is lost. close ends the idle ones.
// warmPool is safe for concurrent use.
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
	delay   time.Duration // refillDelay; tests shorten it
	// shrinkAfter is how long the pool waits, with nothing happening,
	// before it halves its demand (shrinkDelay).
	shrinkAfter time.Duration

	ctx    context.Context // ends with close: aborts a start in progress
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{} // closed when the refiller has stopped

	mu     sync.Mutex
	idle   []ipc.IdleWorker
	closed bool
	// demand is how many idle workers the parent's pace asks for (see
	// the type's comment); size caps it.
	demand int
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
		delay: refillDelay, shrinkAfter: shrinkDelay,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go p.refill()
	return p
}

// Launch sends spec to an idle worker, or starts a fresh one when none is
// ready, and then has the pool refilled (see refillDelay).
// LaunchReady is Launch after ready: a warm worker is started already, so
// there is nothing to overlap it with but a fresh one's start.
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

// peek reports whether an idle worker is waiting.
func (p *warmPool) peek() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0
}

func (p *warmPool) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	p.grow()
	defer p.nudge()
	for {
		idle := p.take()
		if idle == nil {
			break
		}
		w, err := idle.Run(spec)
		if err == nil {
			return w, nil
		}
		// It died while idle: the attempt never reached it, so another
		// worker can take it.
		p.logger.Debug("Idle worker lost; trying another", "err", err)
	}
	return p.fresh.Launch(ctx, spec)
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

// refillDelay is how long a pool that holds idle workers waits after a
// nudge before it starts more: a nudge comes with a launch, and the worker
// just launched should have the CPU for its first steps, not share it with
// the next one's start. A pool with none ready starts at once: it is
// behind, and a parent calling task back to back would otherwise find it
// empty again at its next call.
const refillDelay = 30 * time.Millisecond

// refill starts idle workers, one at a time so as not to crowd the
// agents that run, whenever the pool is below its size, and shrinks it
// each shrinkAfter that passes with no nudge. A start that fails is not
// retried until the next nudge: a fresh launch would fail the same way and
// say why.
func (p *warmPool) refill() {
	defer close(p.done)
	delay := time.NewTimer(time.Hour)
	delay.Stop()
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
		if p.idleCount() > 0 {
			// The worker just launched should have the CPU for its first
			// steps; a pool with none ready is behind and starts at once.
			delay.Reset(p.delay)
			select {
			case <-p.ctx.Done():
				return
			case <-delay.C:
			}
		}
		for {
			p.mu.Lock()
			short := !p.closed && len(p.idle) < p.size()
			p.mu.Unlock()
			if !short {
				break
			}
			w, err := p.starter.StartIdle(p.ctx, p.inkHome, p.dir)
			if err != nil {
				if p.ctx.Err() == nil {
					p.logger.Debug("Warm worker did not start", "err", err)
				}
				break
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				w.Discard()
				return
			}
			p.idle = append(p.idle, w)
			n := len(p.idle)
			p.mu.Unlock()
			p.logger.Info("Warm worker ready", "idle", n)
		}
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
}
