package orchestrator

import (
	"context"
	"sort"
	"sync"
)

// window bounds how many children run at once across the whole tree.
// Waiting children are admitted in ticket order — the order of their task
// calls — not in the order their requests happened to arrive. It is safe
// for concurrent use.
type window struct {
	mu      sync.Mutex
	free    int
	waiting []*waiter // sorted by ticket
}

type waiter struct {
	ticket uint64
	ready  chan struct{}
}

func newWindow(size int) *window { return &window{free: size} }

// acquire takes a slot for the child holding ticket. When none is free it
// calls queued once and waits until a slot is its turn or ctx ends. The
// returned release gives the slot back; call it exactly once.
func (w *window) acquire(ctx context.Context, ticket uint64, queued func()) (release func(), err error) {
	w.mu.Lock()
	if w.free > 0 && len(w.waiting) == 0 {
		w.free--
		w.mu.Unlock()
		return w.release, nil
	}
	me := &waiter{ticket: ticket, ready: make(chan struct{})}
	w.waiting = append(w.waiting, me)
	sort.SliceStable(w.waiting, func(i, j int) bool { return w.waiting[i].ticket < w.waiting[j].ticket })
	w.admit()
	w.mu.Unlock()
	select {
	case <-me.ready:
		return w.release, nil
	default:
	}
	if queued != nil {
		queued()
	}
	select {
	case <-me.ready:
		return w.release, nil
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-me.ready:
			// Admitted while giving up: hand the slot on.
			w.free++
			w.admit()
		default:
			for i, x := range w.waiting {
				if x == me {
					w.waiting = append(w.waiting[:i], w.waiting[i+1:]...)
					break
				}
			}
		}
		return nil, context.Cause(ctx)
	}
}

// release gives a slot back and admits the next waiter.
func (w *window) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.free++
	w.admit()
}

// admit hands free slots to the first waiters; w.mu is held.
func (w *window) admit() {
	for w.free > 0 && len(w.waiting) > 0 {
		next := w.waiting[0]
		w.waiting = w.waiting[1:]
		w.free--
		close(next.ready)
	}
}
