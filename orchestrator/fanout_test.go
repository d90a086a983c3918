package orchestrator

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// TestFanOutLabelsFollowCallOrder: children are labelled main/1..N in the
// order of the task calls in the assistant message, whatever order their
// requests arrive in; a request for a call the message did not show gets
// the next label. Each call gets its own answer and TaskRecord.
func TestFanOutLabelsFollowCallOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		prompts := []string{"one", "two", "three"}
		h := newHarness(t, Config{MaxDepth: 1}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() || !w.Turn(1) {
					return
				}
				var calls []model.ToolCall
				for i, p := range prompts {
					calls = append(calls, taskCallOf(fmt.Sprintf("call-%d", i+1), fmt.Sprintf(`{"prompt":%q}`, p)))
				}
				if !w.CallTasks(calls...) {
					return
				}
				// Requests arrive in reverse order, and one more that no
				// message announced.
				for i := len(calls) - 1; i >= 0; i-- {
					if !w.Request(calls[i].ID, string(calls[i].Args)) {
						return
					}
				}
				if !w.Request("call-x", `{"prompt":"four"}`) {
					return
				}
				for _, id := range []string{"call-1", "call-2", "call-3", "call-x"} {
					if _, ok := w.AwaitAnswer(id); !ok {
						return
					}
				}
				w.Complete("done", model.Usage{})
			},
			child: func(w *fakeWorker) {
				if w.Start() {
					w.Complete("answer to "+w.Spec.Prompt, model.Usage{Input: 10, Output: 1})
				}
			},
		}.play)
		res := h.run(t, RunOptions{Prompt: "fan out"})
		if res.Status != StatusCompleted {
			t.Fatalf("run %s: %s", res.Status, res.Reason)
		}
		main := h.l.byLabel("main")
		for i, p := range append(prompts, "four") {
			label := fmt.Sprintf("main/%d", i+1)
			w := h.l.byPrompt(p)
			if w == nil || w.Spec.Label != label {
				t.Errorf("child %q has label %v, want %s", p, w.Spec.Label, label)
				continue
			}
			id := fmt.Sprintf("call-%d", i+1)
			if p == "four" {
				id = "call-x"
			}
			a := main.answer(t, id)
			if !strings.HasPrefix(a.Content, "answer to "+p) || a.Record.TaskToolCallID != id || a.Record.ChildID != w.Spec.SessionID {
				t.Errorf("answer to %s = %q, record %+v", id, a.Content, a.Record)
			}
			start := h.rec.waitFor(t, "task.start of "+label, is[event.TaskStart](label)).Body.(event.TaskStart)
			end := h.rec.waitFor(t, "task.end of "+label, is[event.TaskEnd](label)).Body.(event.TaskEnd)
			if start.ToolCallID != id || start.ChildID != w.Spec.SessionID || end.ToolCallID != id || end.ChildID != w.Spec.SessionID || end.Status != StatusCompleted {
				t.Errorf("%s: task.start %+v, task.end %+v", label, start, end)
			}
		}
		if len(res.PerAgent) != 5 {
			t.Errorf("usage per agent = %v, want main and 4 children", res.PerAgent)
		}
	})
}

