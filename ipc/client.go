package ipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/inkdev/ink/ipc/internal/pb"
)

// DefaultStartTimeout bounds the worker's handshake and first Info call
// when ClientConfig.StartTimeout is zero.
const DefaultStartTimeout = 10 * time.Second

// ClientConfig says how to launch one worker.
type ClientConfig struct {
	// Cmd is the unstarted worker command, e.g. exec.Command(exe, "worker").
	// Its Env is the complete environment the worker gets (an explicit
	// allowlist chosen by the caller); ipc appends only what go-plugin needs
	// (the magic cookie, PLUGIN_UNIX_SOCKET_DIR, PLUGIN_PROTOCOL_VERSIONS,
	// ...) and never the host's own environment. Start sets Setsid in
	// Cmd.SysProcAttr and points stdin at /dev/null; Cmd.Stdout and
	// Cmd.Stderr must be unset (they carry the handshake and the worker's
	// early log lines).
	Cmd *exec.Cmd
	// SocketDir is the directory for worker sockets, normally $INK_HOME/run.
	// It is created 0700 and must be owned by the current user. Each worker
	// gets a fresh 0700 directory inside it, removed by Kill. When SocketDir
	// is empty or too long for a Unix socket path, a fresh 0700 directory
	// under the system temp dir is used instead and removed by Kill.
	SocketDir string
	// Logger receives go-plugin's logs and whatever the worker writes to its
	// stderr before or outside its own log (a panic, for instance). Nil
	// discards them.
	Logger *slog.Logger
	// StartTimeout bounds the handshake and the Info call; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Warn, when set, is told once per process that SocketDir cannot hold
	// a Unix socket and which private directory is used instead.
	Warn func(string)
}

// socketNoteOnce makes the socket directory's fallback said once.
var socketNoteOnce sync.Once

// Client is the host's handle on one running worker process. Its methods
// are safe for concurrent use. The caller must call Kill when done with it,
// also after the worker exited on its own, to release the socket directory.
type Client struct {
	plugin *plugin.Client
	worker pb.WorkerClient
	info   *pb.InfoReply
	socket socketBase

	runnerMu sync.Mutex
	runner   *processRunner
	// pluginDir is the worker's own socket directory made by go-plugin;
	// go-plugin removes it on Kill except when the process never started.
	pluginDir string

	killOnce sync.Once
	// hostLog is go-plugin's logger for this worker.
	hostLog *slogHCLog
}

// Start launches the worker described by cfg in its own session, completes
// the go-plugin handshake, calls Info and checks that the worker speaks
// ProtocolVersion. A worker of another version yields a
// *ProtocolMismatchError. When ctx ends before the worker is ready, the
// worker is killed and ctx's error returned. On any error nothing is left
// running and the socket directory is removed.
func Start(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Cmd == nil {
		return nil, errors.New("start ink worker: ClientConfig.Cmd is nil")
	}
	if cfg.Cmd.Process != nil {
		return nil, errors.New("start ink worker: ClientConfig.Cmd was already started; build a new exec.Cmd for every worker")
	}
	if cfg.Cmd.Stdout != nil || cfg.Cmd.Stderr != nil {
		return nil, errors.New("start ink worker: ClientConfig.Cmd must not set Stdout or Stderr; ipc reads them for the handshake and the worker's logs")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base, note, err := prepareSocketBase(cfg.SocketDir)
	if err != nil {
		return nil, fmt.Errorf("start ink worker: %w", err)
	}
	if note != "" {
		logger.Warn("Worker socket directory replaced", "why", note)
		if cfg.Warn != nil {
			socketNoteOnce.Do(func() { cfg.Warn(note) })
		}
	}
	if !base.fallback {
		pruneStaleSocketDirs(base.dir)
	}

	hostLog := newSlogHCLog(logger)
	c := &Client{socket: base, hostLog: hostLog}
	workerCmd := cfg.Cmd
	c.plugin = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshakeConfig(),
		VersionedPlugins: pluginSets(ProtocolVersion, &workerPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		// go-plugin hands RunnerFunc a blank command that carries only the
		// environment it needs; that is appended to the caller's allowlist.
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			workerCmd.Env = append(append([]string{}, workerCmd.Env...), spec.Env...)
			c.runnerMu.Lock()
			defer c.runnerMu.Unlock()
			c.pluginDir = socketDirFromEnv(spec.Env)
			r, err := newProcessRunner(workerCmd)
			if err != nil {
				return nil, err
			}
			c.runner = r
			return r, nil
		},
		SkipHostEnv:      true,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: base.dir},
		StartTimeout:     cfg.StartTimeout,
		Logger:           hostLog,
		SyncStdout:       hostLog.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		SyncStderr:       hostLog.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
		// The connection must not be closed for idleness: the worker takes
		// a closed connection for a lost host.
		GRPCDialOptions: []grpc.DialOption{grpc.WithIdleTimeout(0)},
	})

	type dispensed struct {
		worker pb.WorkerClient
		err    error
	}
	ready := make(chan dispensed, 1)
	go func() {
		rpc, err := c.plugin.Client()
		if err != nil {
			ready <- dispensed{err: err}
			return
		}
		raw, err := rpc.Dispense(pluginName)
		if err != nil {
			ready <- dispensed{err: err}
			return
		}
		w, ok := raw.(pb.WorkerClient)
		if !ok {
			ready <- dispensed{err: fmt.Errorf("worker plugin dispensed %T, not a worker client", raw)}
			return
		}
		ready <- dispensed{worker: w}
	}()

	var d dispensed
	select {
	case d = <-ready:
	case <-ctx.Done():
		c.hostLog.endOnPurpose()
		c.killProcessGroup()
		<-ready
		c.Kill()
		return nil, fmt.Errorf("start ink worker: %w", ctx.Err())
	}
	if d.err != nil {
		err := c.explainStartFailure(d.err, cfg.StartTimeout)
		c.Kill()
		return nil, fmt.Errorf("start ink worker: %w", err)
	}
	c.worker = d.worker

	infoCtx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	info, err := c.worker.Info(infoCtx, &pb.InfoRequest{})
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("start ink worker: info: %w", err)
	}
	if info.GetProtocolVersion() != ProtocolVersion {
		c.Kill()
		return nil, fmt.Errorf("start ink worker: %w",
			&ProtocolMismatchError{Worker: int(info.GetProtocolVersion()), Host: ProtocolVersion})
	}
	c.info = info
	logger.Debug("ink worker ready", "pid", c.Pid(), "inkVersion", info.GetInkVersion(),
		"socket", c.socketPath())
	return c, nil
}

