package ipc

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/inkdev/ink/ipc/internal/pb"
)

// ProtocolVersion is the version of the worker wire this ink speaks. It is
// negotiated in the go-plugin handshake and checked again through Info.
// Bump it whenever worker.proto or the meaning of its messages changes
// incompatibly.
const ProtocolVersion = 5

// MagicCookieKey is the environment variable that marks a process as an ink
// worker started by an ink host. It is a guard against running `ink worker`
// by hand, not a security measure.
const MagicCookieKey = "INK_WORKER"

// MagicCookieValue is the fixed value of [MagicCookieKey].
const MagicCookieValue = "f3a1c8e2-ink-worker-7d5b"

// MaxMessageSize bounds one gRPC message in either direction (64 MiB).
// Larger payloads must be split by the caller.
const MaxMessageSize = 64 << 20

// pluginName is the name the worker service is dispensed under.
const pluginName = "worker"

// handshakeConfig is the go-plugin handshake shared by host and worker.
// ProtocolVersion is left zero: versions are negotiated through
// VersionedPlugins.
func handshakeConfig() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// workerPlugin is the go-plugin binding of the Worker gRPC service. On the
// worker side server is set; on the host side it is nil and the plugin only
// builds clients.
type workerPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	server pb.WorkerServer
}

var _ plugin.GRPCPlugin = (*workerPlugin)(nil)

// GRPCServer registers the Worker service on the worker's gRPC server.
func (p *workerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.server == nil {
		return errors.New("ipc: worker plugin has no server to register")
	}
	pb.RegisterWorkerServer(s, p.server)
	return nil
}

// GRPCClient returns a pb.WorkerClient over the host's connection.
func (p *workerPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewWorkerClient(c), nil
}

// pluginSets returns the VersionedPlugins map offering p under version.
func pluginSets(version int, p *workerPlugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{version: {pluginName: p}}
}
