package lease

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAcquireWithHeartbeat: the interval given at acquisition is in the
// first record, so Probe judges the lease by it at once, and a heartbeat
// started with that interval writes nothing until its first tick.
func TestAcquireWithHeartbeat(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	l, err := AcquireWith(path, Owner{AttemptID: "att-1"}, Options{Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	m := mustReadMeta(t, path)
	if m.HeartbeatInterval() != time.Hour || m.Epoch != 1 {
		t.Fatalf("acquisition record: interval %s epoch %d, want 1h and 1", m.HeartbeatInterval(), m.Epoch)
	}
	before, err := os.ReadFile(MetaPath(path))
	if err != nil {
		t.Fatal(err)
	}
	l.StartHeartbeat(time.Hour)
	after, err := os.ReadFile(MetaPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatalf("StartHeartbeat rewrote a record that already held its interval:\n%s\n%s", before, after)
	}
	st, err := Probe(path)
	if err != nil || st.State != Held {
		t.Fatalf("Probe = %+v, %v; want held", st, err)
	}
	// Another interval than the recorded one is written at once.
	l2, err := AcquireWith(transcriptPath(t), Owner{AttemptID: "att-2"}, Options{Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	l2.StartHeartbeat(time.Minute)
	if m := mustReadMeta(t, l2.Path()); m.HeartbeatInterval() != time.Minute {
		t.Fatalf("interval on disk after StartHeartbeat(1m): %s", m.HeartbeatInterval())
	}
}

// TestAcquireSyncLater: a record published before it is synced is seen at
// once by others, with the next epoch; SyncRecord may come later, more than
// once, or never (Release closes what it kept).
func TestAcquireSyncLater(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	first := mustAcquire(t, path, Owner{AttemptID: "att-1"})
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	l, err := AcquireWith(path, Owner{AttemptID: "att-2"}, Options{SyncLater: true, Heartbeat: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if m := mustReadMeta(t, path); m.Epoch != 2 || m.AttemptID != "att-2" {
		t.Fatalf("record before its sync: %+v", m)
	}
	if _, err := Acquire(path, Owner{AttemptID: "att-3"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second holder while the record is unsynced: %v", err)
	}
	acquired := mustReadMeta(t, path).HeartbeatAt
	l.StartHeartbeat(20 * time.Millisecond)
	eventually(t, "a beat published before the record is synced", func() bool {
		return mustReadMeta(t, path).HeartbeatAt.After(acquired)
	})
	for range 2 {
		if err := l.SyncRecord(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	never, err := AcquireWith(path, Owner{AttemptID: "att-4"}, Options{SyncLater: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Release(); err != nil {
		t.Fatal(err)
	}
	if m := mustReadMeta(t, path); m.Epoch != 3 {
		t.Fatalf("epoch after a holder that never synced: %d, want 3", m.Epoch)
	}
}

// TestEmptyRecordStartsTheCount: an empty record — what a machine that
// stopped before a SyncLater record was synced can leave — is no record:
// the next holder starts at epoch 1 instead of being refused.
func TestEmptyRecordStartsTheCount(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(MetaPath(path), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, path, Owner{AttemptID: "a"})
	defer l.Release()
	if m := mustReadMeta(t, path); m.Epoch != 1 || m.AttemptID != "a" {
		t.Fatalf("record after an empty one: %+v", m)
	}
}

// TestSetBudgetReachesTheRecord: the budget a holder sets is in its record
// after the next heartbeat, and changes with it.
func TestSetBudgetReachesTheRecord(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	l, err := AcquireWith(path, Owner{AttemptID: "att-1"}, Options{Heartbeat: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if m := mustReadMeta(t, path); m.Budget != nil {
		t.Fatalf("a record without a budget set shows %+v", m.Budget)
	}
	l.StartHeartbeat(10 * time.Millisecond)
	for _, left := range []int64{90_000, -5} {
		l.SetBudget(100_000, left)
		var got *Budget
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if got = mustReadMeta(t, path).Budget; got != nil && got.Remaining == left {
				break
			}
		}
		if got == nil || got.Limit != 100_000 || got.Remaining != left {
			t.Fatalf("record's budget %+v, want 100000 with %d left", got, left)
		}
	}
}
