package tools

import (
	"crypto/sha256"
	"sync"
)

// readTracker remembers, per real path, the content hash of the file as an
// agent last saw it (through read, or through its own edit or write). edit
// and write consult it so that an agent never changes a file it has not
// read, or one that changed since it read it. One tracker is shared by the
// tools of one agent; it is safe for concurrent use.
type readTracker struct {
	mu   sync.Mutex
	seen map[string][sha256.Size]byte
}

func newReadTracker() *readTracker {
	return &readTracker{seen: make(map[string][sha256.Size]byte)}
}

// record notes that the agent has seen the file at real path with content
// hash sum.
func (t *readTracker) record(real string, sum [sha256.Size]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[real] = sum
}

// check reports whether the agent has seen the file at real path, and
// whether its current content hash still matches what it saw.
func (t *readTracker) check(real string, current [sha256.Size]byte) (seen, unchanged bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum, ok := t.seen[real]
	return ok, ok && sum == current
}
