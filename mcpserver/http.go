package mcpserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// ListenAddr checks an --http address and returns the one to listen on. A
// bare port means 127.0.0.1:PORT. Any address that is not loopback (an
// empty host, 0.0.0.0, a LAN address, a name other than localhost) is
// refused unless allowRemote: whoever reaches the port can run agents that
// edit the user's files.
func ListenAddr(addr string, allowRemote bool) (string, error) {
	if _, err := strconv.Atoi(addr); err == nil {
		addr = "127.0.0.1:" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %q is not HOST:PORT (%v); e.g. --http 127.0.0.1:8765, or just --http 8765", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("--http %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if allowRemote {
		return addr, nil
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback {
		shown := host
		if shown == "" {
			shown = "every interface"
		}
		return "", fmt.Errorf("--http %q listens on %s, beyond this machine: anyone who reaches the port could run agents that edit your files. "+
			"Listen on loopback (--http 127.0.0.1:%s), or add --allow-remote if you mean it and protect the port yourself", addr, shown, port)
	}
	return addr, nil
}

// HTTPConfig configures the streamable HTTP transport.
type HTTPConfig struct {
	// Token is the bearer token every request must carry (NewToken,
	// ReadTokenFile); at least MinTokenLen characters.
	Token string
	// Idle ends a session without any request from its client for this
	// long (0: never).
	Idle time.Duration
}

// Handler serves the streamable HTTP transport: every MCP session over it
// is one ink parent session. Only requests that carry cfg.Token and no
// Origin header reach a session (see guard); the SDK's handler also
// refuses, on a loopback listener, a Host that is not loopback (DNS
// rebinding). A session ends — its children stopped as host lost — when
// the client deletes it, or after cfg.Idle without any request from its
// client. The reaper stops with ctx.
func (s *Server) Handler(ctx context.Context, cfg HTTPConfig) (http.Handler, error) {
	if len(cfg.Token) < MinTokenLen {
		return nil, errNoToken
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Logger: s.cfg.Logger})
	w := &httpSessions{s: s, inner: h, idle: cfg.Idle, seen: map[string]*activity{}}
	if cfg.Idle > 0 {
		go w.reap(ctx)
	}
	return guard(cfg.Token, w), nil
}

// httpSessions watches the HTTP sessions' activity, so that a client that
// vanished without deleting its session is treated as gone.
type httpSessions struct {
	s     *Server
	inner http.Handler
	idle  time.Duration

	mu   sync.Mutex
	seen map[string]*activity
}

// activity is one session's open requests and last request end.
type activity struct {
	open int
	last time.Time
}

func (w *httpSessions) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	if id != "" && r.Method == http.MethodDelete {
		// Stop the children first: the SDK's close waits for the calls in
		// flight, which end with their children.
		w.s.endSessionID(id)
		w.mu.Lock()
		delete(w.seen, id)
		w.mu.Unlock()
	}
	if id != "" {
		w.mu.Lock()
		a := w.seen[id]
		if a == nil {
			a = &activity{}
			w.seen[id] = a
		}
		a.open++
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			a.open--
			a.last = time.Now()
			w.mu.Unlock()
		}()
	}
	w.inner.ServeHTTP(rw, r)
}

// reap ends the sessions idle for longer than w.idle, and deletes them from
// the SDK's handler as their client would have.
func (w *httpSessions) reap(ctx context.Context) {
	t := time.NewTicker(min(w.idle/4, 30*time.Second) + time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var gone []string
		w.mu.Lock()
		for id, a := range w.seen {
			if a.open == 0 && !a.last.IsZero() && time.Since(a.last) > w.idle {
				gone = append(gone, id)
				delete(w.seen, id)
			}
		}
		w.mu.Unlock()
		for _, id := range gone {
			w.s.cfg.Logger.Info("MCP session idle; ending it", "mcpSession", id, "idle", w.idle.String())
			w.s.endSessionID(id)
			req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, "/", strings.NewReader(""))
			req.Header.Set(sessionHeader, id)
			w.inner.ServeHTTP(discard{}, req)
		}
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
