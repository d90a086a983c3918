package ipc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/event"
)

// listenWorker serves echoHandler on 127.0.0.1:0 pinned to supervisor and
// returns its greeting and the channel serveListen's result arrives on.
func listenWorker(t *testing.T, supervisor string) (ListenGreeting, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveListen(echoHandler{}, ListenConfig{Addr: "127.0.0.1:0", Supervisor: supervisor, Greet: pw}, nil, time.Minute)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no greeting: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	g, err := ParseListenGreeting(line)
	if err != nil {
		t.Fatalf("ParseListenGreeting(%q): %v", line, err)
	}
	return g, done
}

func tcpDial(addr string) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// TestListenRoundTrip: a listening worker announces its certificate's
// hash; the supervisor pinned to it and pinned by it runs an attempt, and
// the worker ends once the supervisor is gone.
func TestListenRoundTrip(t *testing.T) {
	t.Parallel()
	host, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	g, done := listenWorker(t, host.Hash())
	c, err := DialRemote(t.Context(), DialConfig{Dial: tcpDial(g.Addr), Identity: host, Worker: g.Cert})
	if err != nil {
		t.Fatalf("DialRemote: %v", err)
	}
	if info := c.Info(); info.ProtocolVersion != ProtocolVersion || info.InkVersion != inkVersion() {
		t.Errorf("Info = %+v", info)
	}
	stream, err := c.Attempt(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(runMsg("big", "hello over tls")); err != nil {
		t.Fatal(err)
	}
	if ev, ok := recvMsg(t, stream).(Event); !ok || ev.Body != (event.Warning{Text: "hello over tls"}) {
		t.Fatalf("first message %#v, want the echoed payload", ev)
	}
	out, ok := recvMsg(t, stream).(Outcome)
	if !ok || out.Text != "received 14 bytes" {
		t.Fatalf("outcome %#v", out)
	}
	c.Shutdown()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the worker ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop once its supervisor was gone")
	}
}

// TestListenRefusesOthers: a client with another certificate fails the
// handshake, and a supervisor pinned to another worker hash refuses the
// worker; the worker still serves its own supervisor afterwards.
func TestListenRefusesOthers(t *testing.T) {
	t.Parallel()
	host, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := listenWorker(t, host.Hash())
	if _, err := DialRemote(t.Context(), DialConfig{Dial: tcpDial(g.Addr), Identity: stranger, Worker: g.Cert, StartTimeout: 5 * time.Second}); err == nil {
		t.Fatal("a client the worker does not pin was served")
	}
	if _, err := DialRemote(t.Context(), DialConfig{Dial: tcpDial(g.Addr), Identity: host, Worker: stranger.Hash(), StartTimeout: 5 * time.Second}); err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Fatalf("a worker whose hash is not the pinned one was accepted: %v", err)
	}
	c, err := DialRemote(t.Context(), DialConfig{Dial: tcpDial(g.Addr), Identity: host, Worker: g.Cert})
	if err != nil {
		t.Fatalf("the pinned supervisor after two refusals: %v", err)
	}
	c.Kill()
}

// TestListenGreetingVersion: a listening worker of another version is
// refused from its greeting, before any dial.
func TestListenGreetingVersion(t *testing.T) {
	t.Parallel()
	_, err := ParseListenGreeting("ink-worker-remote 5 v0.0.1-other cert=" + strings.Repeat("ab", 32) + " listen=[::]:7777")
	var vm *VersionMismatchError
	var pm *ProtocolMismatchError
	if !errors.As(err, &vm) && !errors.As(err, &pm) {
		t.Fatalf("err = %v, want a version or protocol mismatch", err)
	}
	if _, err := ParseListenGreeting("hello"); err == nil {
		t.Fatal("a line that is no greeting was accepted")
	}
}
