package providers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
)

// step is what one attempt of a fakeProvider does.
type step struct {
	deltas []model.Delta
	usage  model.Usage
	err    error
}

// fakeProvider plays its steps in order, one per Stream call.
type fakeProvider struct {
	mu    sync.Mutex
	steps []step
	calls int
}

func (f *fakeProvider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	f.mu.Lock()
	s := f.steps[min(f.calls, len(f.steps)-1)]
	f.calls++
	f.mu.Unlock()
	msg := model.Message{Role: model.RoleAssistant}
	for _, d := range s.deltas {
		onDelta(d)
		if d.Type == "text" {
			msg.Content = append(msg.Content, model.Block{Type: "text", Text: d.Text})
		}
	}
	u := s.usage
	u.Incomplete = s.err != nil
	msg.Usage = &u
	return msg, s.err
}

func (f *fakeProvider) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func transient(reason string, retryAfter time.Duration) error {
	return &model.ProviderError{Provider: "fake", Kind: model.KindTransient, Reason: reason, RetryAfter: retryAfter, Message: "fake: " + reason + ": try later"}
}

var fast = providers.RetryPolicy{Attempts: 4, Budget: 5 * time.Second, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}

func collect(ds *[]model.Delta, mu *sync.Mutex) func(model.Delta) {
	return func(d model.Delta) { mu.Lock(); *ds = append(*ds, d); mu.Unlock() }
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	ok := step{deltas: []model.Delta{{Type: "text", Text: "done"}}, usage: model.Usage{Input: 10, Output: 2}}
	cases := []struct {
		name       string
		policy     providers.RetryPolicy
		steps      []step
		wantCalls  int
		wantRetry  int
		wantErr    string // "" = success
		wantUsage  model.Usage
		wantNotice string
	}{
		{"success needs no retry", fast, []step{ok}, 1, 0, "", model.Usage{Input: 10, Output: 2}, ""},
		{"transient then success", fast, []step{{err: transient("503 server error", 0)}, {err: transient("429 rate limited", 0)}, ok}, 3, 2, "",
			model.Usage{Input: 10, Output: 2}, "fake: 503 server error; retrying in "},
		{"exhausted keeps the provider message", fast, []step{{err: transient("529 overloaded", 0)}}, 4, 3,
			"fake: 529 overloaded: try later (gave up after 4 attempts over", model.Usage{Incomplete: true}, ""},
		{"auth is not retried", fast, []step{{err: &model.ProviderError{Kind: model.KindAuth, Message: "fake: the API key was rejected (401)"}}}, 1, 0,
			"the API key was rejected", model.Usage{Incomplete: true}, ""},
		{"a failure after content is returned as is", fast, []step{{deltas: []model.Delta{{Type: "text", Text: "half"}}, err: &model.ProviderError{Kind: model.KindStreamCut, Message: "fake: the response stream was cut"}}}, 1, 0,
			"stream was cut", model.Usage{Incomplete: true}, ""},
		{"Retry-After beyond the budget gives up at once", providers.RetryPolicy{Attempts: 5, Budget: 50 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond},
			[]step{{err: transient("429 rate limited", time.Hour)}}, 1, 0, "gave up after 1 attempt: the server asked to wait 1h0m0s, beyond the 50ms retry budget", model.Usage{Incomplete: true}, ""},
		{"tokens of a failed attempt are counted", fast, []step{{usage: model.Usage{Input: 700}, err: transient("stream ended before any reply", 0)}, ok}, 2, 1, "",
			model.Usage{Input: 710, Output: 2, Incomplete: true}, "fake: stream ended before any reply; retrying in"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fp := &fakeProvider{steps: tc.steps}
			var mu sync.Mutex
			var deltas []model.Delta
			msg, err := providers.Retrying("fake", fp, tc.policy).Stream(context.Background(), model.Request{}, collect(&deltas, &mu))
			if fp.count() != tc.wantCalls {
				t.Errorf("%d attempts, want %d", fp.count(), tc.wantCalls)
			}
			var notices []string
			for _, d := range deltas {
				if d.Type == "retry" {
					notices = append(notices, d.Text)
				}
			}
			if len(notices) != tc.wantRetry {
				t.Errorf("retry notices %q, want %d", notices, tc.wantRetry)
			}
			if tc.wantNotice != "" && (len(notices) == 0 || !strings.HasPrefix(notices[0], tc.wantNotice)) {
				t.Errorf("first notice %q, want prefix %q", notices, tc.wantNotice)
			}
			for i, n := range notices {
				if want := "(attempt " + string(rune('2'+i)) + "/"; !strings.Contains(n, want) {
					t.Errorf("notice %q lacks %q", n, want)
				}
			}
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
			if msg.Usage == nil || *msg.Usage != tc.wantUsage {
				t.Errorf("usage %+v, want %+v", msg.Usage, tc.wantUsage)
			}
		})
	}
}

func TestRetryWaitHonoursCancel(t *testing.T) {
	t.Parallel()
	fp := &fakeProvider{steps: []step{{err: transient("429 rate limited", time.Minute)}}}
	ctx, cancel := context.WithCancel(context.Background())
	policy := providers.DefaultRetryPolicy()
	done := make(chan error, 1)
	go func() {
		_, err := providers.Retrying("fake", fp, policy).Stream(ctx, model.Request{}, func(d model.Delta) {
			if d.Type == "retry" {
				cancel()
			}
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a cancelled wait did not return within 2s")
	}
	if fp.count() != 1 {
		t.Errorf("%d attempts after cancel, want 1", fp.count())
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	t.Parallel()
	fp := &fakeProvider{steps: []step{{err: transient("503 server error", 0)}}}
	policy := providers.RetryPolicy{Attempts: 4, Budget: 10 * time.Second, BaseDelay: 20 * time.Millisecond, MaxDelay: 50 * time.Millisecond}
	var mu sync.Mutex
	var deltas []model.Delta
	start := time.Now()
	providers.Retrying("fake", fp, policy).Stream(context.Background(), model.Request{}, collect(&deltas, &mu))
	// Waits are in [10,20], [20,40], [25,50] ms: at least 55 ms in all.
	if elapsed := time.Since(start); elapsed < 55*time.Millisecond {
		t.Errorf("three backoffs took %v, want at least 55ms", elapsed)
	}
}
