package ipc

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/inkdev/ink/session"
)

// BenchmarkBareForkExec is the floor for BenchmarkStartReady: starting the
// same binary and waiting for it to exit, without any handshake.
func BenchmarkBareForkExec(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{roleEnv + "=exit"}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartReady measures spawn-to-ready (handshake and Info) plus
// Kill of one worker.
func BenchmarkStartReady(b *testing.B) {
	run := b.TempDir()
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{roleEnv + "=worker", "PATH=" + os.Getenv("PATH")}
		c, err := Start(context.Background(), ClientConfig{Cmd: cmd, SocketDir: run})
		if err != nil {
			b.Fatal(err)
		}
		c.Kill()
	}
}

// BenchmarkAttemptRoundTrip measures one attempt stream on a running
// worker: Run, an event, a task request and its answer, another event and
// the outcome.
func BenchmarkAttemptRoundTrip(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{roleEnv + "=worker", "PATH=" + os.Getenv("PATH")}
	c, err := Start(context.Background(), ClientConfig{Cmd: cmd, SocketDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Kill()
	answer := TaskAnswer{CorrelationID: "c1", Content: "ok", Record: &session.TaskRecord{Version: 1, AttemptID: session.NewID(), ChildID: session.NewID(), Launched: true, Cwd: "/work", Status: session.StatusCompleted, Turns: 1}}
	for b.Loop() {
		stream, err := c.Attempt(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if err := stream.Send(runMsg("roundtrip", "{}")); err != nil {
			b.Fatal(err)
		}
		for {
			msg, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := msg.(TaskRequest); ok {
				if err := stream.Send(answer); err != nil {
					b.Fatal(err)
				}
			}
			if _, ok := msg.(Outcome); ok {
				break
			}
		}
		_ = stream.Send(Ack{})
		_ = stream.CloseSend()
	}
}
