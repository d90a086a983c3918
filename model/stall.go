package model

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultStallTimeout is how long a provider request may wait for its
// response headers, and a response stream for its next byte, before the
// wait counts as a stall (a transient error, retried).
const DefaultStallTimeout = 60 * time.Second

// The variables that set the stall limits (a Go duration such as "90s",
// or a number of seconds; "0" or "off" waits for ever).
const (
	ResponseHeaderTimeoutVar = "INK_RESPONSE_HEADER_TIMEOUT"
	StreamIdleTimeoutVar     = "INK_STREAM_IDLE_TIMEOUT"
)

// StallError is a provider request that stopped making progress: no
// response headers arrived within the header limit, or the response body
// sent no byte for the idle limit. It is transient: a retry may well get
// an answer.
type StallError struct {
	// Headers is true for a request that got no response headers, false
	// for a response stream that went silent.
	Headers bool
	// After is the limit that was reached.
	After time.Duration
}

// Error says what stalled, for how long, and which variable sets the limit.
func (e *StallError) Error() string {
	if e.Headers {
		return fmt.Sprintf("no response headers within %s (the server took the request but did not answer; %s sets this limit)", e.After, ResponseHeaderTimeoutVar)
	}
	return fmt.Sprintf("the response stream sent nothing for %s (%s sets this limit)", e.After, StreamIdleTimeoutVar)
}

// StallGuard wraps base (nil = http.DefaultTransport) so that a request
// whose response headers do not arrive within header, or whose response
// body then sends no byte for idle, is abandoned with a *StallError. Only
// time spent waiting on the server counts: a caller that is slow to read
// the body is never taken for a stalled server. A limit of 0 or less
// disables that check. The returned RoundTripper is safe for concurrent
// use; the body it returns must be closed, as any response body.
func StallGuard(base http.RoundTripper, header, idle time.Duration) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &stallGuard{base: base, header: header, idle: idle}
}

type stallGuard struct {
	base         http.RoundTripper
	header, idle time.Duration
}

// stall is the state of one guarded request: once abandoned, done is
// closed and err says why.
type stall struct {
	once   sync.Once
	done   chan struct{}
	err    *StallError
	cancel context.CancelFunc
}

// abandon records why the request stalled (the first reason wins) and
// cancels it.
func (s *stall) abandon(e *StallError) {
	s.once.Do(func() { s.err = e; close(s.done) })
	s.cancel()
}

// wait returns the stall once abandon has recorded it; only call it when
// abandon has run or is sure to run (a timer that could not be stopped).
func (s *stall) wait() error {
	<-s.done
	return s.err
}

// abandoned returns the stall if the request was abandoned, else nil.
func (s *stall) abandoned() *StallError {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// RoundTrip implements http.RoundTripper.
func (g *stallGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	s := &stall{done: make(chan struct{}), cancel: cancel}
	stopped := true
	var timer *time.Timer
	if g.header > 0 {
		timer = time.AfterFunc(g.header, func() { s.abandon(&StallError{Headers: true, After: g.header}) })
	}
	res, err := g.base.RoundTrip(req.WithContext(ctx))
	if timer != nil {
		stopped = timer.Stop()
	}
	if err != nil {
		cancel()
		if !stopped {
			return nil, s.wait()
		}
		return nil, err
	}
	res.Body = &idleBody{body: res.Body, idle: g.idle, stall: s}
	return res, nil
}

// idleBody abandons the request when one Read waits longer than idle.
type idleBody struct {
	body  io.ReadCloser
	idle  time.Duration
	stall *stall
}

func (b *idleBody) Read(p []byte) (int, error) {
	stopped := true
	var timer *time.Timer
	if b.idle > 0 {
		timer = time.AfterFunc(b.idle, func() { b.stall.abandon(&StallError{After: b.idle}) })
	}
	n, err := b.body.Read(p)
	if timer != nil {
		stopped = timer.Stop()
	}
	if err != nil && err != io.EOF {
		if !stopped {
			return n, b.stall.wait()
		}
		if e := b.stall.abandoned(); e != nil {
			return n, e
		}
	}
	return n, err
}

// Close closes the body and releases the request's context.
func (b *idleBody) Close() error {
	err := b.body.Close()
	b.stall.cancel()
	return err
}

// GuardedClient returns a copy of hc (nil = a client with Go's default
// transport and no overall timeout) whose transport is wrapped in a
// StallGuard, and whose response bodies fail a line longer than
// MaxReplyBytes (LineGuard). For header and idle, 0 means DefaultStallTimeout and a
// negative value no limit. Provider adapters build their client with it.
func GuardedClient(hc *http.Client, header, idle time.Duration) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	c.Transport = lineGuardTransport{StallGuard(c.Transport, stallLimit(header), stallLimit(idle))}
	return &c
}

// stallLimit turns a configured limit into StallGuard's: 0 is the default,
// negative is none.
func stallLimit(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultStallTimeout
	case d < 0:
		return 0
	}
	return d
}

// ParseStallTimeout reads a stall limit as the INK_*_TIMEOUT variables give
// it: a Go duration ("90s", "2m"), a whole number of seconds ("90"), or
// "0"/"off" for no limit (returned as -1). "" is 0, the default.
func ParseStallTimeout(name, value string) (time.Duration, error) {
	value = strings.TrimSpace(value)
	switch strings.ToLower(value) {
	case "":
		return 0, nil
	case "0", "off", "none":
		return -1, nil
	}
	if n, err := strconv.Atoi(value); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%s is not a duration: give one such as 90s or 5m, or off to wait for ever", name, value)
	}
	return d, nil
}
