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
// sent the attempt. It keeps one idle worker per free slot of the
// supervisor's window, up to its cap, refilled in the background after
// every launch and every slot given back; a launch that finds none starts
// a fresh worker rather than wait. An idle worker holds no lease and no
// session; like any worker it exits when its host is lost. close ends the
// idle ones. warmPool is safe for concurrent use.
type warmPool struct {
	fresh   Launcher
	starter ipc.IdleStarter
	inkHome string
	dir     string
	cap     int
	// want is how many idle workers would be used right away: the free
	// slots of the window.
	want   func() int
	logger *slog.Logger
	delay  time.Duration // refillDelay; tests shorten it

	ctx    context.Context // ends with close: aborts a start in progress
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{} // closed when the refiller has stopped

	mu     sync.Mutex
	idle   []ipc.IdleWorker
	closed bool
}

var _ Launcher = (*warmPool)(nil)

// newWarmPool returns a pool that keeps up to cap idle workers started by
// starter (in dir, sockets under inkHome), launching fresh ones with fresh
// when it has none. It starts no worker until its first launch, so that
// the pool never delays the first agent of a run.
func newWarmPool(fresh Launcher, starter ipc.IdleStarter, inkHome, dir string, cap int, want func() int, logger *slog.Logger) *warmPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &warmPool{
		fresh: fresh, starter: starter, inkHome: inkHome, dir: dir, cap: cap, want: want, logger: logger, delay: refillDelay,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	go p.refill()
	return p
}

// Launch sends spec to an idle worker, or starts a fresh one when none is
// ready, and then has the pool refilled (after refillDelay).
// LaunchReady is Launch after ready: a warm worker is started already, so
// there is nothing to overlap it with but a fresh one's start.
func (p *warmPool) LaunchReady(ctx context.Context, spec ipc.AttemptSpec, ready func() error) (Worker, error) {
	if p.peek() {
		if err := ready(); err != nil {
			return nil, err
		}
		return p.Launch(ctx, spec)
	}
	defer p.nudge()
	return launchReady(ctx, p.fresh, spec, ready)
}

// peek reports whether an idle worker is waiting.
func (p *warmPool) peek() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0
}

func (p *warmPool) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
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

// nudge asks the refiller to bring the pool up to its size.
func (p *warmPool) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// size is how many idle workers the pool should hold now.
func (p *warmPool) size() int {
	return max(0, min(p.cap, p.want()))
}

// refillDelay is how long the pool waits after a nudge before it starts
// workers: a nudge comes with a launch, and the worker just launched should
// have the CPU for its first steps, not share it with the next one's start.
const refillDelay = 30 * time.Millisecond

// refill starts idle workers, one at a time so as not to crowd the
// agents that run, whenever the pool is below its size. A start that
// fails is not retried until the next nudge: a fresh launch would fail the
// same way and say why.
func (p *warmPool) refill() {
	defer close(p.done)
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.wake:
		}
		delay.Reset(p.delay)
		select {
		case <-p.ctx.Done():
			return
		case <-delay.C:
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
			p.mu.Unlock()
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
