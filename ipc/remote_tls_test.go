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
	"github.com/inkdev/ink/version"
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
	if info := c.Info(); info.ProtocolVersion != ProtocolVersion || info.InkVersion != version.Ink {
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

// freezer is a TCP relay that can stop relaying, as a frozen or
// partitioned supervisor's machine does: the connection stays open and
// nothing crosses it.
type freezer struct {
	lis    net.Listener
	frozen chan struct{}
}

func newFreezer(t *testing.T, to string) *freezer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	f := &freezer{lis: lis, frozen: make(chan struct{})}
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				_ = in.Close()
				continue
			}
			t.Cleanup(func() { _, _ = in.Close(), out.Close() })
			go f.relay(in, out)
			go f.relay(out, in)
		}
	}()
	return f
}

// relay copies src to dst until frozen, then holds both open.
func (f *freezer) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-f.frozen:
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestListenStopsWhenItsHostFreezes: a worker whose supervisor goes
// silent without closing anything (a frozen machine, a partition) sees
// its connection die by keepalive and stops on its own within seconds.
func TestListenStopsWhenItsHostFreezes(t *testing.T) {
	t.Parallel()
	host, err := NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	g, done := listenWorker(t, host.Hash())
	relay := newFreezer(t, g.Addr)
	c, err := DialRemote(t.Context(), DialConfig{Dial: tcpDial(relay.lis.Addr().String()), Identity: host, Worker: g.Cert})
	if err != nil {
		t.Fatalf("DialRemote: %v", err)
	}
	t.Cleanup(c.Kill)
	frozenAt := time.Now()
	close(relay.frozen)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the worker ended with %v", err)
		}
		if waited := time.Since(frozenAt); waited > 4*remoteKeepalive+time.Second {
			t.Errorf("the worker stopped %v after its host froze, want within about %v", waited, 2*remoteKeepalive)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker still serves a host that froze 30 s ago")
	}
}
