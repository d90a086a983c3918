package orchestrator

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TestBudgetAcrossTheTree: every agent's spending counts against the
// run's one budget; a child starts knowing what is left, every running
// worker hears what is left after each model call, and once an agent had
// to wrap up for the budget no new child starts: the task call is
// refused saying so, and run.end reports the spending.
func TestBudgetAcrossTheTree(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var childSpec ipc.AttemptSpec
		var heard []int64
		var refused ipc.TaskAnswer
		h := newHarness(t, Config{MaxDepth: 1, Budget: 1000}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() || !w.Turn(1) || !w.Say("planning", model.Usage{Input: 600}) {
					return
				}
				if _, ok := w.Delegate("call-1", `{"prompt":"spend"}`); !ok {
					return
				}
				for _, m := range w.hostMsgs() {
					if b, ok := m.(ipc.Budget); ok {
						heard = append(heard, b.Remaining)
					}
				}
				a, ok := w.Delegate("call-2", `{"prompt":"more"}`)
				if !ok {
					return
				}
				refused = a
				w.Complete("done", model.Usage{})
			},
			byPrompt: map[string]play{"spend": func(w *fakeWorker) {
				childSpec = w.Spec
				if !w.Start() || !w.Turn(1) || !w.Say("spent", model.Usage{Input: 500}) {
					return
				}
				w.Finish(ipc.Outcome{Status: StatusCompleted, Capped: session.CappedBudget, Text: "wrapped up", Turns: 1, Usage: model.Usage{Input: 500}})
			}},
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		if res.Status != StatusCompleted {
			t.Fatalf("run %s %s", res.Status, res.Reason)
		}
		if childSpec.Budget != 1000 || childSpec.BudgetRemaining != 400 {
			t.Errorf("the child started with budget %d, %d left; want 1000, 400", childSpec.Budget, childSpec.BudgetRemaining)
		}
		if len(heard) == 0 || heard[len(heard)-1] != -100 {
			t.Errorf("the main worker heard %v left, want the child's spending to reach it (-100)", heard)
		}
		if !refused.IsError || !strings.Contains(refused.Content, "token budget of 1k tokens is spent (1.1k used)") {
			t.Errorf("a task call after the budget landed was answered %q", refused.Content)
		}
		if h.l.byPrompt("more") != nil {
			t.Error("a child started after the budget was spent")
		}
		end := h.rec.waitFor(t, "run.end", func(e event.Envelope) bool { _, ok := e.Body.(event.RunEnd); return ok }).Body.(event.RunEnd)
		if end.Budget == nil || end.Budget.Limit != 1000 || end.Budget.Spent != 1100 {
			t.Errorf("run.end budget %+v", end.Budget)
		}
	})
}
