package loop_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
)

func TestSafeCallsOverlapInWindowAndReturnInOrder(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var calls []string
	for i := range 5 {
		// Later calls finish first, so order must come from the loop.
		calls = append(calls, call("read", fmt.Sprint("r", i), 150-20*i))
	}
	var s sink
	opts := s.options(twoTurns(t, calls...), &sleepTool{name: "read", safe: true, rec: rec})
	opts.MaxParallel = 2
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.maxRunning(); got != 2 {
		t.Errorf("at most %d calls ran at once, want exactly 2 (window 2)", got)
	}
	want := []string{"r0 done", "r1 done", "r2 done", "r3 done", "r4 done"}
	if got := resultContents(t, res.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("results = %v, want call order %v", got, want)
	}
	var ends []string
	for _, e := range s.eventsOf(loop.EventToolEnd) {
		ends = append(ends, e.Result.Content)
	}
	if !reflect.DeepEqual(ends, want) {
		t.Errorf("tool.end order = %v, want %v", ends, want)
	}
}

func TestSlidingWindowRefillsAsEachFinishes(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	calls := []string{call("read", "long", 600)}
	for i := range 6 {
		calls = append(calls, call("read", fmt.Sprint("short", i), 40))
	}
	var s sink
	opts := s.options(twoTurns(t, calls...), &sleepTool{name: "read", safe: true, rec: rec})
	opts.MaxParallel = 2
	if _, err := loop.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	long, _ := rec.get("long")
	// In waves the third call would wait for the long one; in a sliding
	// window every short call runs beside it.
	for i := range 6 {
		sp, _ := rec.get(fmt.Sprint("short", i))
		if !sp.end.Before(long.end) {
			t.Errorf("short%d ended %v after the long call; the window did not refill", i, sp.end.Sub(long.end))
		}
	}
	// tool.end durations exclude queueing: the last short call waited in
	// the queue far longer than it ran.
	last, _ := rec.get("short5")
	queued := last.start.Sub(long.start)
	for _, e := range s.eventsOf(loop.EventToolEnd) {
		if e.Result.Content == "short5 done" && e.Duration >= queued {
			t.Errorf("short5 duration %v includes its %v in the queue", e.Duration, queued)
		}
	}
	// Every call was read before any ran; every call that ran got a
	// tool.running event.
	var order []string
	s.mu.Lock()
	for _, e := range s.events {
		if e.Type == loop.EventToolStart || e.Type == loop.EventToolRunning {
			order = append(order, e.Type)
		}
	}
	s.mu.Unlock()
	want := strings.Repeat("tool.start ", 7) + strings.TrimSpace(strings.Repeat("tool.running ", 7))
	if got := strings.Join(order, " "); got != want {
		t.Errorf("start/running order = %s", got)
	}
}

func TestUnsafeCallsRunOneByOne(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	opts := s.options(
		twoTurns(t,
			call("read", "r1", 60), call("read", "r2", 60),
			call("bash", "b1", 30), call("bash", "b2", 30),
			call("read", "r3", 60), call("read", "r4", 60)),
		&sleepTool{name: "read", safe: true, rec: rec},
		&sleepTool{name: "bash", safe: false, rec: rec},
	)
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	get := func(l string) span { sp, _ := rec.get(l); return sp }
	overlap := func(a, b span) bool { return a.start.Before(b.end) && b.start.Before(a.end) }
	labels := []string{"r1", "r2", "b1", "b2", "r3", "r4"}
	for i, a := range labels {
		for _, b := range labels[i+1:] {
			both := (a == "r1" && b == "r2") || (a == "r3" && b == "r4")
			if got := overlap(get(a), get(b)); got != both {
				t.Errorf("%s and %s overlap = %v, want %v", a, b, got, both)
			}
		}
	}
	for i := 1; i < len(labels); i++ {
		if prev, cur := get(labels[i-1]), get(labels[i]); labels[i-1][0] != labels[i][0] && cur.start.Before(prev.end) {
			t.Errorf("%s started before %s ended", labels[i], labels[i-1])
		}
	}
	if got := len(results(t, res.Messages)); got != 6 {
		t.Errorf("%d results, want 6", got)
	}
}

func TestGateDenialAndUnknownTool(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	var gated []string
	opts := s.options(
		twoTurns(t, call("read", "r1", 1), call("bash", "b1", 1), `{tool: nope}`, call("read", "r2", 1)),
		&sleepTool{name: "read", safe: true, rec: rec},
		&sleepTool{name: "bash", safe: false, rec: rec},
	)
	opts.OnToolCall = func(ctx context.Context, c model.ToolCall) error {
		gated = append(gated, c.Name)
		if c.Name == "bash" {
			return errors.New("bash is not allowed for this agent; use read instead")
		}
		return nil
	}
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"read", "bash", "read"}; !reflect.DeepEqual(gated, want) {
		t.Errorf("gate saw %v, want %v (unknown tools never reach it)", gated, want)
	}
	if _, ran := rec.get("b1"); ran {
		t.Error("the denied bash call ran")
	}
	rs := results(t, res.Messages)
	if len(rs) != 4 {
		t.Fatalf("%d results, want 4", len(rs))
	}
	if !rs[1].IsError || rs[1].Content != "bash is not allowed for this agent; use read instead" {
		t.Errorf("denied call result = %+v", rs[1])
	}
	if !rs[2].IsError || rs[2].Content != "unknown tool nope; available: read, bash" {
		t.Errorf("unknown tool result = %+v", rs[2])
	}
	if rs[0].IsError || rs[3].IsError || rs[3].Content != "r2 done" {
		t.Errorf("allowed calls = %+v, %+v", rs[0], rs[3])
	}
	for _, e := range s.eventsOf(loop.EventToolRunning) {
		if e.Call.Name != "read" {
			t.Errorf("tool.running for %s, which never ran", e.Call.Name)
		}
	}
}
