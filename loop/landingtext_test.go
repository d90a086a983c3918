package loop

import (
	"strings"
	"testing"
)

// TestLandingTextCounts: the request for a final answer counts the turns
// in words that agree with the number.
func TestLandingTextCounts(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "You have used the one turn this task allows.", 3: "You have used all 3 turns this task allows."} {
		if got := landingText(CappedTurns, n); !strings.Contains(got, want) {
			t.Errorf("landingText(%d) = %q, want %q in it", n, got, want)
		}
	}
}
