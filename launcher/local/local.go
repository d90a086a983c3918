// Package local is ink's default launcher: each worker a fresh local
// `ink worker` process over go-plugin (package ipc), in the attempt's
// working directory, with the allowlisted environment (ipc.WorkerEnv) and
// its log file under $INK_HOME/logs; it also starts the idle workers of
// the supervisor's warm pool. It owns nothing else: the supervisor
// (package orchestrator) decides what runs.
package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/ipc"
)

// Launcher starts each worker as a fresh `ink worker` process. It is safe
// for concurrent use; set Warn before the first launch.
type Launcher struct {
	exe     string
	environ []string
	logger  *slog.Logger
	// Warn tells the user, once, that worker sockets had to move out of
	// INK_HOME (its filesystem cannot hold them); nil says nothing.
	Warn func(string)
}

// New returns the Launcher that runs exe (the ink binary) as `exe worker`
// with the allowlisted part of environ; logger receives go-plugin's logs
// and a worker's stray output (nil discards them).
func New(exe string, environ []string, logger *slog.Logger) *Launcher {
	return &Launcher{exe: exe, environ: environ, logger: logger}
}

// Exe is the ink binary the Launcher runs.
func (l *Launcher) Exe() string { return l.exe }

var (
	_ ipc.Launcher      = (*Launcher)(nil)
	_ ipc.ReadyLauncher = (*Launcher)(nil)
	_ ipc.IdleStarter   = (*Launcher)(nil)
)

// Launch starts the worker process, opens its attempt stream and sends Run.
func (l *Launcher) Launch(ctx context.Context, spec ipc.AttemptSpec) (ipc.Worker, error) {
	return l.LaunchReady(ctx, spec, nil)
}

// LaunchReady is Launch that runs ready (unless nil) once the worker
// process is started and before it is sent the attempt.
func (l *Launcher) LaunchReady(ctx context.Context, spec ipc.AttemptSpec, ready func() error) (ipc.Worker, error) {
	cmd := exec.Command(l.exe, "worker")
	cmd.Env = append(ipc.WorkerEnv(l.environ), "INK_WORKER_LOG="+filepath.Join(spec.InkHome, "logs", spec.SessionID+".log"))
	cmd.Dir = spec.Cwd
	c, err := ipc.Start(ctx, ipc.ClientConfig{Cmd: cmd, SocketDir: filepath.Join(spec.InkHome, "run"), Logger: l.logger, Warn: l.Warn})
	if err != nil {
		return nil, err
	}
	idle, err := openAttempt(c, cmd)
	if err != nil {
		return nil, err
	}
	if ready != nil {
		if err := ready(); err != nil {
			idle.Discard()
			return nil, err
		}
	}
	return idle.Run(spec)
}

// pluginIdle is a started, handshaken worker process with its attempt
// stream open, that has not been sent its attempt yet.
type pluginIdle struct {
	c    *ipc.Client
	cmd  *exec.Cmd
	s    *ipc.HostStream
	ctx  context.Context // the streams' lifetime, ended by stop
	stop context.CancelFunc
}

var _ ipc.IdleWorker = (*pluginIdle)(nil)

// openAttempt opens the attempt stream of a started worker; on error the
// worker is killed.
func openAttempt(c *ipc.Client, cmd *exec.Cmd) (*pluginIdle, error) {
	// The stream lives as long as the worker, not as long as a context.
	streamCtx, stop := context.WithCancel(context.Background())
	s, err := c.Attempt(streamCtx)
	if err != nil {
		stop()
		c.Kill()
		return nil, err
	}
	return &pluginIdle{c: c, cmd: cmd, s: s, ctx: streamCtx, stop: stop}, nil
}