// TestWindowAdmitsInCallOrder: with --max-parallel 2 no more than two
// children run at once across the tree; children that wait say so with
// task.queued and are admitted in the order of their calls, not of their
// requests.
func TestWindowAdmitsInCallOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		gates := map[string]chan struct{}{}
		gate := func(prompt string) chan struct{} {
			mu.Lock()
			defer mu.Unlock()
			if gates[prompt] == nil {
				gates[prompt] = make(chan struct{})
			}
			return gates[prompt]
		}
		first := []model.ToolCall{taskCallOf("a1", `{"prompt":"a1"}`), taskCallOf("a2", `{"prompt":"a2"}`)}
		second := []model.ToolCall{taskCallOf("b1", `{"prompt":"b1"}`), taskCallOf("b2", `{"prompt":"b2"}`), taskCallOf("b3", `{"prompt":"b3"}`)}
		wave2 := make(chan struct{})
		h := newHarness(t, Config{MaxDepth: 1, MaxParallel: 2}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() || !w.CallTasks(first...) {
					return
				}
				for _, c := range first {
					w.Request(c.ID, string(c.Args))
				}
				if !w.Wait(wave2) || !w.CallTasks(second...) {
					return
				}
				for i := len(second) - 1; i >= 0; i-- {
					w.Request(second[i].ID, string(second[i].Args))
				}
				for _, c := range append(first, second...) {
					if _, ok := w.AwaitAnswer(c.ID); !ok {
						return
					}
				}
				w.Complete("done", model.Usage{})
			},
			child: func(w *fakeWorker) {
				if w.Start() && w.Wait(gate(w.Spec.Prompt)) {
					w.Complete("ok", model.Usage{})
				}
			},
		}.play)
		done := make(chan RunResult, 1)
		go func() {
			res, _ := h.o.Run(context.Background(), RunOptions{Prompt: "p"})
			done <- res
		}()
		startOf := func(label string) event.Envelope {
			return h.rec.waitFor(t, "task.start of "+label, is[event.TaskStart](label))
		}
		startOf("main/1")
		startOf("main/2")
		close(wave2)
		for _, l := range []string{"main/3", "main/4", "main/5"} {
			h.rec.waitFor(t, "task.queued of "+l, func(e event.Envelope) bool {
				q, ok := e.Body.(event.TaskQueued)
				return ok && q.Child == l && e.Agent == "main"
			})
		}
		// Free one slot at a time: the next in call order takes it.
		for _, step := range []struct{ release, next string }{{"a1", "main/3"}, {"a2", "main/4"}, {"b1", "main/5"}} {
			close(gate(step.release))
			e := startOf(step.next)
			for _, other := range []string{"main/3", "main/4", "main/5"} {
				if other == step.next {
					break
				}
				if _, err := firstIndex(h.rec.all(), is[event.TaskStart](other)); err != nil {
					t.Errorf("%s started before %s", step.next, other)
				}
			}
			if ts := e.Body.(event.TaskStart); ts.ToolCallID != map[string]string{"main/3": "b1", "main/4": "b2", "main/5": "b3"}[step.next] {
				t.Errorf("%s runs call %s", step.next, ts.ToolCallID)
			}
		}
		for _, p := range []string{"b2", "b3"} {
			close(gate(p))
		}
		if res := <-done; res.Status != StatusCompleted {
			t.Fatalf("run %s: %s", res.Status, res.Reason)
		}

		// Replay the events: never more than two children between task.start
		// and task.end.
		running, peak := 0, 0
		for _, e := range h.rec.all() {
			switch e.Body.(type) {
			case event.TaskStart:
				running++
				peak = max(peak, running)
			case event.TaskEnd:
				running--
			}
		}
		if peak != 2 || h.l.peak() != 2 {
			t.Errorf("peak children: %d by events, %d by workers; want 2", peak, h.l.peak())
		}
		queued, _ := bodies[event.TaskQueued](h.rec.all())
		var got []string
		for _, q := range queued {
			got = append(got, q.Child)
		}
		if len(got) != 3 {
			t.Errorf("task.queued for %v, want main/3, main/4 and main/5 once each", got)
		}
	})
}

