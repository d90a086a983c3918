package orchestrator

import (
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// TestSystemFingerprintIgnoresTheDate: a child launched yesterday is not
// refused for system-drift today; a changed profile body is.
func TestSystemFingerprintIgnoresTheDate(t *testing.T) {
	yesterday := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	today := yesterday.Add(2 * time.Minute)
	then := childSystem(promptBase{cwd: "/src/app", date: yesterday}, MainTools, "Look around.", "")
	now := childSystem(promptBase{cwd: "/src/app", date: today}, MainTools, "Look around.", "")
	if then == now {
		t.Fatal("the two prompts should differ in their date line")
	}
	if session.SystemFingerprint(then) != session.SystemFingerprint(now) {
		t.Fatal("a date-only change is system drift")
	}
	edited := childSystem(promptBase{cwd: "/src/app", date: today}, MainTools, "Look around twice.", "")
	if session.SystemFingerprint(then) == session.SystemFingerprint(edited) {
		t.Fatal("a changed profile body is not system drift")
	}
}
