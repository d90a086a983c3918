package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// TestFileStoreIntegration is the integration test of the default Store
// against INK_HOME's files: what a worker wrote is read back through it as
// package session and lease read it, a lost attempt's end is written
// under the lease with a torn tail repaired, and a shell session is
// created under its lease and released on Close.
func TestFileStoreIntegration(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/proj"
	s := fileStore{interval: 20 * time.Millisecond}
	mainID, childID := session.NewID(), session.NewID()
	mainPath := session.MainPath(home, cwd, mainID)
	childPath := session.ChildPath(mainPath, childID)

	// A shell session, created under its lease.
	sw, err := s.CreateSession(mainPath, lease.Owner{AttemptID: session.NewID(), SessionID: mainID}, session.Header{ID: mainID, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{taskCallOf("c1", `{"prompt":"job"}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := sw.Sync(); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Probe(mainPath); err != nil || st.State != lease.Held {
		t.Fatalf("the session's lease is %v (%v) while it is open", st.State, err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Probe(mainPath); err != nil || st.State != lease.Free {
		t.Fatalf("the session's lease is %v (%v) after Close", st.State, err)
	}

	// A child whose worker started an attempt, said something and was
	// killed mid-line.
	launch := &session.LaunchRecord{Version: 1, ParentSessionID: mainID, ChildID: childID, InkVersion: version.Ink, Binding: testBinding, Cwd: cwd,
		Tools: []string{"read"}, System: session.SystemRef{SHA256: session.SystemFingerprint("x")}, Depth: 1, MaxDepth: 1}
	w, err := session.Create(childPath, session.Header{ID: childID, Cwd: cwd, Parent: mainID, Launch: launch})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a1", Epoch: 1}))
	_, err = w.AppendMessage(model.UserText("job"))
	must(err)
	_, err = w.AppendMessage(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "half way"}}, Usage: &model.Usage{Input: 9}})
	must(err)
	must(w.Close())
	f, err := os.OpenFile(childPath, os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString(`{"type":"message","mess`)
	must(err)
	must(f.Close())

	if !s.Exists(childPath) || s.Exists(childPath+".none") {
		t.Error("Exists is wrong")
	}
	if h, err := s.Header(childPath); err != nil || h.ID != childID {
		t.Errorf("Header = %+v, %v", h, err)
	}
	if tail, err := s.Tail(childPath); err != nil || tail.LastEnd != nil || !tail.StartedSince || !tail.HasMessages {
		t.Errorf("Tail = %+v, %v", tail, err)
	}
	for _, lean := range []bool{false, true} {
		if tr, err := s.Open(childPath, lean); err != nil || len(tr.Messages) != 2 || tr.Torn == nil {
			t.Errorf("Open(lean %v) = %v", lean, err)
		}
	}
	if kids, err := s.Children(mainPath); err != nil || len(kids) != 1 || kids[0].ID != childID || kids[0].LastStatus != session.StatusUnfinished {
		t.Errorf("Children = %+v, %v", kids, err)
	}
	if info, err := s.FindChild(mainPath, mainID, childID); err != nil || info.Path != childPath {
		t.Errorf("FindChild = %+v, %v", info, err)
	}
	if ss, err := s.Sessions(home, cwd); err != nil || len(ss) != 1 || ss[0].ID != mainID {
		t.Errorf("Sessions = %+v, %v", ss, err)
	}
	if mains, kids := s.Named(home, childID); len(mains) != 0 || len(kids) != 1 || kids[0] != childPath {
		t.Errorf("Named(child) = %v, %v", mains, kids)
	}
	if mains, _ := s.Named(home, mainID); len(mains) != 1 || mains[0] != mainPath {
		t.Errorf("Named(main) = %v", mains)
	}

	// The supervisor records the lost attempt's end under the lease.
	o := &Orchestrator{store: s}
	owner := lease.Owner{AttemptID: "a1", SessionID: childID}
	if err := o.recordLost(childPath, "a1", owner, "worker lost: no heartbeat for 4s"); err != nil {
		t.Fatal(err)
	}
	if err := o.recordLost(childPath, "a1", owner, "again"); !errors.Is(err, errEndRecorded) {
		t.Errorf("a second record of the same end: %v, want errEndRecorded", err)
	}
	if err := o.recordLost(childPath, "other", owner, "x"); err == nil || errors.Is(err, errEndRecorded) {
		t.Errorf("recording an attempt the transcript does not hold: %v", err)
	}
	tr, err := session.Open(childPath)
	must(err)
	end, ok := tr.LastAttemptEnd()
	if !ok || tr.Torn != nil || end.Status != StatusInterrupted || end.Turns != 1 || end.FinalText != "half way" || end.Lifetime == nil || end.Lifetime.Attempts != 1 {
		t.Errorf("recorded end %+v (torn %v)", end, tr.Torn)
	}
	if life, err := s.Lifetime(childPath); err != nil || life.Attempts != 1 || !life.Usage.Incomplete {
		t.Errorf("Lifetime = %+v, %v", life, err)
	}
	if st, err := s.Probe(childPath); err != nil || st.State != lease.Free {
		t.Errorf("the child's lease is %v (%v) after the end was recorded", st.State, err)
	}

	// A live holder keeps the supervisor out.
	l, err := lease.Acquire(childPath, lease.Owner{AttemptID: "a2"})
	must(err)
	defer l.Release()
	if _, err := s.Hold(childPath, owner); !errors.Is(err, lease.ErrBusy) {
		t.Errorf("Hold of a held transcript: %v, want busy", err)
	}
	if _, err := s.CreateSession(filepath.Join(home, "x.jsonl"), owner, session.Header{}); err == nil {
		t.Error("a session with an invalid header was created")
	}
}
