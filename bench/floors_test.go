package bench

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// The floors: what the same work costs without ink.

// helloFloor is a fork/exec of a Go program that does nothing, run to its
// exit: the cost of starting any Go process on this machine.
func helloFloor(reps int) floor {
	return floor{name: "hello", reps: reps, run: func(b *testing.B) {
		if err := exec.Command(bins.hello).Run(); err != nil {
			b.Fatal(err)
		}
	}}
}

// pluginHandshake is testdata/plugin's handshake.
var pluginHandshake = plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "BENCH_PLUGIN", MagicCookieValue: "floor"}

// startPlugin starts the smallest go-plugin plugin over gRPC, completes
// the handshake, pings it through go-plugin's health service and kills it:
// the cost of a go-plugin worker that does nothing.
func startPlugin(b *testing.B) {
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginHandshake,
		Plugins:          map[string]plugin.Plugin{"nothing": nothingPlugin{}},
		Cmd:              exec.Command(bins.plugin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
	})
	defer c.Kill()
	rpc, err := c.Client()
	if err != nil {
		b.Fatal(err)
	}
	if err := rpc.Ping(); err != nil {
		b.Fatal(err)
	}
}

// nothingPlugin is the host side of testdata/plugin: it dispenses nothing.
type nothingPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (nothingPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (nothingPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return struct{}{}, nil
}

// pluginFloor is startPlugin, n at once.
func pluginFloor(n int) floor {
	return floor{name: "plugin", run: func(b *testing.B) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { startPlugin(b) })
		}
		wg.Wait()
	}}
}

// helloAll is n fork/execs of the empty Go program at once, waited for.
func helloAll(n int) floor {
	return floor{name: "hello", run: func(b *testing.B) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if err := exec.Command(bins.hello).Run(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}}
}
