package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// TestOnDiskFormatGolden pins the exact bytes of a child transcript, the
// format other tools and later ink versions read. Rewrite the golden file
// with -update after a deliberate format change.
func TestOnDiskFormatGolden(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	launch := validLaunch("01jd8x3k9q7m2v5n6p4r8s0t1w", "01jd8x3m0a1b2c3d4e5f6g7h8j")
	launch.Worktree = &WorktreeRef{RepoRoot: "/home/me/proj", Baseline: "0123456789abcdef0123456789abcdef01234567",
		Path: "/home/me/.ink/worktrees/-home-me-proj/01jd8x3m0a1b2c3d4e5f6g7h8j", Branch: "ink/01jd8x3m0a1b2c3d4e5f6g7h8j",
		CreationReflog: "branch: Created from HEAD"}
	launch.Binding.BaseURL = "https://proxy.example/v1"
	_, out, err := encodeHeader(Header{ID: launch.ChildID, Parent: launch.ParentSessionID, Cwd: "/home/me/proj", CreatedAt: when, Launch: &launch})
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Type: EntryAttempt, ID: "e1", Attempt: &AttemptEntry{Phase: PhaseStart, AttemptID: "a1", Epoch: 2, Pid: 4242, Time: when}}}
	for i, m := range sampleMessages() {
		m := m
		entries = append(entries, Entry{Type: EntryMessage, ID: "m" + string(rune('1'+i)), Message: &m})
	}
	entries = append(entries, Entry{Type: EntryCompaction, ID: "k1", Compaction: &CompactionEntry{Summary: "Searched for login; found src/auth/login.go.",
		FirstKept: "m2", TokensBefore: 182000, Trigger: "threshold", Usage: &model.Usage{Input: 150000, Output: 900, CacheRead: 30000}, Time: when.Add(30 * time.Second)}})
	entries = append(entries, Entry{Type: EntryAttempt, ID: "e2", Attempt: &AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Epoch: 2, Pid: 4242,
		Time: when.Add(time.Minute), Status: StatusInterrupted, Reason: "host lost", Turns: 2,
		Usage: &model.Usage{Input: 1200, Output: 80, Incomplete: true}, FinalTextLen: 5, FinalText: "Entry", Capped: CappedTurns,
		Health: []string{"the same call to grep {\"pattern\":\"login\"} in 5 consecutive turns (turns 2-6)"}}})
	for _, e := range entries {
		line, err := encodeEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line...)
	}
	golden := filepath.Join("testdata", "golden", "child.jsonl")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestOnDiskFormatGolden -update)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("on-disk format changed:\n got %s\nwant %s", out, want)
	}
	tr, err := parseTranscript(golden, want)
	if err != nil || len(tr.Entries) != len(entries) || tr.Torn != nil {
		t.Fatalf("golden file does not read back: %v", err)
	}
	if h := tr.History(); len(h) != 5 || h[0].Role != model.RoleUser || h[1].StopReason != "toolUse" || len(tr.Messages) != 5 {
		t.Errorf("history of the golden file = %d messages starting %+v; want the summary and m2..m5, with all 5 messages kept", len(h), h[0])
	}
}