// explainStartFailure turns go-plugin's handshake failure into a message
// that says what the worker did: which version it speaks, or how it exited
// and what it last wrote to stderr.
func (c *Client) explainStartFailure(err error, timeout time.Duration) error {
	if mismatch := asProtocolMismatch(err, ProtocolVersion); mismatch != err {
		return mismatch
	}
	c.runnerMu.Lock()
	r := c.runner
	c.runnerMu.Unlock()
	if r == nil || r.Pid() == 0 {
		return err
	}
	var b strings.Builder
	msg := err.Error()
	timedOut := strings.Contains(msg, "timeout while waiting for plugin to start")
	if timedOut {
		fmt.Fprintf(&b, "%s did not complete the ink worker handshake within %v (timeout while waiting for plugin to start)", r.Name(), timeout)
	} else if printed := unrecognizedLine(msg); printed != "" {
		// go-plugin kills the worker right away, so how it exited says nothing.
		fmt.Fprintf(&b, "%s printed %q instead of the ink worker handshake", r.Name(), printed)
	} else {
		state, exited := r.exitState(time.Second)
		if !exited {
			return err
		}
		fmt.Fprintf(&b, "%s exited (%s) before completing the ink worker handshake", r.Name(), state)
	}
	if tail := r.stderrTail(); tail != "" {
		b.WriteString("; its stderr ended with:\n\t" + strings.ReplaceAll(tail, "\n", "\n\t"))
	}
	if timedOut {
		b.WriteString("\nThe machine may be overloaded; retry, or check the worker log under $INK_HOME/logs.")
	} else {
		b.WriteString("\n" + r.Diagnose(context.Background()))
	}
	return errors.New(b.String())
}

// unrecognizedLine extracts the line go-plugin could not parse as a
// handshake from its error message, or "".
func unrecognizedLine(msg string) string {
	const prefix = "Unrecognized remote plugin message: "
	i := strings.Index(msg, prefix)
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(msg[i+len(prefix):], "\n")
	return strings.TrimSpace(line)
}

// Pid returns the worker's process id, which is also its process group and
// session id.
func (c *Client) Pid() int {
	c.runnerMu.Lock()
	defer c.runnerMu.Unlock()
	if c.runner == nil {
		return 0
	}
	return c.runner.Pid()
}

// WorkerInfo is a worker's answer to Info.
type WorkerInfo struct {
	ProtocolVersion int
	InkVersion      string
	Pid             int
}

// Info returns the worker's answer to Info, fetched by Start.
func (c *Client) Info() WorkerInfo {
	return WorkerInfo{ProtocolVersion: int(c.info.GetProtocolVersion()), InkVersion: c.info.GetInkVersion(), Pid: int(c.info.GetPid())}
}

