package ipc

import (
	"io"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/grpclog"
)

// stdioGuard keeps a worker from writing to its original stdout and stderr
// after the handshake. Those are pipes to the host: once the host is gone,
// go-plugin's replacements for os.Stdout and os.Stderr block when full, and
// a write to the original fd 2 kills the process with SIGPIPE. It is safe
// for concurrent use.
type stdioGuard struct {
	logger *slog.Logger

	once    sync.Once
	w       *os.File
	drained chan struct{}
}

// drainWait bounds how long flush waits for stray output to reach the log.
const drainWait = 200 * time.Millisecond

// hardenStdio routes the standard log package and gRPC's logger to logger
// and turns SIGPIPE on stdout/stderr into an EPIPE error. Call redirect once
// go-plugin has replaced os.Stdout and os.Stderr.
func hardenStdio(logger *slog.Logger) *stdioGuard {
	// With SIGPIPE notified, a write to a broken fd 1 or 2 returns EPIPE
	// instead of killing the process. Unlike signal.Ignore, this does not
	// leave SIGPIPE ignored in the processes the worker starts. Signals
	// that find the channel full are dropped, so nobody needs to read it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	std := &lineLogWriter{log: func(line string) { logger.Info(line, "source", "log") }}
	log.SetOutput(std)
	log.SetFlags(0)
	log.SetPrefix("")

	warn := &lineLogWriter{log: func(line string) {
		if strings.Contains(line, "transport is closing") {
			// The host ended the connection while go-plugin's own streams
			// (stdio, broker) were open: that is how every worker's
			// shutdown looks, not a problem. A host that is really lost
			// is logged by the attempt itself.
			logger.Debug(line, "source", "grpc")
			return
		}
		logger.Warn(line, "source", "grpc")
	}}
	errs := &lineLogWriter{log: func(line string) { logger.Error(line, "source", "grpc") }}
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, warn, errs))

	return &stdioGuard{logger: logger}
}

// redirect points os.Stdout and os.Stderr at a pipe whose lines go to the
// log, replacing go-plugin's stdio pipes. Only the first call does anything.
// ipc calls it at the start of every RPC handler: go-plugin has replaced the
// files by then, and the handler's own code runs after it. A nil guard (a
// server running inside a test process) does nothing.
func (g *stdioGuard) redirect() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		r, w, err := os.Pipe()
		if err != nil {
			g.logger.Warn("no pipe for stray output; discarding it", "err", err)
			devnull, derr := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if derr != nil {
				return
			}
			os.Stdout, os.Stderr = devnull, devnull
			return
		}
		g.w = w
		g.drained = make(chan struct{})
		os.Stdout, os.Stderr = w, w
		go func() {
			defer close(g.drained)
			lw := &lineLogWriter{log: func(line string) { g.logger.Warn(line, "source", "stdout/stderr") }}
			_, _ = io.Copy(lw, r)
			lw.Flush()
			_ = r.Close()
		}()
	})
}

// flush closes the write end of the stray-output pipe and waits briefly for
// what was written to reach the log. Writes after flush fail instead of
// blocking.
func (g *stdioGuard) flush() {
	g.once.Do(func() {}) // no redirect after this point
	if g.w == nil {
		return
	}
	_ = g.w.Close()
	select {
	case <-g.drained:
	case <-time.After(drainWait):
	}
}
