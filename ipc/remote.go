package ipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/inkdev/ink/ipc/internal/pb"
	"github.com/inkdev/ink/version"
)

// remoteGreeting starts the first line a remote worker writes on its
// stream, before any gRPC byte: "ink-worker-remote PROTOCOL VERSION".
const remoteGreeting = "ink-worker-remote"

// maxGreeting bounds the greeting line the host reads.
const maxGreeting = 512

// VersionMismatchError reports a remote worker built from another version
// of ink than the host. A remote worker runs wherever the launch command
// takes it (another machine, a container image), so unlike a local worker
// it can be any build: the host refuses it at the handshake. Callers
// branch on it with errors.As.
type VersionMismatchError struct {
	// Worker is the ink version the remote worker reports.
	Worker string
	// Host is this ink's version.
	Host string
}

// Error names both versions and says how to fix it.
func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("the remote worker is ink %s and this ink is %s: "+
		"install the same version of ink where the launch command runs it", e.Worker, e.Host)
}

// ExecConfig says how to launch one remote worker through a command.
type ExecConfig struct {
	// Command is run with /bin/sh -c, in its own session. Whatever it runs
	// (ssh, docker run -i, a local wrapper) must end up running `ink worker
	// --remote` with its stdin and stdout connected to the command's: they
	// carry the greeting line and then the gRPC stream.
	Command string
	// Env is the complete environment of the shell; nothing of the host's
	// own environment is added. Keys never go here: they travel inside
	// the attempt's Run message.
	Env []string
	// Dir is the shell's working directory ("" : the host's).
	Dir string
	// Stderr receives the command's standard error: the remote worker's
	// stray output and whatever ssh or docker say. Nil discards it.
	Stderr io.Writer
	// StartTimeout bounds the greeting and the Info call; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
}

// RemoteClient is the host's handle on one worker reached through a launch
// command's standard input and output. Its methods are safe for concurrent
// use; the caller must call Kill or Shutdown when done with it.
type RemoteClient struct {
	cmd    *exec.Cmd // nil for a worker dialed over the network
	conn   *grpc.ClientConn
	stream net.Conn
	worker pb.WorkerClient
	info   *pb.InfoReply
	exited chan struct{}

	stopOnce sync.Once
}

// StartExec runs cfg.Command, reads the remote worker's greeting, checks
// that it speaks ProtocolVersion (else a *ProtocolMismatchError) and is the
// same ink version (else a *VersionMismatchError), connects gRPC over the
// command's stdin and stdout and calls Info. The stream is as private as
// the command makes it (ssh encrypts it; a local pipe is the host's own):
// it carries no authentication of its own. On any error nothing is left
// running.
func StartExec(ctx context.Context, cfg ExecConfig) (*RemoteClient, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return nil, errors.New("start remote worker: the launch command is empty; give one that runs `ink worker --remote`, e.g. exec:ssh HOST ink worker --remote")
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	cmd := exec.Command("/bin/sh", "-c", cfg.Command)
	cmd.Env = cfg.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stderr = cfg.Stderr
	// Pipes of our own, not cmd's: Wait closes those when the command
	// exits, and a command may exit (a wrapper that forks) while the
	// worker it started keeps the stream.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start remote worker: %w", err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		_, _ = childIn.Close(), stdin.Close()
		return nil, fmt.Errorf("start remote worker: %w", err)
	}
	cmd.Stdin, cmd.Stdout = childIn, childOut
	err = cmd.Start()
	_, _ = childIn.Close(), childOut.Close()
	if err != nil {
		_, _ = stdin.Close(), stdout.Close()
		return nil, fmt.Errorf("start remote worker: run %q: %w", cfg.Command, err)
	}
	c := &RemoteClient{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	fail := func(err error) (*RemoteClient, error) {
		_, _ = stdin.Close(), stdout.Close()
		c.killSession()
		<-c.exited
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	in := bufio.NewReaderSize(stdout, 64<<10)
	greeting, err := readGreeting(ctx, in, c.exited)
	if err != nil {
		return fail(fmt.Errorf("start remote worker (%s): %w", cfg.Command, err))
	}
	if err := checkGreeting(greeting); err != nil {
		return fail(fmt.Errorf("start remote worker (%s): %w", cfg.Command, err))
	}

	c.stream = &streamConn{r: in, w: stdin, closers: []io.Closer{stdin, stdout}}
	if err := c.connect(ctx, c.stream, cfg.Command, true); err != nil {
		return fail(err)
	}
	return c, nil
}

// connect speaks gRPC over conn, the worker's stream, and calls Info:
// a worker of another protocol is refused. On error conn is closed.
func (c *RemoteClient) connect(ctx context.Context, conn net.Conn, what string, waitForReady bool, opts ...grpc.DialOption) error {
	var dialed sync.Once
	dial := func(context.Context, string) (net.Conn, error) {
		var got net.Conn
		dialed.Do(func() { got = conn })
		if got == nil {
			return nil, errors.New("the remote worker's stream broke and cannot be dialed again")
		}
		return got, nil
	}
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)),
	}, opts...)
	var err error
	c.conn, err = grpc.NewClient("passthrough:///ink-remote-worker", opts...)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("start remote worker: %w", err)
	}
	c.worker = pb.NewWorkerClient(c.conn)
	c.info, err = c.worker.Info(ctx, &pb.InfoRequest{}, grpc.WaitForReady(waitForReady))
	if err != nil {
		_ = c.conn.Close()
		_ = conn.Close()
		return fmt.Errorf("start remote worker (%s): Info: %w", what, err)
	}
	if got := int(c.info.GetProtocolVersion()); got != ProtocolVersion {
		_ = c.conn.Close()
		_ = conn.Close()
		return &ProtocolMismatchError{Worker: got, Host: ProtocolVersion}
	}
	return nil
}

