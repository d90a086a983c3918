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
}

var _ loop.Budget = (*treeBudget)(nil)

// Spend adds u and returns the tokens the tree has left.
func (b *treeBudget) Spend(u model.Usage) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since += u.Total()
	return b.remaining - b.since
}

// update takes the supervisor's count, which includes what this worker
// reported so far.
func (b *treeBudget) update(remaining int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remaining, b.since = remaining, 0
}
