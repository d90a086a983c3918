package worker

import (
	"os"
	"testing"
)

// TestWarmUpLeavesNothingBehind: a pooled worker's warm-up, done in the
// user's directory while it waits, writes nothing there and keeps no file
// open.
func TestWarmUpLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	before := openFiles(t)
	warmUp(dir)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the warm-up left %d entries in its directory (%v)", len(ents), err)
	}
	if after := openFiles(t); after != before {
		t.Fatalf("the warm-up left files open: %d before, %d after", before, after)
	}
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
