package orchestrator

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// bytesRead is what this process has read from files so far: rchar of
// /proc/self/io, every byte any read or pread returned, whichever code
// path made it.
func bytesRead(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatalf("count bytes read: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("count bytes read: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("count bytes read: no rchar in /proc/self/io:\n%s", data)
	return 0
}

// writeSession writes main session id of cwd created at created, with one
// message of pad bytes, and returns its path.
func writeSession(t *testing.T, home, cwd, id string, created time.Time, pad int) string {
	t.Helper()
	path := session.MainPath(home, cwd, id)
	w, err := session.Create(path, session.Header{ID: id, Cwd: cwd, CreatedAt: created})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.UserText("job " + strings.Repeat("x", pad))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeChild writes child id of the session mainPath (id parentID), named
// file, with one message of pad bytes and an attempt end.
func writeChild(t *testing.T, mainPath, parentID, cwd, file, id string, pad int) string {
	t.Helper()
	launch := &session.LaunchRecord{Version: 1, ParentSessionID: parentID, ChildID: id, InkVersion: version.Ink, Binding: testBinding, Cwd: cwd,
		Tools: []string{"read"}, System: session.SystemRef{SHA256: session.SystemFingerprint("x")}, Depth: 1, MaxDepth: 1}
	path := filepath.Join(session.ChildrenDir(mainPath), file)
	w, err := session.Create(path, session.Header{ID: id, Cwd: cwd, Parent: parentID, Launch: launch})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a1", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.UserText("work " + strings.Repeat("y", pad))); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: "a1", Status: session.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFindResumedReadsNoOtherSession: finding a child to resume (what
// `ink task --resume` and its supervisor share) beside 100 MB of other
// sessions of the same directory — newer than the owner, so that a
// newest-first walk meets them first — reads none of their bytes: only
// the owner's header and the child's. Not parallel: the count is the
// process's.
func TestFindResumedReadsNoOtherSession(t *testing.T) {
	home, cwd := t.TempDir(), "/home/me/proj"
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ownerID, childID := session.NewID(), session.NewID()
	ownerPath := writeSession(t, home, cwd, ownerID, t0, 0)
	childPath := writeChild(t, ownerPath, ownerID, cwd, childID+".jsonl", childID, 1000)
	var others int64
	for i := range 4 {
		id := session.NewID()
		p := writeSession(t, home, cwd, id, t0.Add(time.Duration(i+1)*time.Hour), 12<<20)
		k := writeChild(t, p, id, cwd, session.NewID()+".jsonl", session.NewID(), 13<<20)
		for _, f := range []string{p, k} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			others += fi.Size()
		}
	}
	if others < 100<<20 {
		t.Fatalf("the other sessions hold %d bytes, want 100 MB", others)
	}
	var own int64
	for _, f := range []string{ownerPath, childPath} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		own += fi.Size()
	}

	before := bytesRead(t)
	found, err := FindResumed(home, cwd, childID, "")
	read := bytesRead(t) - before
	if err != nil || found.OwnerPath != ownerPath || found.OwnerID != ownerID || found.Child.Path != childPath {
		t.Fatalf("FindResumed = %+v, %v", found, err)
	}
	// The owner's header and the child's (read twice: to tell the name is
	// not stale, and by FindChild), each file at most once whole. A read
	// of any other file costs at least its first 64 KiB.
	if limit := 2*own + 4<<10; read > limit {
		t.Errorf("FindResumed read %d bytes beside %d bytes of other sessions; its own files are %d bytes (limit %d)", read, others, own, limit)
	}
	t.Logf("read %d bytes (own files %d, others %d)", read, own, others)

	// The same with --parent.
	before = bytesRead(t)
	found, err = FindResumed(home, cwd, childID, ownerID)
	if read := bytesRead(t) - before; err != nil || found.Child.Path != childPath || read > 2*own+4<<10 {
		t.Errorf("with --parent: %+v, %v, read %d bytes", found, err, read)
	}
}

// TestFindResumedFallsBack: a child whose file name no longer finds it
// (renamed by hand), or is stale (the name holds another child in a newer
// session), or is gone, is still answered correctly by the header scan:
// the owner, or not-found with this directory's children.
func TestFindResumedFallsBack(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/home/me/proj"
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ownerID, newerID, childID := session.NewID(), session.NewID(), session.NewID()
	ownerPath := writeSession(t, home, cwd, ownerID, t0, 0)
	newerPath := writeSession(t, home, cwd, newerID, t0.Add(time.Hour), 0)
	moved := writeChild(t, ownerPath, ownerID, cwd, "moved-by-hand.jsonl", childID, 10)
	stale := writeChild(t, newerPath, newerID, cwd, childID+".jsonl", session.NewID(), 10)

	// Its name is missing in its owner and stale in the newer session.
	if found, err := FindResumed(home, cwd, childID, ""); err != nil || found.OwnerPath != ownerPath || found.Child.Path != moved {
		t.Errorf("missing and stale name: %+v, %v", found, err)
	}
	if err := os.Remove(moved); err != nil {
		t.Fatal(err)
	}
	found, err := FindResumed(home, cwd, childID, "")
	var le *session.LookupError
	if !errors.As(err, &le) || le.Code != session.CodeNotFound || found.OwnerPath != "" ||
		!strings.Contains(le.Message, "no session of "+cwd+" has a child with that id. Children of this directory's sessions: ") {
		t.Fatalf("deleted: %+v, %v", found, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatal(err)
	}

	// Files left byte-identical by every lookup.
	var buf bytes.Buffer
	for _, p := range []string{ownerPath, newerPath, stale} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(data)
	}
	if _, err := FindResumed(home, cwd, childID, ""); err == nil {
		t.Fatal("found a deleted child")
	}
	var again bytes.Buffer
	for _, p := range []string{ownerPath, newerPath, stale} {
		data, _ := os.ReadFile(p)
		again.Write(data)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("a lookup changed a transcript")
	}
}
