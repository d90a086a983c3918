package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
)

var errHostLost = errors.New("the supervisor was lost")

// cancelWhen cancels ctx with cause once cond holds, polling every
// millisecond; it gives up after 5 s.
func cancelWhen(cancel context.CancelCauseFunc, cause error, cond func() bool) {
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for !cond() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel(cause)
	}()
}

func TestCancelQueuedCallsNeverStart(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	opts := s.options(
		twoTurns(t,
			call("read", "q1", 10000), call("read", "q2", 10000), call("read", "q3", 10000), call("read", "q4", 10000),
			call("bash", "q5", 10000)),
		&sleepTool{name: "read", safe: true, rec: rec},
		&sleepTool{name: "bash", safe: false, rec: rec},
	)
	opts.MaxParallel = 2
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cancelWhen(cancel, errHostLost, func() bool { return len(rec.started()) == 2 })

	start := time.Now()
	res, err := loop.Run(ctx, opts)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run took %v after the cancel", el)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errHostLost) {
		t.Fatalf("err = %v; want it to wrap both context.Canceled and the cause", err)
	}
	if !strings.Contains(err.Error(), "interrupted: the supervisor was lost") {
		t.Errorf("err = %q; want it to say why", err)
	}
	if got := rec.started(); len(got) != 2 || got[0] != "q1" || got[1] != "q2" {
		t.Errorf("started %v; want only the two calls in the window", got)
	}
	rs := results(t, s.messages())
	if len(rs) != 5 {
		t.Fatalf("%d results persisted, want one for each of the 5 calls", len(rs))
	}
	for i, r := range rs {
		if !r.IsError || !strings.Contains(r.Content, "interrupted: the supervisor was lost") {
			t.Errorf("result %d = %+v; want an isError result saying why", i, r)
		}
		if i >= 2 && !strings.Contains(r.Content, "not started") {
			t.Errorf("queued call %d result = %q; want it to say it never started", i, r.Content)
		}
	}
	if res.Turns != 1 {
		t.Errorf("turns = %d; no model call may follow the interrupt", res.Turns)
	}
}

func TestToolIgnoringCancelIsAbandonedAfterGrace(t *testing.T) {
	t.Parallel()
	// The grace and the cancel run on the fake clock of a synctest bubble.
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		release := make(chan struct{})
		var s sink
		opts := s.options(
			twoTurns(t, call("read", "stubborn", 60000, "ignoreCtx: true"), call("read", "polite", 60000)),
			&sleepTool{name: "read", safe: true, rec: rec, release: release},
		)
		opts.AbortGrace = 150 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		ctx, stop := context.WithCancelCause(ctx)
		cancelWhen(stop, errors.New("ctrl-c"), func() bool { return len(rec.started()) == 2 })

		start := time.Now()
		_, err := loop.Run(ctx, opts)
		elapsed := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if elapsed > 5*time.Second {
			t.Errorf("Run took %v with a 150ms grace", elapsed)
		}
		rs := results(t, s.messages())
		if len(rs) != 2 {
			t.Fatalf("%d results, want 2", len(rs))
		}
		want := "tool read did not stop within 150ms of the interrupt; its result was abandoned (interrupted: ctrl-c)"
		if !rs[0].IsError || rs[0].Content != want {
			t.Errorf("stubborn result = %q, want %q", rs[0].Content, want)
		}
		if !rs[1].IsError || !strings.Contains(rs[1].Content, "polite stopped") || !strings.Contains(rs[1].Content, "interrupted: ctrl-c") {
			t.Errorf("polite result = %q; want its own error plus the cause", rs[1].Content)
		}

		// The stubborn tool returns late: its result is dropped.
		before := len(s.messages())
		close(release)
		synctest.Wait() // every goroutine of the bubble has run to a stop
		if sp, _ := rec.get("stubborn"); sp.end.IsZero() {
			t.Fatal("the stubborn tool did not return once released")
		}
		if after := len(s.messages()); after != before {
			t.Errorf("a late result was delivered after Run returned (%d -> %d messages)", before, after)
		}
	})
}

func TestDeadlineDuringModelCall(t *testing.T) {
	t.Parallel()
	var s sink
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := loop.Run(ctx, s.options(parseScript(t, "rules:\n  - reply: {text: late, delay: 1h}\n")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "interrupted: context deadline exceeded") {
		t.Errorf("err = %q", err)
	}
	if res.Turns != 1 || len(s.messages()) != 0 || !res.Usage.Incomplete {
		t.Errorf("turns %d, %d messages, usage %+v; want one cut-short turn and nothing persisted", res.Turns, len(s.messages()), res.Usage)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errHostLost)
	var s sink
	res, err := loop.Run(ctx, s.options(parseScript(t, "rules:\n  - reply: {text: hi}\n")))
	if !errors.Is(err, errHostLost) || res.Turns != 0 {
		t.Errorf("err %v, turns %d; want the cause and no model call", err, res.Turns)
	}
}

func TestGateIgnoringCancel(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	opts := s.options(twoTurns(t, call("read", "r1", 1), call("read", "r2", 1)), &sleepTool{name: "read", safe: true, rec: rec})
	opts.AbortGrace = 50 * time.Millisecond
	hung := make(chan struct{})
	defer close(hung)
	entered := make(chan struct{}, 2)
	opts.OnToolCall = func(ctx context.Context, c model.ToolCall) error {
		entered <- struct{}{}
		<-hung // a gate that waits for an answer nobody gives
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-entered; cancel(errHostLost) }()
	_, err := loop.Run(ctx, opts)
	if !errors.Is(err, errHostLost) {
		t.Fatalf("err = %v", err)
	}
	if len(rec.started()) != 0 {
		t.Errorf("tools ran after an interrupted gate: %v", rec.started())
	}
	rs := results(t, s.messages())
	if len(rs) != 2 || !strings.Contains(rs[0].Content, "interrupted: the supervisor was lost") || !strings.Contains(rs[1].Content, "not started") {
		t.Errorf("results = %+v", rs)
	}
}
