// Command plugin is the smallest go-plugin plugin over gRPC: it completes
// the handshake and serves go-plugin's own services (health, controller,
// stdio) and nothing else. It is the floor of a go-plugin worker's start.
package main

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Handshake is shared with the benchmark that starts this plugin.
var Handshake = plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "BENCH_PLUGIN", MagicCookieValue: "floor"}

// nothing is a gRPC plugin that registers no service of its own.
type nothing struct{ plugin.NetRPCUnsupportedPlugin }

func (nothing) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothing) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return struct{}{}, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         map[string]plugin.Plugin{"nothing": nothing{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
