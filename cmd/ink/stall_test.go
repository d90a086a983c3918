package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStallLimitsReachWorkers: INK_RESPONSE_HEADER_TIMEOUT and
// INK_STREAM_IDLE_TIMEOUT, set where ink is started, bound the requests of
// a child, which runs in a worker whose environment holds no provider
// variable. A server that sends its response headers after 3 s serves a
// child under a 5 s header limit; under a 1 s limit every attempt is
// abandoned after 1 s and retried, and the child fails naming the variable
// that sets the limit. Likewise a server whose stream goes silent for 3 s
// after its first chunk, under the idle limit. This test waits for real
// seconds: the stall guard measures the server's real delay.
func TestStallLimitsReachWorkers(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	// lateHeaders answers after delay; silentStream sends its headers and
	// first chunk at once, then nothing for delay.
	lateHeaders := func(n int, s seen) reply {
		time.Sleep(delay)
		return oaiText("answered late", 30, 3)
	}
	silentStream := func(n int, s seen) reply {
		all := oaiText("answered late", 30, 3)
		first, rest := all.events[:1], all.events[1:]
		return reply{events: first, stream: func(w io.Writer) error {
			time.Sleep(delay)
			for _, ev := range rest {
				if _, err := fmt.Fprintf(w, "data: %s\n\n", ev.data); err != nil {
					return err
				}
			}
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			return nil
		}}
	}
	for _, tc := range []struct {
		variable, limit string
		server          func(int, seen) reply
		ok              bool
		says            string
	}{
		{"INK_RESPONSE_HEADER_TIMEOUT", "5s", lateHeaders, true, ""},
		{"INK_RESPONSE_HEADER_TIMEOUT", "1s", lateHeaders, false, "no response headers within 1s"},
		{"INK_STREAM_IDLE_TIMEOUT", "5s", silentStream, true, ""},
		{"INK_STREAM_IDLE_TIMEOUT", "1s", silentStream, false, "the response stream sent nothing for 1s"},
	} {
		t.Run(tc.variable+"="+tc.limit, func(t *testing.T) {
			t.Parallel()
			srv := newFakeProvider(t, tc.server)
			e := providerEnv(t, tc.variable+"="+tc.limit)
			p, code := e.run("task", "--model", "openai/slow-model", "--base-url", srv.srv.URL+"/v1", "say something")
			reqs := len(srv.requests())
			if tc.ok {
				if code != 0 || strings.TrimSpace(p.snapshot()) == "" || !strings.HasPrefix(p.snapshot(), "answered late") || reqs != 1 {
					t.Fatalf("under %s=%s: exit %d after %d requests\nstdout:\n%s\nstderr:\n%s", tc.variable, tc.limit, code, reqs, p.snapshot(), p.stderr.String())
				}
				return
			}
			stderr := p.stderr.String()
			if code != exitFailed || reqs < 2 {
				t.Fatalf("under %s=%s: exit %d after %d requests, want a failure after retries\nstderr:\n%s", tc.variable, tc.limit, code, reqs, stderr)
			}
			for _, want := range []string{tc.says, tc.variable + " sets this limit", "gave up after"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("the failure does not say %q:\n%s", want, stderr)
				}
			}
		})
	}
}
