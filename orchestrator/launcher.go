package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/inkdev/ink/ipc"
)

// Launcher starts workers. Supervision reaches every worker through it, so
// the way a worker comes to be — a fresh local process over go-plugin
// today, a warm pool or a remote host tomorrow — is invisible to the task
// and resume logic, and tests supervise fake workers in memory.
type Launcher interface {
	// Launch starts a worker for spec and sends it the Run message. On
	// error nothing is left running. ctx bounds the start only.
	Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error)
}

// readyLauncher is a Launcher that can start a worker while what its
// attempt needs is made ready: ready runs once the worker is started and
// before it is sent the attempt; its error ends the launch, nothing left
// running.
type readyLauncher interface {
	LaunchReady(ctx context.Context, spec ipc.AttemptSpec, ready func() error) (Worker, error)
}

// launchReady launches spec on l once ready (nil: nothing to wait for)
// succeeded, beside the worker's start where l can.
func launchReady(ctx context.Context, l Launcher, spec ipc.AttemptSpec, ready func() error) (Worker, error) {
	if ready == nil {
		return l.Launch(ctx, spec)
	}
	if rl, ok := l.(readyLauncher); ok {
		return rl.LaunchReady(ctx, spec, ready)
	}
	if err := ready(); err != nil {
		return nil, err
	}
	return l.Launch(ctx, spec)
}

// Worker is one running attempt as the supervisor sees it. Send is safe for
// concurrent use; Recv is called from one goroutine; Close and Kill may be
// called from any goroutine, more than once.
type Worker interface {
	// Pid is the worker's process id (its process group and session).
	Pid() int
	// Send sends a message to the worker.
	Send(ipc.HostMsg) error
	// Recv receives the worker's next message; io.EOF ends the stream
	// normally, any other error means the worker is gone.
	Recv() (ipc.WorkerMsg, error)
	// Beats receives the worker's heartbeats, one per heartbeat interval
	// of its attempt (AttemptSpec.HeartbeatInterval), from a stream that
	// no attempt message can delay; it is closed when that stream ends.
	// The supervisor judges the worker's liveness from them alone, for
	// every launcher (see liveness).
	Beats() <-chan ipc.Heartbeat
	// Close ends a worker whose outcome was acknowledged: it ends the
	// stream, waits (bounded) for the worker to finish it, shuts the worker
	// down and waits for it to exit, then removes what it left behind.
	Close()
	// Kill SIGKILLs the worker's process group and every other group of
	// its session, waits for it and removes what it left behind.
	Kill()
	// Exit waits up to d for the worker process to end and says how it
	// ended; ok is false when it still runs.
	Exit(d time.Duration) (state ExitState, ok bool)
}

// ExitState is how a worker process ended: killed by Signal ("SIGKILL"),
// or exited with Code.
type ExitState struct {
	Signal string
	Code   int
}

// describe explains a worker that ended without reporting an outcome.
func (e ExitState) describe(pid int) string {
	if e.Signal != "" {
		return fmt.Sprintf("the worker process (pid %d) was killed by signal %s", pid, e.Signal)
	}
	return fmt.Sprintf("the worker process (pid %d) exited with status %d before reporting an outcome", pid, e.Code)
}
