package ipc

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/inkdev/ink/ipc/internal/pb"
	"github.com/inkdev/ink/version"
)

// Handler runs attempts on the worker side. ipc answers Info itself. Each
// Attempt stream is served on its own goroutine; should the host open
// several streams, their calls run concurrently.
type Handler interface {
	// Attempt runs one attempt over stream: it receives Run first, then
	// Cancel or TaskAnswer messages, and sends events and task requests and
	// finally one Outcome, then waits (bounded) for the host's Ack.
	// stream.Context() is done when the host cancels the stream, shuts the
	// worker down, or is lost (its process died); the handler should then
	// stop promptly, record what it must, and return.
	Attempt(stream *WorkerStream) error
}

// defaultConnectTimeout is how long a worker waits for its host to connect
// after the handshake before it concludes the host is gone.
const defaultConnectTimeout = time.Minute

// serveOptions are the knobs of serve; Serve uses the defaults and tests
// change them to play an incompatible or abandoned worker.
type serveOptions struct {
	// handshakeVersion is the version offered in the go-plugin handshake.
	handshakeVersion int
	// infoVersion is the version reported by Info.
	infoVersion int
	// connectTimeout bounds the wait for the host's first connection.
	connectTimeout time.Duration
}

// Serve serves h to the ink host that started this process, and returns
// when the host is gone and no Attempt handler is still running. The host
// is gone when it shut the worker down (Client.Kill), when its connection
// closed (the host process died), or when it never connected within a
// minute of the handshake. The caller should then exit the process; Serve
// leaves the listener to be torn down by the exit.
//
// Serve must be called at most once per process, before anything else in it
// uses gRPC. It prints the go-plugin handshake line on stdout and nothing
// else on stdout or stderr afterwards, so that a worker whose host died can
// never block on, or be killed by, a write to a pipe nobody reads:
//   - go-plugin's and gRPC's logs, the standard log package (and so the
//     default slog logger, unless replaced) and anything later written to
//     os.Stdout or os.Stderr go to logger, which should write to a file;
//   - a write to the original stdout or stderr that fails because the host is
//     gone returns EPIPE instead of killing the process with SIGPIPE.
//
// Serve removes the magic cookie and go-plugin's variables from the
// environment once they have been read, so processes the worker starts do
// not inherit them. A nil logger discards logs.
func Serve(h Handler, logger *slog.Logger) {
	serve(h, logger, serveOptions{
		handshakeVersion: ProtocolVersion,
		infoVersion:      ProtocolVersion,
		connectTimeout:   defaultConnectTimeout,
	})
}

func serve(h Handler, logger *slog.Logger, opts serveOptions) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	stdio := hardenStdio(logger)
	watch := newHostWatch()
	srv := &workerServer{handler: h, infoVersion: opts.infoVersion, watch: watch, stdio: stdio}

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  handshakeConfig(),
			VersionedPlugins: pluginSets(opts.handshakeVersion, &workerPlugin{server: srv}),
			GRPCServer: func(o []grpc.ServerOption) *grpc.Server {
				// go-plugin calls this once it has read its environment
				// and opened the listener.
				clearWorkerEnv()
				o = append(o,
					grpc.MaxRecvMsgSize(MaxMessageSize),
					grpc.MaxSendMsgSize(MaxMessageSize),
					grpc.StatsHandler(watch))
				return grpc.NewServer(o...)
			},
			Logger: newSlogHCLog(logger).Named("plugin"),
		})
	}()

	connectDeadline := time.NewTimer(opts.connectTimeout)
	defer connectDeadline.Stop()
	for {
		select {
		case <-stopped:
			watch.markStopped()
			stopped = nil
		case <-connectDeadline.C:
			if watch.neverConnected() {
				logger.Warn("ink host never connected; exiting", "waited", opts.connectTimeout.String())
				return
			}
		case <-watch.changed:
		}
		if watch.hostGone() {
			logger.Debug("ink host gone and no attempt running; worker done")
			stdio.flush()
			return
		}
	}
}

// clearWorkerEnv removes the handshake variables from the environment.
func clearWorkerEnv() {
	for _, k := range []string{
		MagicCookieKey,
		plugin.EnvUnixSocketDir,
		plugin.EnvUnixSocketGroup,
		"PLUGIN_PROTOCOL_VERSIONS",
		"PLUGIN_MIN_PORT",
		"PLUGIN_MAX_PORT",
		"PLUGIN_CLIENT_CERT",
	} {
		_ = os.Unsetenv(k)
	}
}

// workerServer implements the Worker service on the worker side.
type workerServer struct {
	pb.UnimplementedWorkerServer
	handler     Handler
	infoVersion int
	watch       *hostWatch
	stdio       *stdioGuard
}

var _ pb.WorkerServer = (*workerServer)(nil)

// Info answers the protocol version, ink's version and the pid.
func (s *workerServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoReply, error) {
	s.stdio.redirect()
	return &pb.InfoReply{
		ProtocolVersion: uint32(s.infoVersion),
		InkVersion:      version.Ink,
		Pid:             int64(os.Getpid()),
	}, nil
}

// Attempt runs the handler, keeping Serve from returning while it runs.
func (s *workerServer) Attempt(stream pb.Worker_AttemptServer) error {
	s.stdio.redirect()
	s.watch.attemptBegin()
	defer s.watch.attemptEnd()
	return s.handler.Attempt(&WorkerStream{s: stream})
}

// hostWatch follows the host's connections (as a gRPC stats handler) and
// the running attempts, to tell when the worker has nothing left to do. It
// is safe for concurrent use.
type hostWatch struct {
	mu        sync.Mutex
	conns     int
	connected bool
	stopped   bool
	attempts  int
	// changed receives a value whenever the state above changes.
	changed chan struct{}
}

var _ stats.Handler = (*hostWatch)(nil)

func newHostWatch() *hostWatch {
	return &hostWatch{changed: make(chan struct{}, 1)}
}

func (w *hostWatch) update(f func()) {
	w.mu.Lock()
	f()
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// TagConn returns ctx unchanged.
func (w *hostWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn counts the host's open connections.
func (w *hostWatch) HandleConn(_ context.Context, s stats.ConnStats) {
	switch s.(type) {
	case *stats.ConnBegin:
		w.update(func() { w.conns++; w.connected = true })
	case *stats.ConnEnd:
		w.update(func() { w.conns-- })
	}
}

// TagRPC returns ctx unchanged.
func (w *hostWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC ignores per-call statistics.
func (w *hostWatch) HandleRPC(context.Context, stats.RPCStats) {}

func (w *hostWatch) attemptBegin() { w.update(func() { w.attempts++ }) }
func (w *hostWatch) attemptEnd()   { w.update(func() { w.attempts-- }) }
func (w *hostWatch) markStopped()  { w.update(func() { w.stopped = true }) }

// hostGone reports whether the host shut the worker down or disconnected,
// and no attempt is running.
func (w *hostWatch) hostGone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return (w.stopped || (w.connected && w.conns == 0)) && w.attempts == 0
}

// neverConnected reports whether the host has not connected yet.
func (w *hostWatch) neverConnected() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.connected
}
