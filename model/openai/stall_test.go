package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/openai"
	"github.com/inkdev/ink/model/providers"
)

// stallLimit is the stall limit of these tests, in place of the 60 s a
// real run uses.
const stallLimit = 200 * time.Millisecond

// fastRetries retries quickly, so that a test sees every retry and the
// final failure in well under a second of backoff.
var fastRetries = providers.RetryPolicy{Attempts: 3, Budget: time.Minute, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond}

func stallingProvider(f *fakeAPI) model.Provider {
	p := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-5.4",
		ResponseHeaderTimeout: stallLimit, StreamIdleTimeout: stallLimit})
	return providers.Retrying("openai", p, fastRetries)
}

// streamWithin runs one Stream and fails the test if it has not returned
// within a generous bound (a stall must never become a hang).
func streamWithin(t *testing.T, p model.Provider, rec *recorder) (model.Message, error) {
	t.Helper()
	type result struct {
		msg model.Message
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := p.Stream(context.Background(), userAsks("hi"), rec.add)
		done <- result{msg, err}
	}()
	select {
	case r := <-done:
		return r.msg, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("Stream hung on a stalled server")
		return model.Message{}, nil
	}
}

// TestStalls: a server that sends headers and then nothing, and one that
// never answers at all, are transient failures: each retry is announced,
// and the final error names the stall and the variable that sets its
// limit. A stall after part of the reply is a stream cut, not retried.
func TestStalls(t *testing.T) {
	t.Parallel()
	partial := strings.Join(strings.SplitAfter(fixture(t, "cut.sse"), "\n\n")[:2], "")
	tests := []struct {
		name     string
		reply    reply
		requests int
		retries  int
		kind     model.ErrorKind
		want     []string
	}{
		{name: "stalls after headers", reply: reply{hang: true}, requests: 3, retries: 2, kind: model.KindTransient,
			want: []string{"openai: the response stream sent nothing for 200ms (INK_STREAM_IDLE_TIMEOUT sets this limit)", "gave up after 3 attempts"}},
		{name: "never answers", reply: reply{silent: true}, requests: 3, retries: 2, kind: model.KindTransient,
			want: []string{"openai: no response headers within 200ms", "INK_RESPONSE_HEADER_TIMEOUT sets this limit", "gave up after 3 attempts"}},
		{name: "stalls mid-answer", reply: reply{body: partial, hang: true}, requests: 1, retries: 0, kind: model.KindStreamCut,
			want: []string{"the response stream sent nothing for 200ms", "the reply is partial"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, tt.reply)
			var rec recorder
			msg, err := streamWithin(t, stallingProvider(f), &rec)
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("error %v (%T), want a %v provider error", err, err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(f.requests(t)); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			retries := rec.ofType("retry")
			if len(retries) != tt.retries {
				t.Errorf("%d retry notices, want %d", len(retries), tt.retries)
			}
			for _, r := range retries {
				if !strings.Contains(r.Text, "for 200ms; retrying in") {
					t.Errorf("retry notice %q does not name the stall", r.Text)
				}
			}
			if tt.kind == model.KindStreamCut && msg.Text() != "Half of an ans" {
				t.Errorf("partial message %q", msg.Text())
			}
		})
	}
}

// TestSlowStreamIsNoStall: a server that pauses between events, each pause
// shorter than the limit, is never taken for stalled, however long the
// whole answer takes.
func TestSlowStreamIsNoStall(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{body: fixture(t, "text.sse"), trickle: stallLimit / 4})
	var rec recorder
	msg, err := streamWithin(t, stallingProvider(f), &rec)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() == "" || len(rec.ofType("retry")) != 0 || len(f.requests(t)) != 1 {
		t.Errorf("text %q, %d retries, %d requests", msg.Text(), len(rec.ofType("retry")), len(f.requests(t)))
	}
}
