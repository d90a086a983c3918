package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// BenchmarkSpawn measures starting one `ink worker` cold, each iteration
// beside the floors "plugin", a start of the smallest go-plugin plugin
// over gRPC (handshake, ping, kill), and "hello", a fork/exec of a Go
// program that does nothing.
//   - spawn-ready: ipc.Start (fork/exec, go-plugin handshake over the Unix
//     socket, protocol check, Info) and Kill;
//   - first-rpc: spawn-ready plus the first Attempt stream round trip: the
//     Run message goes out and the worker's first event comes back, by which
//     time it holds the transcript's lease and has the prompt on disk.
func BenchmarkSpawn(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	ctx := context.Background()
	start := func(b *testing.B) *ipc.Client {
		cmd := h.command(bin, "worker")
		c, err := ipc.Start(ctx, ipc.ClientConfig{Cmd: cmd, SocketDir: filepath.Join(h.home, "run")})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	plugin := floor{name: "plugin", run: startPlugin}

	b.Run("spawn-ready", func(b *testing.B) {
		paired(b, func(b *testing.B) {
			c := start(b)
			if v := c.Info().ProtocolVersion; v != ipc.ProtocolVersion {
				b.Fatalf("worker speaks protocol %d", v)
			}
			c.Kill()
		}, plugin, helloFloor(5))
	})
	b.Run("first-rpc", func(b *testing.B) {
		script := h.write(b, "one-turn.yaml", oneTurnScript)
		n := 0
		paired(b, func(b *testing.B) {
			n++
			c := start(b)
			defer c.Kill()
			stream, err := c.Attempt(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := stream.Send(ipc.Run{Spec: oneTurnSpec(h, script, fmt.Sprintf("spawn-%d", n))}); err != nil {
				b.Fatal(err)
			}
			m, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := m.(ipc.Event); !ok {
				b.Fatalf("first worker message is %#v, want an event", m)
			}
		}, plugin, helloFloor(5))
	})
}

// oneTurnSpec is the attempt of a fresh main agent with no tools on the
// script model at scriptPath.
func oneTurnSpec(h *hermetic, scriptPath, tag string) ipc.AttemptSpec {
	id := session.NewID()
	return ipc.AttemptSpec{
		InkHome:    h.home,
		Transcript: session.MainPath(h.home, h.dir, id),
		Create:     &session.Header{ID: id, Cwd: h.dir},
		AttemptID:  tag + "-" + id,
		SessionID:  id,
		Label:      "main",
		Binding:    model.Binding{Provider: "script", Model: scriptPath},
		Cwd:        h.dir,
		Root:       h.dir,
		Prompt:     "say ok",
	}
}
