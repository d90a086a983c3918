package worker

import (
	"sync"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
)

// treeBudget is the worker's view of the run's token budget, which the
// whole tree of agents shares: the supervisor says what is left (at launch,
// then with every Budget message), and the worker counts what it spent
// since, so its loop can land softly before the budget runs out. It is safe
// for concurrent use.
type treeBudget struct {
	mu        sync.Mutex
	remaining int64 // as the supervisor last said
	since     int64 // spent here since then
	// report, when set (reportTo), is told what is left after every
	// change, outside the lock.
	report func(remaining int64)
}

// reportTo has f told what is left now and after every change.
func (b *treeBudget) reportTo(f func(remaining int64)) {
	b.mu.Lock()
	b.report = f
	left := b.remaining - b.since
	b.mu.Unlock()
	f(left)
}

var _ loop.Budget = (*treeBudget)(nil)

// Spend adds u and returns the tokens the tree has left.
func (b *treeBudget) Spend(u model.Usage) int64 {
	b.mu.Lock()
	b.since += u.Total()
	left, report := b.remaining-b.since, b.report
	b.mu.Unlock()
	if report != nil {
		report(left)
	}
	return left
}

// update takes the supervisor's count, which includes what this worker
// reported so far.
func (b *treeBudget) update(remaining int64) {
	b.mu.Lock()
	b.remaining, b.since = remaining, 0
	report := b.report
	b.mu.Unlock()
	if report != nil {
		report(remaining)
	}
}