// Attempt opens the bidirectional stream of one attempt. The host sends Run
// first, then Cancel or TaskAnswer messages; the worker answers with events
// and task requests and ends with one Outcome, which the host acknowledges
// with Ack before it calls CloseSend. Cancelling ctx aborts the stream.
// Messages of up to MaxMessageSize pass in both directions.
func (c *Client) Attempt(ctx context.Context) (*HostStream, error) {
	stream, err := c.worker.Attempt(ctx,
		grpc.MaxCallRecvMsgSize(MaxMessageSize),
		grpc.MaxCallSendMsgSize(MaxMessageSize))
	if err != nil {
		return nil, fmt.Errorf("worker %d attempt: %w", c.Pid(), err)
	}
	return &HostStream{s: stream}, nil
}

// shutdownWait bounds Kill's polite phase: the shutdown call and go-plugin's
// own 2 s wait for the worker to exit.
const shutdownWait = 3 * time.Second

// Kill stops the worker: it asks it to shut down (its open streams end),
// waits up to 2 s for it to exit, then SIGKILLs it, and finally SIGKILLs
// its whole process group, and every other group of its session (its tools'
// commands), so that nothing it started remains.
// A worker that does not answer the shutdown call at all (stopped or wedged)
// is SIGKILLed after shutdownWait.
// It then removes the worker's socket directory. Kill blocks until the
// worker is gone, is idempotent and may be called concurrently.
func (c *Client) Kill() { c.stop(true) }

// Shutdown ends a worker whose work is done, as Kill does, except that a
// worker that exits on its own with status 0 is not swept: an ink worker
// exits with 0 only after it has ended every process it started, so its
// process group and session are empty and searching /proc for them would
// find nothing. A worker that exits otherwise, or must be killed, is swept
// as Kill sweeps. Shutdown blocks until the worker is gone, is idempotent
// and may be called concurrently with Kill (the first call decides).
func (c *Client) Shutdown() { c.stop(false) }

// stop is Kill (sweep) and Shutdown (no sweep after a clean exit).
func (c *Client) stop(sweep bool) {
	c.killOnce.Do(func() {
		done := make(chan struct{})
		go func() {
			c.plugin.Kill()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(shutdownWait):
			// A stopped (SIGSTOP) or wedged worker never answers the
			// shutdown call, and go-plugin waits for that answer with no
			// bound: SIGKILL the group, which ends the call.
			c.killProcessGroup()
			<-done
		}
		if sweep || !c.exitedCleanly() {
			c.killProcessGroup()
		}
		c.runnerMu.Lock()
		pluginDir := c.pluginDir
		c.runnerMu.Unlock()
		if pluginDir != "" && filepath.Dir(pluginDir) == c.socket.dir {
			_ = os.RemoveAll(pluginDir)
		}
		if c.socket.fallback {
			_ = os.RemoveAll(c.socket.dir)
		}
	})
}

// Exited reports whether the worker process has exited.
func (c *Client) Exited() bool {
	return c.plugin.Exited()
}

// Done returns a channel closed once the worker process has exited and was
// reaped; ProcessState of the ClientConfig's Cmd is then set.
func (c *Client) Done() <-chan struct{} {
	c.runnerMu.Lock()
	r := c.runner
	c.runnerMu.Unlock()
	if r == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return r.exited
}

// KillNow SIGKILLs the worker's process group and every other group of its
// session at once, without asking it to shut down, then cleans up as Kill
// does. It blocks until the worker is gone. The host decided this end, so
// go-plugin's warnings about it are logged at debug level; the caller logs
// why, if there is a reason worth a warning.
func (c *Client) KillNow() {
	c.hostLog.endOnPurpose()
	c.killProcessGroup()
	c.Kill()
}

// exitedCleanly reports whether the worker process has exited by itself
// with status 0.
func (c *Client) exitedCleanly() bool {
	c.runnerMu.Lock()
	r := c.runner
	c.runnerMu.Unlock()
	if r == nil {
		return false
	}
	select {
	case <-r.exited:
		return r.waitErr == nil
	default:
		return false
	}
}

// killProcessGroup SIGKILLs the worker's process group, if it was started.
func (c *Client) killProcessGroup() {
	c.runnerMu.Lock()
	r := c.runner
	c.runnerMu.Unlock()
	if r != nil {
		_ = r.Kill(context.Background())
	}
}

// socketDirFromEnv returns the value of PLUGIN_UNIX_SOCKET_DIR in env, or "".
func socketDirFromEnv(env []string) string {
	prefix := plugin.EnvUnixSocketDir + "="
	dir := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, prefix) {
			dir = strings.TrimPrefix(kv, prefix)
		}
	}
	return dir
}

// socketPath returns the worker's socket path, or "" if unknown.
func (c *Client) socketPath() string {
	rc := c.plugin.ReattachConfig()
	if rc == nil || rc.Addr == nil {
		return ""
	}
	return rc.Addr.String()
}
