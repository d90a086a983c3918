package apitest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
)

// StallLimit is the stall limit of the stall cases, in place of the 60 s a
// real run uses.
const StallLimit = 200 * time.Millisecond

// FastRetries retries quickly, so that a test sees every retry and the
// final failure in well under a second of backoff.
var FastRetries = providers.RetryPolicy{Attempts: 3, Budget: time.Minute, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond}

// StallAPI is a streaming provider under the stall cases.
type StallAPI struct {
	// Name is the provider's name as its errors start with.
	Name string
	// Serve starts the provider's fake API with replies.
	Serve func(t testing.TB, replies ...Reply) *Server
	// Open opens the provider against s with StallLimit for both the
	// response headers and the stream's idle time, under FastRetries.
	Open func(s *Server) model.Provider
	// PartialEvents is how many events of the fixture cut.sse make a
	// reply that has begun ("Half of an ans") and not ended.
	PartialEvents int
}

// Stalls checks that a server that sends headers and then nothing, and one
// that never answers at all, are transient failures: each retry is
// announced, and the final error names the stall and the variable that
// sets its limit. A stall after part of the reply is a stream cut, not
// retried.
func Stalls(t *testing.T, api StallAPI) {
	partial := strings.Join(strings.SplitAfter(Fixture(t, "cut.sse"), "\n\n")[:api.PartialEvents], "")
	tests := []struct {
		name     string
		reply    Reply
		requests int
		retries  int
		kind     model.ErrorKind
		want     []string
	}{
		{name: "stalls after headers", reply: Reply{Hang: true}, requests: 3, retries: 2, kind: model.KindTransient,
			want: []string{api.Name + ": the response stream sent nothing for 200ms (INK_STREAM_IDLE_TIMEOUT sets this limit)", "gave up after 3 attempts"}},
		{name: "never answers", reply: Reply{Silent: true}, requests: 3, retries: 2, kind: model.KindTransient,
			want: []string{api.Name + ": no response headers within 200ms", "INK_RESPONSE_HEADER_TIMEOUT sets this limit", "gave up after 3 attempts"}},
		{name: "stalls mid-answer", reply: Reply{Body: partial, Hang: true}, requests: 1, retries: 0, kind: model.KindStreamCut,
			want: []string{"the response stream sent nothing for 200ms", "the reply is partial"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := api.Serve(t, tt.reply)
			var rec Recorder
			msg, err := streamWithin(t, api.Open(s), &rec)
			var pe *model.ProviderError
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("error %v (%T), want a %v provider error", err, err, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := len(s.Requests(t)); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			retries := rec.OfType("retry")
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

// SlowStreamIsNoStall checks that a server that pauses between events,
// each pause shorter than the limit, is never taken for stalled, however
// long the whole answer takes (the fixture text.sse).
func SlowStreamIsNoStall(t *testing.T, api StallAPI) {
	s := api.Serve(t, Reply{Body: Fixture(t, "text.sse"), Trickle: StallLimit / 4})
	var rec Recorder
	msg, err := streamWithin(t, api.Open(s), &rec)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() == "" || len(rec.OfType("retry")) != 0 || len(s.Requests(t)) != 1 {
		t.Errorf("text %q, %d retries, %d requests", msg.Text(), len(rec.OfType("retry")), len(s.Requests(t)))
	}
}

// streamWithin runs one Stream and fails the test if it has not returned
// within a generous bound (a stall must never become a hang).
func streamWithin(t *testing.T, p model.Provider, rec *Recorder) (model.Message, error) {
	t.Helper()
	type result struct {
		msg model.Message
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := p.Stream(context.Background(), model.Request{System: "You are ink.", Messages: []model.Message{model.UserText("hi")}}, rec.Add)
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
