package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inkdev/ink/ipc"
)

// LogEnv names the environment variable through which the orchestrator
// tells a worker where to log ($INK_HOME/logs/<sessionId>.log).
const LogEnv = "INK_WORKER_LOG"

// idleLimit bounds how long a worker waits for its attempt; a host that
// never sends one has gone away.
const idleLimit = 2 * time.Minute

// ackWait bounds how long a worker waits for the host to acknowledge its
// Outcome before it ends the attempt anyway.
const ackWait = 10 * time.Second

// Main serves one attempt and returns, which ends the process. It is the
// whole of the hidden `ink worker` command. It never writes to stdout or
// stderr after the go-plugin handshake: everything goes to the log file.
// Before it returns it ends every process its tools left behind (see
// endDescendants); when it cannot make sure of that, it exits with status
// exitLeftovers instead of returning, and its host sweeps its session.
//
// The attempt's end is a handshake, not a timer: the worker sends its
// Outcome, the host acknowledges it, ends the stream and shuts the worker
// down, and Serve returns. A host that is lost instead ends the stream
// with an error, which also makes Serve return. Only a host that never
// sends an attempt is given up on, after idleLimit.
func Main() {
	host, _ := strconv.Atoi(os.Getenv(PooledEnv))
	pooled := host > 0
	_ = os.Unsetenv(PooledEnv) // not for the processes it starts
	var late *lateLog
	logger, closeLog := openLog()
	if pooled {
		logger, late = openPooledLog()
		closeLog = late.close
	}
	defer closeLog()
	reaper := becomeSubreaper() == nil
	if !reaper {
		logger.Warn("Cannot become a child subreaper; its host will sweep this worker's session")
	}
	h := &handler{log: logger, late: late, done: make(chan struct{})}
	if pooled {
		// A pooled worker waits for its attempt as long as its host lives;
		// a closed connection ends Serve, and a host that died without
		// closing it — even before this process ran — is seen by the
		// re-parenting.
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		if dir, err := os.Getwd(); err == nil {
			go warmUp(dir)
		}
		go watchHost(ctx, host, func() {
			if !h.started() {
				logger.Warn("The host was lost before an attempt arrived; exiting")
				closeLog()
				os.Exit(0)
			}
		})
	} else {
		go func() {
			t := time.NewTimer(idleLimit)
			defer t.Stop()
			select {
			case <-h.done:
			case <-t.C:
				if !h.started() {
					logger.Warn("No attempt arrived; exiting")
					closeLog()
					os.Exit(0)
				}
			}
		}()
	}
	ipc.Serve(h, logger)
	if !reaper || !endDescendants() {
		logger.Warn("Some process this worker started may still run; its host sweeps the session")
		closeLog()
		os.Exit(exitLeftovers)
	}
}

// openLog opens the worker's JSON log file, falling back to discarding
// logs when it cannot be opened (a worker must never print).
func openLog() (*slog.Logger, func()) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return slog.New(slog.NewJSONHandler(io.Discard, nil)), func() {}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return slog.New(slog.NewJSONHandler(io.Discard, nil)), func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.NewJSONHandler(io.Discard, nil)), func() {}
	}
	var once sync.Once
	logger := slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})).With("pid", os.Getpid())
	return logger, func() { once.Do(func() { f.Close() }) }
}

// handler serves Attempt streams; a worker process serves exactly one.
type handler struct {
	// remote is set for `ink worker --remote`: it runs remote attempts
	// only, and a local worker runs local ones only.
	remote bool
	log    *slog.Logger
	late   *lateLog // a pooled worker's log, opened by adopt; nil otherwise
	mu     sync.Mutex
	busy   bool
	done   chan struct{}
	// current is the attempt being served, for its heartbeats' progress.
	current atomic.Pointer[attempt]
	// terminating is why the process was told to stop, if it was.
	terminating string
}

var _ ipc.Progressor = (*handler)(nil)

// ProgressSeq is the progress of the attempt being served (0 before it
// took its lease); ipc puts it into every heartbeat of the Beats stream.
func (h *handler) ProgressSeq() int64 {
	if a := h.current.Load(); a != nil {
		return a.progressSeq()
	}
	return 0
}

// terminate ends the attempt being served, or the next one, as
// interrupted for why. A worker told to stop before its attempt came has
// nothing to record: it exits once the attempt ends at once.
func (h *handler) terminate(why string) {
	h.mu.Lock()
	h.terminating = why
	h.mu.Unlock()
	if a := h.current.Load(); a != nil {
		a.terminate(why)
	}
}

func (h *handler) started() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.busy
}

var _ ipc.Handler = (*handler)(nil)

// Attempt implements ipc.Handler.
func (h *handler) Attempt(stream *ipc.WorkerStream) error {
	h.mu.Lock()
	if h.busy {
		h.mu.Unlock()
		return fmt.Errorf("this worker already ran an attempt; start a new worker")
	}
	h.busy = true
	h.mu.Unlock()
	defer close(h.done)

	first, err := stream.Recv()
	if err != nil {
		return fmt.Errorf("attempt: waiting for run: %w", err)
	}
	run, ok := first.(ipc.Run)
	if !ok {
		return fmt.Errorf("attempt: the first message must be run, got %T", first)
	}
	sp := run.Spec
	if err := sp.Validate(); err != nil {
		return err
	}
	if h.remote != (sp.Remote != nil) {
		return fmt.Errorf("attempt: a remote worker runs remote attempts and a local worker local ones (remote worker %v, remote attempt %v)", h.remote, sp.Remote != nil)
	}
	h.adopt(sp)
	a := newAttempt(sp, stream, h.log)
	h.current.Store(a)
	h.mu.Lock()
	if h.terminating != "" {
		a.terminate(h.terminating)
	}
	h.mu.Unlock()
	a.log.Info("Attempt start", "transcript", sp.Transcript, "binding", sp.Binding.String(), "depth", sp.Depth)
	out := a.run(stream.Context())
	a.log.Info("Attempt end", "status", out.Status, "reason", out.Reason, "turns", out.Turns, "peakRSS", peakRSS())
	a.send(ipc.Outcome{
		Status: out.Status, Code: out.Code, Reason: out.Reason, Text: out.Text, Turns: out.Turns, Usage: out.Usage,
		AttemptID: sp.AttemptID, Epoch: out.Epoch, Health: out.Health, Capped: out.Capped,
	})
	t := time.NewTimer(ackWait)
	defer t.Stop()
	select {
	case <-a.acked:
	case <-stream.Context().Done():
	case <-t.C:
		a.log.Warn("The host did not acknowledge the outcome; ending the attempt", "waited", ackWait.String())
	}
	return nil
}

// watchParent calls lost when this process is re-parented, which happens
// when the orchestrator that started it dies (a belt to the stream's braces:
// a broken stream is the primary signal).
func watchParent(ctx context.Context, lost func()) {
	ppid := os.Getppid()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid {
				lost()
				return
			}
		}
	}
}
