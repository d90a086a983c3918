package main

import (
	"strings"
	"testing"
	"time"
)

// TestStallLimitsReachWorkers: INK_RESPONSE_HEADER_TIMEOUT, set where ink
// is started, bounds the requests of a child, which runs in a worker whose
// environment holds no provider variable. A server that sends its response
// headers after 3 s serves a child under a 5 s limit; under a 1 s limit
// every attempt is abandoned after 1 s and retried, and the child fails
// naming the variable that sets the limit. This test waits for real
// seconds: the stall guard measures the server's real delay.
func TestStallLimitsReachWorkers(t *testing.T) {
	t.Parallel()
	const headerDelay = 3 * time.Second
	for _, tc := range []struct {
		limit string
		ok    bool
	}{{"5s", true}, {"1s", false}} {
		t.Run(tc.limit, func(t *testing.T) {
			t.Parallel()
			srv := newFakeProvider(t, func(n int, s seen) reply {
				time.Sleep(headerDelay)
				return oaiText("answered late", 30, 3)
			})
			e := providerEnv(t, "INK_RESPONSE_HEADER_TIMEOUT="+tc.limit)
			p, code := e.run("task", "--model", "openai/slow-model", "--base-url", srv.srv.URL+"/v1", "say something")
			reqs := len(srv.requests())
			if tc.ok {
				if code != 0 || strings.TrimSpace(p.snapshot()) == "" || !strings.HasPrefix(p.snapshot(), "answered late") || reqs != 1 {
					t.Fatalf("under a %s limit: exit %d after %d requests\nstdout:\n%s\nstderr:\n%s", tc.limit, code, reqs, p.snapshot(), p.stderr.String())
				}
				return
			}
			stderr := p.stderr.String()
			if code != exitFailed || reqs < 2 {
				t.Fatalf("under a %s limit: exit %d after %d requests, want a failure after retries\nstderr:\n%s", tc.limit, code, reqs, stderr)
			}
			for _, want := range []string{"no response headers within 1s", "INK_RESPONSE_HEADER_TIMEOUT sets this limit", "gave up after"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("the failure does not say %q:\n%s", want, stderr)
				}
			}
		})
	}
}
