package orchestrator

import (
	"context"
	"sync"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/sandbox"
)

// firstWorker is the worker of the first agent a front end launches at
// once (Config.FirstWorker): started by New in the background, so that its
// process start, the Go runtime's and ink's initialisation and the
// go-plugin handshake happen beside the front end's own work (its shell
// session and lease, the child's plan, the sandbox checks) instead of
// after it. The first local launch takes it, whether it is ready or still
// starting; an agent that never launches (a refused task, a remote child)
// leaves it to Close, which ends it. It serves one launch only: it is not
// a pool. firstWorker is safe for concurrent use.
type firstWorker struct {
	cancel context.CancelFunc // aborts a start still in progress
	done   chan struct{}      // closed once the start has ended
	w      ipc.IdleWorker     // set before done is closed; nil if it failed
	err    error              // why it did not start

	mu    sync.Mutex
	taken bool // take or close ran: the worker is someone's
}

// startFirstWorker starts one idle worker with starter in dir, sockets
// under inkHome, in the background.
func startFirstWorker(starter ipc.IdleStarter, inkHome, dir string) *firstWorker {
	ctx, cancel := context.WithCancel(context.Background())
	f := &firstWorker{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.w, f.err = starter.StartIdle(ctx, inkHome, dir)
	}()
	return f
}

// take returns the worker, waiting for its start when it is under way (a
// start already begun ends sooner than a fresh one), or nil: when it was
// taken before, when its start failed (a fresh launch says why), when it
// died while idle, or when ctx ends first. A nil f has none.
func (f *firstWorker) take(ctx context.Context) ipc.IdleWorker {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	if f.taken {
		f.mu.Unlock()
		return nil
	}
	f.taken = true
	f.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		f.cancel()
		<-f.done
		if f.w != nil {
			f.w.Discard()
		}
		return nil
	}
	if f.w == nil {
		return nil
	}
	if !f.w.Alive() {
		f.w.Discard()
		return nil
	}
	return f.w
}

// close ends the worker unless a launch took it, and waits for that. A
// nil f has nothing to close. It is idempotent.
func (f *firstWorker) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	mine := !f.taken
	f.taken = true
	f.mu.Unlock()
	if !mine {
		return
	}
	f.cancel()
	<-f.done
	if f.w != nil {
		f.w.Discard()
	}
}

// prestarted is a Launcher that sends its one attempt to an idle worker
// started ahead (the first worker), and to next when that worker is lost
// before the attempt reaches it.
type prestarted struct {
	idle ipc.IdleWorker
	next Launcher
}

var _ ipc.ReadyLauncher = prestarted{}

func (p prestarted) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	return p.LaunchReady(ctx, spec, nil)
}

// LaunchReady runs ready (unless nil), then sends spec to the idle worker;
// a worker that died while idle never got the attempt, so next launches it.
func (p prestarted) LaunchReady(ctx context.Context, spec ipc.AttemptSpec, ready func() error) (Worker, error) {
	if ready != nil {
		if err := ready(); err != nil {
			p.idle.Discard()
			return nil, err
		}
	}
	if w, err := p.idle.Run(spec); err == nil {
		return w, nil
	}
	return p.next.Launch(ctx, spec)
}

// probeAhead starts, in the background, the check of how bash gets the
// private mount namespace that keeps a checkout's git directory read-only
// (sandbox.ProbeNamespaces, one short process), when an agent working in
// root may need it: root is inside a checkout and the sandbox the user
// allows can be workspace-write on this machine. The agent's sandbox
// decision then waits for the answer rather than starting it, so that
// the check runs beside the agent's worker start. Close waits for it, so
// that its scratch directory is gone before the front end exits.
func (o *Orchestrator) probeAhead(root string) {
	if root == "" || o.landlock != nil {
		return
	}
	if m := Ceiling(o.cfg).Mode; m != sandbox.WorkspaceWrite {
		return
	}
	if _, ok := sandbox.FindCheckout(root); !ok {
		return
	}
	o.probing.Go(func() { _, _ = o.namespaces() })
}
