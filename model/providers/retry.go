package providers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/inkdev/ink/model"
)

// RetryPolicy bounds ink's retries of transient provider failures (429,
// 5xx, 529 overloaded, a reset connection, a stream that broke before any
// reply arrived). It is the only retry policy: the SDKs' own are off.
type RetryPolicy struct {
	// Attempts is the total number of requests, the first included.
	Attempts int
	// Budget bounds the time from the first request to the start of the
	// last; a wait that would pass it is not taken.
	Budget time.Duration
	// BaseDelay is the first backoff; it doubles on each retry, with jitter.
	BaseDelay time.Duration
	// MaxDelay caps one computed backoff (a server's Retry-After is honoured
	// as asked, within Budget).
	MaxDelay time.Duration
}

// DefaultRetryPolicy is 5 attempts within 2 minutes, backing off from 1 s
// up to 30 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Attempts: 5, Budget: 2 * time.Minute, BaseDelay: time.Second, MaxDelay: 30 * time.Second}
}

// retrying is a Provider that retries its inner provider's transient
// failures. It is safe for concurrent use when the inner provider is.
type retrying struct {
	name   string
	inner  model.Provider
	policy RetryPolicy
}

var _ model.Provider = (*retrying)(nil)

// Retrying wraps p so that a transient failure that happens before any part
// of the reply reached onDelta is retried under policy; each retry is
// announced through onDelta as a Delta of Type "retry". Once part of the
// reply has been delivered a failure is returned as it is, with the partial
// message, since what was shown cannot be taken back.
func Retrying(name string, p model.Provider, policy RetryPolicy) model.Provider {
	if policy.Attempts < 1 {
		policy.Attempts = 1
	}
	return &retrying{name: name, inner: p, policy: policy}
}

// Stream implements model.Provider.
func (r *retrying) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	start := time.Now()
	var spent model.Usage // usage of failed attempts, added to the result
	for attempt := 1; ; attempt++ {
		delivered := false
		msg, err := r.inner.Stream(ctx, req, func(d model.Delta) {
			if d.Type != "retry" {
				delivered = true
			}
			onDelta(d)
		})
		if err == nil || delivered || !model.Retryable(err) || ctx.Err() != nil {
			return addSpent(msg, spent), err
		}
		if u := msg.Usage; u != nil && (u.Input > 0 || u.Output > 0 || u.CacheRead > 0 || u.CacheWrite > 0) {
			spent = spent.Add(*u)
		}
		msg.Usage = &model.Usage{Incomplete: true}
		msg = addSpent(msg, spent)
		var pe *model.ProviderError
		errors.As(err, &pe)
		if attempt >= r.policy.Attempts {
			return msg, giveUp(pe, fmt.Sprintf("gave up after %s over %s", attemptCount(attempt), roundDuration(time.Since(start))))
		}
		wait := r.backoff(attempt, pe.RetryAfter)
		if left := r.policy.Budget - time.Since(start); wait > left {
			why := fmt.Sprintf("gave up after %s: waiting %s more would pass the %s retry budget", attemptCount(attempt), roundDuration(wait), roundDuration(r.policy.Budget))
			if pe.RetryAfter > 0 {
				why = fmt.Sprintf("gave up after %s: the server asked to wait %s, beyond the %s retry budget", attemptCount(attempt), roundDuration(pe.RetryAfter), roundDuration(r.policy.Budget))
			}
			return msg, giveUp(pe, why)
		}
		onDelta(model.Delta{Type: "retry", Text: fmt.Sprintf("%s: %s; retrying in %s (attempt %d/%d)",
			r.name, pe.Reason, roundDuration(wait), attempt+1, r.policy.Attempts)})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return msg, model.NewTransportError(r.name, ctx.Err(), false)
		case <-t.C:
		}
	}
}

// backoff is the wait before retry number attempt: the server's Retry-After
// when it sent one, else an exponential delay with jitter in [d/2, d].
func (r *retrying) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := r.policy.BaseDelay
	for i := 1; i < attempt && d < r.policy.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.policy.MaxDelay)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// giveUp returns the final error: the last failure with why appended, the
// provider's own message kept.
func giveUp(last *model.ProviderError, why string) error {
	pe := *last
	pe.Message = last.Message + " (" + why + ")"
	return &pe
}

// addSpent adds the usage of earlier failed attempts to msg; counts from a
// failed attempt are a lower bound, so the sum is marked incomplete.
func addSpent(msg model.Message, spent model.Usage) model.Message {
	if spent == (model.Usage{}) {
		return msg
	}
	u := spent
	u.Incomplete = true
	if msg.Usage != nil {
		u = msg.Usage.Add(u)
	}
	msg.Usage = &u
	return msg
}

// roundDuration renders d for people: "2s", "1.5s", "250ms", "2m0s".
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// attemptCount renders a number of attempts: "1 attempt", "3 attempts".
func attemptCount(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
