package orchestrator

import (
	"cmp"
	"fmt"
	"sync"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// treeBudget counts the tokens the whole tree of a run spends (every
// attempt of every agent, main included) against --budget. It is safe for
// concurrent use.
type treeBudget struct {
	limit int64 // 0: no budget

	mu    sync.Mutex
	spent int64
	// landed is set once an agent wrapped up because the budget was
	// nearly spent: from then on no new child starts.
	landed bool
}

// spend adds the usage of one model call and returns what is left.
func (b *treeBudget) spend(u model.Usage) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent += u.Total()
	return b.limit - b.spent
}

// remaining is what is left of the budget.
func (b *treeBudget) remaining() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.spent
}

// used is what the tree spent so far.
func (b *treeBudget) used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// land notes that an agent wrapped up because the budget was nearly spent.
func (b *treeBudget) land() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.landed = true
}

// exhausted says why no more children may start — the budget is spent, or
// an agent already had to wrap up for it — or "" while the budget lasts
// (or there is none).
func (b *treeBudget) exhausted() string {
	if b.limit <= 0 {
		return ""
	}
	b.mu.Lock()
	left, landed := b.limit-b.spent, b.landed
	b.mu.Unlock()
	if left <= 0 || landed {
		return fmt.Sprintf("task: the run's token budget of %s tokens is spent (%s used); no more children start. Finish with what you have",
			CompactTokens(b.limit), CompactTokens(b.used()))
	}
	return ""
}

// noteUsage counts a model call's usage against the budget and tells every
// running worker what is left, so each can land softly in time.
func (o *Orchestrator) noteUsage(u model.Usage) {
	if o.budget.limit <= 0 {
		return
	}
	left := o.budget.spend(u)
	o.live.each(func(w Worker) {
		if err := w.Send(ipc.Budget{Remaining: left}); err != nil {
			o.cfg.Logger.Debug("Budget not sent", "pid", w.Pid(), "err", err)
		}
	})
}

// DefaultMaxTurns is the turn cap of an agent whose run and profile set
// none: far more turns than a task takes, few enough that a model looping
// for ever stops on its own.
const DefaultMaxTurns = 500

// limits gives a spec the run's turn cap and context window where its
// profile set none (profileLimits runs first): the turn cap is the
// profile's, else the run's, else DefaultMaxTurns.
func (o *Orchestrator) limits(spec *ipc.AttemptSpec) {
	spec.MaxTurns = cmp.Or(spec.MaxTurns, o.cfg.MaxTurns, DefaultMaxTurns)
	spec.ContextWindow = cmp.Or(spec.ContextWindow, o.cfg.ContextWindow)
}

// report is the budget for run.end, or nil without one.
func (b *treeBudget) report() *event.Budget {
	if b.limit <= 0 {
		return nil
	}
	return &event.Budget{Limit: b.limit, Spent: b.used()}
}