// readGreeting reads the first line of the command's output, bounded in
// size and in time; a command that exits first or says something else is
// described.
func readGreeting(ctx context.Context, in *bufio.Reader, exited <-chan struct{}) (string, error) {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		var b strings.Builder
		for b.Len() < maxGreeting {
			c, err := in.ReadByte()
			if err != nil {
				got <- line{b.String(), err}
				return
			}
			if c == '\n' {
				got <- line{b.String(), nil}
				return
			}
			b.WriteByte(c)
		}
		got <- line{b.String(), errors.New("line too long")}
	}()
	select {
	case l := <-got:
		switch {
		case l.err == nil:
			return l.s, nil
		case l.s == "":
			return "", errors.New("the command printed nothing and closed its output: it must run `ink worker --remote` (is ink installed and on PATH where it runs?)")
		default:
			return "", fmt.Errorf("the command's first output line was %q, not an ink worker's greeting: it must run `ink worker --remote` and print nothing before it", clip(l.s))
		}
	case <-ctx.Done():
		select {
		case <-exited:
			return "", errors.New("the command exited before an ink worker greeted: it must run `ink worker --remote`")
		default:
		}
		return "", fmt.Errorf("no ink worker greeted within the start timeout (%w): the command must run `ink worker --remote` and print nothing before it", ctx.Err())
	}
}

// checkGreeting checks a greeting line's protocol and version.
func checkGreeting(line string) error {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != remoteGreeting {
		return fmt.Errorf("the command's first output line was %q, not an ink worker's greeting: it must run `ink worker --remote` and print nothing before it", clip(line))
	}
	proto, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("the worker's greeting %q names no protocol version", clip(line))
	}
	if proto != ProtocolVersion {
		return &ProtocolMismatchError{Worker: proto, Host: ProtocolVersion}
	}
	if host := version.Ink; f[2] != host {
		return &VersionMismatchError{Worker: f[2], Host: host}
	}
	return nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Pid returns the launch command's process id (the shell, or what it
// exec'ed), which leads its own session and process group. It is not the
// remote worker's pid: Info says that.
func (c *RemoteClient) Pid() int {
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Info returns the worker's answer to Info, fetched by StartExec.
func (c *RemoteClient) Info() WorkerInfo {
	return WorkerInfo{ProtocolVersion: int(c.info.GetProtocolVersion()), InkVersion: c.info.GetInkVersion(), Pid: int(c.info.GetPid())}
}

// Attempt opens the bidirectional stream of one attempt, as
// Client.Attempt does.
func (c *RemoteClient) Attempt(ctx context.Context) (*HostStream, error) {
	stream, err := c.worker.Attempt(ctx)
	if err != nil {
		return nil, fmt.Errorf("remote worker attempt: %w", err)
	}
	return &HostStream{s: stream}, nil
}

// ProcessState is how the launch command ended, once Done is closed (nil
// before).
func (c *RemoteClient) ProcessState() *os.ProcessState {
	select {
	case <-c.exited:
		if c.cmd == nil {
			return nil
		}
		return c.cmd.ProcessState
	default:
		return nil
	}
}

// Done returns a channel closed once the launch command has exited.
func (c *RemoteClient) Done() <-chan struct{} { return c.exited }

// Shutdown ends a worker whose work is done: it closes the connection, so
// the worker sees its host gone and exits once no attempt runs, and waits
// up to shutdownWait for the command to exit before it kills every
// process of the command's session. It blocks until the command is gone and is
// idempotent.
func (c *RemoteClient) Shutdown() { c.stop(false) }

// Kill closes the connection and SIGKILLs every process of the launch
// command's session at once. A remote worker (beyond ssh, in a container) sees its
// stream end and stops as a worker whose host is lost does. Kill blocks
// until the command is gone and is idempotent.
func (c *RemoteClient) Kill() { c.stop(true) }

func (c *RemoteClient) stop(now bool) {
	c.stopOnce.Do(func() {
		_ = c.conn.Close()
		_ = c.stream.Close()
		if c.cmd == nil {
			// A worker dialed over the network: closing the connection is
			// all the host can do; the worker stops as its host is gone.
			close(c.exited)
			return
		}
		if !now {
			select {
			case <-c.exited:
				return
			case <-time.After(shutdownWait):
			}
		}
		c.killSession()
		<-c.exited
	})
}

// killSession SIGKILLs every process of the launch command's session
// (killSession): the command leads a session of its own, and what it
// started through sh -c or unshare may have left its process group.
func (c *RemoteClient) killSession() {
	killSession(c.cmd.Process.Pid)
}

// streamConn is a net.Conn over a reader and a writer (a process's pipes).
// Deadlines are not supported and are ignored: gRPC's keepalive and the
// processes' lifetimes bound every wait instead.
type streamConn struct {
	r       io.Reader
	w       io.Writer
	closers []io.Closer
	once    sync.Once
}

var _ net.Conn = (*streamConn)(nil)

func (s *streamConn) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *streamConn) Write(p []byte) (int, error) { return s.w.Write(p) }