// firstIndex returns the index of the first event pred accepts.
func firstIndex(evs []event.Envelope, pred func(event.Envelope) bool) (int, error) {
	for i, e := range evs {
		if pred(e) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no such event")
}

// TestQueuedChildIsCancelled: a child still waiting for a slot when its
// parent is cancelled is answered "aborted" without ever starting.
func TestQueuedChildIsCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		busy := make(chan struct{})
		h := newHarness(t, Config{MaxDepth: 1, MaxParallel: 1}, cast{
			main: func(w *fakeWorker) {
				calls := []model.ToolCall{taskCallOf("c1", `{"prompt":"busy"}`), taskCallOf("c2", `{"prompt":"waiting"}`)}
				if !w.Start() || !w.CallTasks(calls...) {
					return
				}
				// The second request comes once the first child holds the
				// only slot.
				if !w.Request("c1", `{"prompt":"busy"}`) || !w.Wait(busy) {
					return
				}
				w.Request("c2", `{"prompt":"waiting"}`)
				c, ok := w.AwaitCancel()
				if !ok {
					return
				}
				for _, id := range []string{"c1", "c2"} {
					if a, ok := w.AwaitAnswer(id); !ok || !w.Record(id, a) {
						return
					}
				}
				w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason})
			},
			child: func(w *fakeWorker) {
				if w.Start() {
					close(busy)
					if c, ok := w.AwaitCancel(); ok {
						w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason})
					}
				}
			},
		}.play)
		go func() {
			if _, ok := h.rec.wait(is[event.TaskQueued]("main")); ok {
				cancel()
			}
		}()
		res, err := h.o.Run(ctx, RunOptions{Prompt: "p"})
		if err != nil || res.Status != StatusAborted {
			t.Fatalf("run = %+v, %v", res, err)
		}
		if h.l.byPrompt("waiting") != nil {
			t.Fatal("the queued child was started after the cancel")
		}
		a := h.l.byLabel("main").answer(t, "c2")
		r := a.Record
		if !a.IsError || !strings.Contains(a.Content, "task aborted before completion (0 turns ran): cancelled while queued: cancelled by the user.") ||
			r.Status != StatusAborted || r.Launched || r.Transcript == nil || r.Transcript.Present || r.Transcript.Why != "not-started" {
			t.Errorf("queued child's answer = %q, record %+v", a.Content, r)
		}
		if !strings.Contains(a.Content, "(transcript not persisted — work was not saved)") || strings.Contains(a.Content, "child session id") {
			t.Errorf("a child that never ran is offered for resume:\n%s", a.Content)
		}
	})
}

// TestWindowUnit: the window hands slots to waiters by ticket, gives a
// slot admitted to a waiter that gave up to the next one, and reports a
// waiter's cancellation cause.
func TestWindowUnit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := newWindow(1)
		rel, err := w.acquire(context.Background(), 5, func() { t.Error("a free slot queued") })
		if err != nil {
			t.Fatal(err)
		}
		type got struct {
			ticket uint64
			rel    func()
		}
		admitted := make(chan got, 3)
		queued := make(chan uint64, 3)
		ctx, cancel := context.WithCancelCause(context.Background())
		for _, tk := range []uint64{9, 7, 8} {
			c := context.Background()
			if tk == 8 {
				c = ctx
			}
			go func() {
				r, err := w.acquire(c, tk, func() { queued <- tk })
				if err != nil {
					admitted <- got{ticket: tk}
					return
				}
				admitted <- got{tk, r}
			}()
			<-queued
		}
		cancel(fmt.Errorf("the parent attempt ended"))
		if g := <-admitted; g.ticket != 8 || g.rel != nil {
			t.Fatalf("first to leave the queue: %+v, want 8 cancelled", g)
		}
		rel()
		g := <-admitted
		if g.ticket != 7 {
			t.Fatalf("admitted %d first, want 7 (lowest ticket)", g.ticket)
		}
		g.rel()
		if g := <-admitted; g.ticket != 9 {
			t.Fatalf("admitted %d, want 9", g.ticket)
		} else {
			g.rel()
		}
		// A cancelled waiter reports why.
		hold, _ := w.acquire(context.Background(), 1, nil)
		c2, cancel2 := context.WithCancelCause(context.Background())
		cancel2(fmt.Errorf("cancelled by the user"))
		if _, err := w.acquire(c2, 2, nil); err == nil || err.Error() != "cancelled by the user" {
			t.Errorf("cancelled acquire: %v", err)
		}
		hold()
		if r, err := w.acquire(context.Background(), 3, nil); err != nil {
			t.Errorf("the slot was lost after a cancelled waiter: %v", err)
		} else {
			r()
		}
		if !reflect.DeepEqual(w.waiting, []*waiter(nil)) && len(w.waiting) != 0 {
			t.Errorf("waiters left: %d", len(w.waiting))
		}
	})
}
