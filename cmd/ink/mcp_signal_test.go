package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPStoppedBySignal: an MCP client that stops its server with a
// signal is not told to press Ctrl-C again: over a pipe nobody pressed it.
// The server names the signal, stops and exits.
func TestMCPStoppedBySignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		e := newEnv(t)
		s := e.startMCP("--model", "script:"+e.write("s.yaml", mcpScript))
		if err := s.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.done:
		case <-time.After(time.Minute):
			t.Fatalf("ink mcp did not exit on %v", sig)
		}
		stderr := s.stderr.String()
		if !strings.Contains(stderr, "cancelling every agent on "+map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]) || strings.Contains(stderr, "Ctrl-C") {
			t.Errorf("on %v, stderr:\n%s", sig, stderr)
		}
	}
}
