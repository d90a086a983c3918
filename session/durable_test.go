package session

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// syncs counts fsyncs per file name for the tests of this package.
var syncs = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func init() {
	observeSync = func(name string) {
		syncs.Lock()
		syncs.n[name]++
		syncs.Unlock()
	}
}

// syncCount returns how often the file or directory at name was synced.
func syncCount(name string) int {
	syncs.Lock()
	defer syncs.Unlock()
	return syncs.n[name]
}

// TestCreateWithOneSync: a transcript created with its first entries holds
// the header and those entries, in order and readable, after one sync of
// the file and one of its directory.
func TestCreateWithOneSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	start := AttemptEntry{Phase: PhaseStart, AttemptID: "a1", Epoch: 1, Pid: 7}
	prompt := model.UserText("find the bug")
	w, entries, err := CreateWith(path, Header{ID: "c1", Cwd: "/p"}, Entry{Attempt: &start}, Entry{Message: &prompt})
	if err != nil {
		t.Fatal(err)
	}
	if got := syncCount(path); got != 1 {
		t.Errorf("the file was synced %d times on creation, want 1", got)
	}
	if got := syncCount(dir); got != 1 {
		t.Errorf("the directory was synced %d times on creation, want 1", got)
	}
	if len(entries) != 2 || entries[0].Type != EntryAttempt || entries[1].Type != EntryMessage || entries[0].ID == "" || entries[1].ID == entries[0].ID {
		t.Fatalf("entries as written: %+v", entries)
	}
	if entries[0].Line != 2 || entries[1].Line != 3 || entries[0].Attempt.Time.IsZero() {
		t.Fatalf("entries lack their place or time: %+v", entries)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := syncCount(path); got != 1 {
		t.Errorf("closing a transcript with nothing unsynced synced it again (%d syncs)", got)
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || tr.Entries[0].Attempt == nil || tr.Entries[0].Attempt.AttemptID != "a1" || tr.Messages[0].Text() != "find the bug" {
		t.Fatalf("read back %+v", tr.Entries)
	}
	if tr.Entries[1].Offset != entries[1].Offset || tr.Entries[1].ID != entries[1].ID {
		t.Fatalf("entry as read %+v differs from entry as written %+v", tr.Entries[1], entries[1])
	}
}

// TestAppendBatchSyncs: a batch is one sync when it holds a durable point
// (an attempt, a compaction, a tool result) and none otherwise; what was
// left unsynced is synced by Close.
func TestAppendBatchSyncs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{ID: "s1", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	base := syncCount(path)
	results := UnknownOutcomeResults([]model.ToolCall{{ID: "c1", Name: "read"}, {ID: "c2", Name: "grep"}})
	start := AttemptEntry{Phase: PhaseStart, AttemptID: "a2"}
	if _, err := w.Append(Entry{Message: &results[0]}, Entry{Message: &results[1]}, Entry{Attempt: &start}); err != nil {
		t.Fatal(err)
	}
	if got := syncCount(path) - base; got != 1 {
		t.Fatalf("a batch of two results and an attempt start cost %d syncs, want 1", got)
	}
	if _, err := w.AppendMessage(model.UserText("go on")); err != nil {
		t.Fatal(err)
	}
	if got := syncCount(path) - base; got != 1 {
		t.Fatalf("a user message was synced (%d syncs)", got-1)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := syncCount(path) - base; got != 2 {
		t.Fatalf("Close left the user message unsynced (%d syncs in all)", got)
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 4 || tr.Messages[2].Text() != "go on" || tr.Entries[2].Attempt == nil {
		t.Fatalf("read back %d entries: %+v", len(tr.Entries), tr.Entries)
	}
}

// TestAppendBatchAllOrNothing: a batch with one invalid entry writes none
// of them.
func TestAppendBatchAllOrNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{ID: "s1", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before, _ := os.ReadFile(path)
	good := model.UserText("fine")
	bad := model.Message{Role: "robot"}
	if _, err := w.Append(Entry{Message: &good}, Entry{Message: &bad}); err == nil || !strings.Contains(err.Error(), "robot") {
		t.Fatalf("invalid batch: err = %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Fatalf("a refused batch changed the file:\n%s", after)
	}
	if _, _, err := CreateWith(filepath.Join(t.TempDir(), "x.jsonl"), Header{ID: "x1", Cwd: "/p"}, Entry{Message: &bad}); err == nil {
		t.Fatal("CreateWith accepted an invalid first entry")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out, err := w.Append(Entry{ID: "given", Attempt: &AttemptEntry{Phase: PhaseStart, AttemptID: "a", Time: at}})
	if err != nil || out[0].ID != "given" || !out[0].Attempt.Time.Equal(at) {
		t.Fatalf("Append changed a given id or time: %+v %v", out, err)
	}
}