// Close closes both directions once.
func (s *streamConn) Close() error {
	s.once.Do(func() {
		for _, c := range s.closers {
			_ = c.Close()
		}
	})
	return nil
}

func (s *streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (s *streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (s *streamConn) SetDeadline(time.Time) error      { return nil }
func (s *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (s *streamConn) SetWriteDeadline(time.Time) error { return nil }

// streamAddr names both ends of a streamConn.
type streamAddr struct{}

func (streamAddr) Network() string { return "stdio" }
func (streamAddr) String() string  { return "stdio" }

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	conn   chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{conn: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.conn <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conn:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return streamAddr{} }

// ServeRemote serves h over this process's standard input and output, for
// `ink worker --remote`: it writes the greeting line, then speaks gRPC on
// them, and returns when the host is gone (the stream closed) and no
// Attempt handler is still running, or when no host spoke within a minute.
// Before it writes anything it moves the stream to descriptors of its own
// and points descriptors 0 and 1 at /dev/null and standard error, so that
// nothing the worker or the programs it starts print can corrupt the
// stream: stray output reaches the host's log of the attempt. Call it at
// most once per process, before anything else uses gRPC.
func ServeRemote(h Handler, logger *slog.Logger) error {
	in, out, err := takeStdio()
	if err != nil {
		return fmt.Errorf("serve remote worker: %w", err)
	}
	return serveRemote(h, in, out, logger, defaultConnectTimeout)
}

// takeStdio duplicates descriptors 0 and 1 to close-on-exec descriptors
// for the stream, and replaces them with /dev/null and standard error.
func takeStdio() (in, out *os.File, err error) {
	inFD, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, nil, fmt.Errorf("standard input: %w", err)
	}
	outFD, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		_ = unix.Close(inFD)
		return nil, nil, fmt.Errorf("standard output: %w", err)
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err == nil {
		err = unix.Dup2(null, 0)
		_ = unix.Close(null)
	}
	if err == nil {
		err = unix.Dup2(2, 1)
	}
	if err != nil {
		_ = unix.Close(inFD)
		_ = unix.Close(outFD)
		return nil, nil, fmt.Errorf("detach standard input and output: %w", err)
	}
	return os.NewFile(uintptr(inFD), "stream-in"), os.NewFile(uintptr(outFD), "stream-out"), nil
}

// serveRemote is ServeRemote over in and out.
func serveRemote(h Handler, in io.ReadCloser, out io.WriteCloser, logger *slog.Logger, connectTimeout time.Duration) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if _, err := fmt.Fprintf(out, "%s %d %s\n", remoteGreeting, ProtocolVersion, version.Ink); err != nil {
		return fmt.Errorf("serve remote worker: greet the host: %w", err)
	}
	conn := &streamConn{r: in, w: out, closers: []io.Closer{in, out}}
	return serveOn(h, newOneConnListener(conn), logger, connectTimeout)
}

// serveOn serves h to the one host that lis hands out and returns when
// the host is gone and no Attempt handler still runs, or when no host
// connected within connectTimeout.
func serveOn(h Handler, lis net.Listener, logger *slog.Logger, connectTimeout time.Duration, opts ...grpc.ServerOption) error {
	watch := newHostWatch()
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.StatsHandler(watch)}, opts...)
	srv := grpc.NewServer(opts...)
	pb.RegisterWorkerServer(srv, &workerServer{handler: h, infoVersion: ProtocolVersion, watch: watch})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	connectDeadline := time.NewTimer(connectTimeout)
	defer connectDeadline.Stop()
	for {
		select {
		case <-connectDeadline.C:
			if watch.neverConnected() {
				logger.Warn("ink host never spoke on the stream; exiting", "waited", connectTimeout.String())
				return nil
			}
		case <-watch.changed:
		}
		if watch.hostGone() {
			logger.Debug("ink host gone and no attempt running; remote worker done")
			return nil
		}
	}
}
