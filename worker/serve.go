package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/ipc/pb"
	"github.com/inkdev/ink/secret"
)

// LogEnv names the environment variable through which the orchestrator
// tells a worker where to log ($INK_HOME/logs/<sessionId>.log).
const LogEnv = "INK_WORKER_LOG"

// idleLimit bounds how long a worker waits for its attempt; a host that
// never sends one has gone away.
const idleLimit = 2 * time.Minute

// Main serves one attempt and exits the process. It is the whole of the
// hidden `ink worker` command. It never writes to stdout or stderr after the
// go-plugin handshake: everything goes to the log file.
func Main() {
	logger, closeLog := openLog()
	defer closeLog()
	h := &handler{log: logger, done: make(chan struct{})}
	go func() {
		select {
		case <-h.done:
			// Let gRPC flush the outcome before the process goes.
			time.Sleep(200 * time.Millisecond)
		case <-time.After(idleLimit):
			if h.started() {
				<-h.done
				time.Sleep(200 * time.Millisecond)
			} else {
				logger.Warn("No attempt arrived; exiting")
			}
		}
		closeLog()
		os.Exit(0)
	}()
	ipc.Serve(h, logger)
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
	log  *slog.Logger
	mu   sync.Mutex
	busy bool
	done chan struct{}
}

func (h *handler) started() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.busy
}

var _ ipc.Handler = (*handler)(nil)

// Attempt implements ipc.Handler.
func (h *handler) Attempt(stream pb.Worker_AttemptServer) error {
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
	run := first.GetRun()
	if run == nil {
		return fmt.Errorf("attempt: the first message must be run")
	}
	var sp ipc.AttemptSpec
	if err := json.Unmarshal(run.GetSpec(), &sp); err != nil {
		return fmt.Errorf("attempt: decode spec: %w", err)
	}
	if err := sp.Validate(); err != nil {
		return err
	}
	a := &attempt{spec: sp, stream: stream, pending: map[string]chan *pb.TaskAnswer{}}
	a.redact = newRedaction(sp, func(text string) { a.event("warning", warningEvent{Text: text}) })
	log := slog.New(secret.LogHandler(h.log.Handler(), a.redact.r)).With("session", sp.SessionID, "attempt", sp.AttemptID, "agent", sp.Label)
	a.log = log
	log.Info("Attempt start", "transcript", sp.Transcript, "binding", sp.Binding.String(), "depth", sp.Depth)
	out := a.run(stream.Context())
	log.Info("Attempt end", "status", out.Status, "reason", out.Reason, "turns", out.Turns)
	u := out.Usage
	a.send(&pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{
		Status: out.Status, Reason: out.Reason, Text: out.Text, Turns: int64(out.Turns),
		AttemptId: sp.AttemptID, Epoch: out.Epoch,
		Usage: &pb.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Incomplete: u.Incomplete},
	}}})
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
