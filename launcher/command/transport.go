package command

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/inkdev/ink/ipc"
)

// Transport reaches the worker of one remote attempt: it starts it (a
// command, a Pod) and connects to it, the greeting and version checked.
// The Launcher does everything else (lease, transcript, fence, worktree)
// the same way over every transport. Dial is called once per attempt,
// from any goroutine.
type Transport interface {
	// Dial starts the worker of d.Spec and returns the connection to it;
	// on error nothing is left running. ctx bounds the start only.
	Dial(ctx context.Context, d Dial) (Conn, error)
}

// Dial is what a Transport gets to start one attempt's worker. It holds
// no key: keys travel in the Run message over the connection.
type Dial struct {
	// Spec is the attempt as the host has it (its key included): a
	// transport reads what it needs to place the worker (ids, the
	// worktree's path, the timeout), and sends none of it anywhere.
	Spec ipc.AttemptSpec
	// Env is the worker's environment, already filtered (ipc.WorkerEnv).
	Env []string
	// Log receives the worker's stray output and what the transport says;
	// it is the attempt's log on the host.
	Log io.Writer
}

// Conn is the host's connection to one remote worker (*ipc.RemoteClient
// for a command). Its methods are safe for concurrent use; Kill and
// Shutdown end it and may be called more than once.
type Conn interface {
	// Pid is the local process that stands for the worker (the launch
	// command's), 0 when there is none.
	Pid() int
	// Attempt opens the attempt's bidirectional stream.
	Attempt(ctx context.Context) (Stream, error)
	// Beats opens the worker's heartbeat stream.
	Beats(ctx context.Context, interval time.Duration) (<-chan ipc.Heartbeat, error)
	// Kill ends the worker at once.
	Kill()
	// Shutdown ends a worker whose work is done, waiting (bounded) for it
	// to exit by itself.
	Shutdown()
	// Done is closed once the worker is gone.
	Done() <-chan struct{}
	// ProcessState is how the local process ended, once Done is closed
	// (nil before, or when there is none).
	ProcessState() *os.ProcessState
}

// Stream is the host's end of one attempt stream.
type Stream interface {
	Send(ipc.HostMsg) error
	Recv() (ipc.WorkerMsg, error)
	CloseSend() error
}

// Exiter is a Conn that says itself how its worker ended, where there is
// no local process to wait for (a Pod's container).
type Exiter interface {
	Exit(d time.Duration) (ipc.ExitState, bool)
}

// Fater is a Conn that knows why a worker's stream ended better than the
// stream does (the Pod was OOMKilled, evicted, past its deadline). Fate
// is called once the stream broke before the worker recorded its end; it
// may wait a little for the platform to say, and returns "" when it has
// nothing to add. The Launcher records its answer as the attempt's end.
type Fater interface {
	Fate() string
}

// LossNamer is a Conn that names a loss the supervisor found (no
// heartbeat) in its own terms ("node lost: …, pod P on node N").
type LossNamer interface {
	NameLoss(reason string) string
}

// execTransport runs a command that reaches `ink worker --remote` over
// its stdin and stdout.
type execTransport struct {
	command string
	start   func(ctx context.Context, cfg ipc.ExecConfig) (remoteClient, error)
}

// Dial runs the command with d's environment, its stderr to d's log.
func (e execTransport) Dial(ctx context.Context, d Dial) (Conn, error) {
	return e.start(ctx, ipc.ExecConfig{Command: e.command, Env: d.Env, Stderr: d.Log})
}
