package session

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestCreateSyncingSyncsBeforeTheNextEntry: a transcript created with its
// sync in the background is readable at once, runs before first, and is
// durable — the file and its directory synced once each, after before —
// by the time the next entry is written.
func TestCreateSyncingSyncsBeforeTheNextEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	release := make(chan struct{})
	var beforeRan, fileSyncedFirst atomic.Bool
	before := func() error {
		<-release // the disk is slow: the caller goes on meanwhile
		fileSyncedFirst.Store(syncCount(path) > 0)
		beforeRan.Store(true)
		return nil
	}
	prompt := model.UserText("find the bug")
	w, entries, err := CreateSyncing(nil, path, Header{ID: "c1", Cwd: "/p"}, before, Entry{Message: &prompt})
	if err != nil {
		t.Fatal(err)
	}
	// Not yet synced, yet already there for a reader in this or another
	// process.
	if got := syncCount(path); got != 0 {
		t.Errorf("the file was synced %d times before its sync was let run", got)
	}
	tr, err := Open(path)
	if err != nil || len(tr.Messages) != 1 || tr.Messages[0].Text() != "find the bug" || entries[0].Line != 2 {
		t.Fatalf("read before the sync: %v, %+v", err, tr)
	}
	close(release)
	reply := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "found it"}}}
	if _, err := w.AppendMessage(reply); err != nil {
		t.Fatal(err)
	}
	if !beforeRan.Load() || fileSyncedFirst.Load() {
		t.Errorf("before ran: %v; the file was synced before it: %v", beforeRan.Load(), fileSyncedFirst.Load())
	}
	if got := syncCount(path); got != 1 {
		t.Errorf("the file was synced %d times by the time the next entry was written, want 1", got)
	}
	if got := syncCount(dir); got != 1 {
		t.Errorf("the directory was synced %d times, want 1", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCreateSyncingFailureIsSticky: when the background sync fails, the
// next append and Close say so, and nothing more is written.
func TestCreateSyncingFailureIsSticky(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.jsonl")
	w, _, err := CreateSyncing(nil, path, Header{ID: "c1", Cwd: "/p"}, func() error { return errors.New("disk gone") })
	if err != nil {
		t.Fatal(err)
	}
	reply := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "found it"}}}
	if _, err := w.AppendMessage(reply); err == nil || !strings.Contains(err.Error(), "could not be synced: disk gone") {
		t.Fatalf("append after a failed creation sync: %v", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Close after a failed creation sync: %v", err)
	}
	tr, err := Open(path)
	if err != nil || len(tr.Entries) != 0 {
		t.Fatalf("the transcript holds %d entries after a failed sync (%v), want only its header", len(tr.Entries), err)
	}
}

// TestCreateSyncingClose: closing a transcript right after creating it
// waits for its sync.
func TestCreateSyncingClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.jsonl")
	w, _, err := CreateSyncing(nil, path, Header{ID: "c1", Cwd: "/p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if syncCount(path) != 1 || syncCount(dir) != 1 {
		t.Errorf("after Close: file synced %d times, directory %d, want 1 and 1", syncCount(path), syncCount(dir))
	}
}
