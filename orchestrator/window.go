package orchestrator

import (
	"context"
	"sort"
	"sync"
)

// window bounds how many children run at once across the whole tree.
// Children are admitted in ticket order — the order of their task calls —
// not in the order their requests happen to arrive: a task call seen in an
// assistant message is expected, and a free slot is kept for it while its
// request is on its way. It is safe for concurrent use.
type window struct {
	mu       sync.Mutex
	free     int
	waiting  []*waiter // sorted by ticket
	expected map[uint64]bool
	// onFree, when set before the window is used, is called (without mu
	// held) each time a slot is given back.
	onFree func()
}

type waiter struct {
	ticket uint64
	ready  chan struct{}
	// queued is called once if the waiter waits because the window is
	// full (not merely for an earlier call's request).
	queued func()
	told   bool
}

func newWindow(size int) *window { return &window{free: size, expected: map[uint64]bool{}} }

// expect announces a task call whose request will come.
func (w *window) expect(ticket uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expected[ticket] = true
}

// forget withdraws an expected call whose request will not come (the
// worker refused it, or its agent ended).
func (w *window) forget(ticket uint64) {
	w.mu.Lock()
	if !w.expected[ticket] {
		w.mu.Unlock()
		return
	}
	delete(w.expected, ticket)
	tell := w.admit()
	w.mu.Unlock()
	notify(tell)
}

// acquire takes a slot for the child holding ticket. When none is free it
// calls queued once and waits until a slot is its turn or ctx ends. The
// returned release gives the slot back; call it exactly once.
func (w *window) acquire(ctx context.Context, ticket uint64, queued func()) (release func(), err error) {
	w.mu.Lock()
	delete(w.expected, ticket)
	if w.free > 0 && len(w.waiting) == 0 && !w.expectedBefore(ticket) {
		w.free--
		w.mu.Unlock()
		return w.release, nil
	}
	me := &waiter{ticket: ticket, ready: make(chan struct{}), queued: queued}
	w.waiting = append(w.waiting, me)
	sort.SliceStable(w.waiting, func(i, j int) bool { return w.waiting[i].ticket < w.waiting[j].ticket })
	tell := w.admit()
	w.mu.Unlock()
	notify(tell)
	select {
	case <-me.ready:
		return w.release, nil
	case <-ctx.Done():
		w.mu.Lock()
		select {
		case <-me.ready:
			// Admitted while giving up: hand the slot on.
			w.free++
		default:
			for i, x := range w.waiting {
				if x == me {
					w.waiting = append(w.waiting[:i], w.waiting[i+1:]...)
					break
				}
			}
		}
		tell := w.admit()
		w.mu.Unlock()
		notify(tell)
		return nil, context.Cause(ctx)
	}
}

// release gives a slot back and admits the next waiter.
func (w *window) release() {
	w.mu.Lock()
	w.free++
	tell := w.admit()
	w.mu.Unlock()
	notify(tell)
	if w.onFree != nil {
		w.onFree()
	}
}

// expectedCount is the number of task calls announced whose request has
// not come yet.
func (w *window) expectedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.expected)
}

// freeSlots is the number of children that could start now.
func (w *window) freeSlots() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.free
}

// expectedBefore reports whether a call with a lower ticket is expected;
// w.mu is held.
func (w *window) expectedBefore(ticket uint64) bool {
	for t := range w.expected {
		if t < ticket {
			return true
		}
	}
	return false
}

// admit hands free slots to the first waiters, keeping them for expected
// calls that come first, and returns the queued callbacks of the waiters
// that now wait because the window is full (each is told once), to be
// called once w.mu is released; w.mu is held.
func (w *window) admit() []func() {
	for w.free > 0 && len(w.waiting) > 0 {
		next := w.waiting[0]
		if w.expectedBefore(next.ticket) {
			break
		}
		w.waiting = w.waiting[1:]
		w.free--
		close(next.ready)
	}
	if w.free > 0 {
		return nil
	}
	var tell []func()
	for _, x := range w.waiting {
		if !x.told && x.queued != nil {
			x.told = true
			tell = append(tell, x.queued)
		}
	}
	return tell
}

// notify calls the queued callbacks admit returned.
func notify(tell []func()) {
	for _, f := range tell {
		f()
	}
}