// run opens the worker's heartbeat stream at the attempt's heartbeat
// interval and sends the worker its attempt; on error the worker is
// killed.
func (p *pluginIdle) Run(spec ipc.AttemptSpec) (ipc.Worker, error) {
	w := &pluginWorker{c: p.c, cmd: p.cmd, s: p.s, stop: p.stop, eof: make(chan struct{})}
	beats, err := p.c.Beats(p.ctx, spec.HeartbeatInterval)
	if err != nil {
		w.Kill()
		return nil, err
	}
	w.beats = beats
	if err := p.s.Send(ipc.Run{Spec: spec}); err != nil {
		w.Kill()
		return nil, fmt.Errorf("send the attempt to worker %d: %w", p.c.Pid(), err)
	}
	return w, nil
}

// alive reports whether the worker process still runs.
func (p *pluginIdle) Alive() bool { return !p.c.Exited() }

// discard ends the idle worker at once: it holds no lease and no session,
// and started nothing, so there is nothing to shut down politely.
func (p *pluginIdle) Discard() {
	p.c.KillNow()
	p.stop()
}

// startIdle starts a pooled worker: in dir, with the allowlisted
// environment, told that it waits for its attempt (ipc.PooledEnv) and so
// learns its session, and its log file, from the Run message. Its attempt
// stream is opened at once, so that a launch only has to send the Run.
func (l *Launcher) StartIdle(ctx context.Context, inkHome, dir string) (ipc.IdleWorker, error) {
	cmd := exec.Command(l.exe, "worker")
	cmd.Env = append(ipc.WorkerEnv(l.environ), ipc.PooledEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.Dir = dir
	c, err := ipc.Start(ctx, ipc.ClientConfig{Cmd: cmd, SocketDir: filepath.Join(inkHome, "run"), Logger: l.logger, Warn: l.Warn})
	if err != nil {
		return nil, err
	}
	return openAttempt(c, cmd)
}

// pluginWorker is a worker process started by Launcher.
type pluginWorker struct {
	c     *ipc.Client
	cmd   *exec.Cmd
	s     *ipc.HostStream
	beats <-chan ipc.Heartbeat
	stop  context.CancelFunc

	closeOnce sync.Once
	// eof is closed once Recv has seen the stream's end (or its failure).
	eofOnce sync.Once
	eof     chan struct{}
}

var _ ipc.Worker = (*pluginWorker)(nil)

func (w *pluginWorker) Pid() int                    { return w.c.Pid() }
func (w *pluginWorker) Send(m ipc.HostMsg) error    { return w.s.Send(m) }
func (w *pluginWorker) Beats() <-chan ipc.Heartbeat { return w.beats }

func (w *pluginWorker) Recv() (ipc.WorkerMsg, error) {
	m, err := w.s.Recv()
	if err != nil {
		w.eofOnce.Do(func() { close(w.eof) })
	}
	return m, err
}

// closeWait bounds how long Close waits for the worker to end its stream
// after the host closed its side.
const closeWait = 5 * time.Second

// Close ends the stream from the host's side, waits for the worker's
// handler to return (the stream's EOF, seen by the receiving goroutine),
// then shuts the worker down through go-plugin, which waits for the process
// to exit and kills it if it does not. A worker that exits cleanly has
// ended everything it started, so its session is not swept (ipc.Shutdown).
func (w *pluginWorker) Close() {
	w.closeOnce.Do(func() {
		_ = w.s.CloseSend()
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-w.eof:
		case <-t.C:
		}
		w.c.Shutdown()
		w.stop()
	})
}

// Kill SIGKILLs the worker's process group at once.
func (w *pluginWorker) Kill() {
	w.c.KillNow()
	w.Close()
}

// Exit waits up to d for the process to end and reads its wait status.
func (w *pluginWorker) Exit(d time.Duration) (ipc.ExitState, bool) {
	select {
	case <-w.c.Done():
	default:
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-w.c.Done():
		case <-t.C:
			return ipc.ExitState{}, false
		}
	}
	if w.cmd.ProcessState == nil {
		return ipc.ExitState{}, false
	}
	ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ipc.ExitState{Code: w.cmd.ProcessState.ExitCode()}, true
	case ws.Signaled():
		return ipc.ExitState{Signal: unix.SignalName(ws.Signal())}, true
	default:
		return ipc.ExitState{Code: ws.ExitStatus()}, true
	}
}
