package lease

import "sync"

// registry records the leases this process holds (or is acquiring), keyed by
// lease file identity, so a second Acquire in the same process is refused
// with a message that says so before flock is even tried.
type registry struct {
	mu     sync.Mutex
	byFile map[fileKey]*Lease
}

var held = &registry{byFile: make(map[fileKey]*Lease)}

// reserve claims k for l. It returns the current claimant and false when k is
// already claimed.
func (r *registry) reserve(k fileKey, l *Lease) (*Lease, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.byFile[k]; ok {
		return cur, false
	}
	r.byFile[k] = l
	return nil, true
}

// drop removes the claim on k if l holds it.
func (r *registry) drop(k fileKey, l *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byFile[k] == l {
		delete(r.byFile, k)
	}
}
