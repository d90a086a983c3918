package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sessionAt creates a main session of /home/me/proj in home created at t.
func sessionAt(t *testing.T, home string, created time.Time) family {
	t.Helper()
	f := family{home: home, parent: NewID()}
	f.main = MainPath(home, "/home/me/proj", f.parent)
	w, err := Create(f.main, Header{ID: f.parent, Cwd: "/home/me/proj", CreatedAt: created})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	return f
}

// holderIDs are the session ids of ChildHolders(home, proj, id, scan).
func holderIDs(t *testing.T, home, id string, scan bool) []string {
	t.Helper()
	hs, err := ChildHolders(home, "/home/me/proj", id, scan)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hs {
		if h.Path != MainPath(home, "/home/me/proj", h.Header.ID) {
			t.Errorf("holder %s at %s", h.Header.ID, h.Path)
		}
		out = append(out, h.Header.ID)
	}
	return out
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestChildHoldersByName: the child's file name finds its session, newest
// first among the sessions that have one, and a session whose other
// children are not named after the id is not a holder.
func TestChildHoldersByName(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	old, mid, young := sessionAt(t, home, t0), sessionAt(t, home, t0.Add(time.Hour)), sessionAt(t, home, t0.Add(2*time.Hour))
	id := NewID()
	old.child(t, id+".jsonl", old.owned(id), "completed")
	young.child(t, id+".jsonl", old.owned(id), "completed") // a copy: not-owned there, but it holds the id
	mid.child(t, "decoy.jsonl", mid.owned(NewID()), "completed")
	if got := holderIDs(t, home, id, false); !sameIDs(got, []string{young.parent, old.parent}) {
		t.Errorf("holders = %v, want newest first [%s %s]", got, young.parent, old.parent)
	}
	if got := holderIDs(t, home, NewID(), false); len(got) != 0 {
		t.Errorf("an unknown id has holders %v", got)
	}
	if _, err := ChildHolders(home, "/home/me/proj", "../"+id, false); lookupCode(t, err).Code != CodeBadID {
		t.Errorf("bad id: %v", err)
	}
	if got, err := ChildHolders(t.TempDir(), "/home/me/proj", id, true); err != nil || len(got) != 0 {
		t.Errorf("empty home: %v %v", got, err)
	}
}

// TestChildHoldersFallBack: when the name is missing (the file renamed),
// stale (the file named after the id holds another child), deleted, or a
// crash left the named file without its bytes, the names find no holder
// and the header scan finds the one that really holds the child, if any.
func TestChildHoldersFallBack(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	owner, other := sessionAt(t, home, t0), sessionAt(t, home, t0.Add(time.Hour))
	id := NewID()

	// Missing: the child lives under another name.
	owner.child(t, "moved-by-hand.jsonl", owner.owned(id), "completed")
	if got := holderIDs(t, home, id, false); len(got) != 0 {
		t.Errorf("missing name: by name %v", got)
	}
	if got := holderIDs(t, home, id, true); !sameIDs(got, []string{owner.parent}) {
		t.Errorf("missing name: scan = %v, want [%s]", got, owner.parent)
	}

	// Stale: the newer session has a file of that name holding another child.
	other.child(t, id+".jsonl", other.owned(NewID()), "completed")
	if got := holderIDs(t, home, id, false); len(got) != 0 {
		t.Errorf("stale name: by name %v", got)
	}
	if got := holderIDs(t, home, id, true); !sameIDs(got, []string{owner.parent}) {
		t.Errorf("stale name: scan = %v, want [%s]", got, owner.parent)
	}

	// Deleted: nothing holds it any more.
	if err := os.Remove(filepath.Join(ChildrenDir(owner.main), "moved-by-hand.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, scan := range []bool{false, true} {
		if got := holderIDs(t, home, id, scan); len(got) != 0 {
			t.Errorf("deleted (scan %v): %v", scan, got)
		}
	}

	// Never started: a crash kept the name but not the bytes.
	gone := NewID()
	if err := os.WriteFile(filepath.Join(ChildrenDir(owner.main), gone+".jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, scan := range []bool{false, true} {
		if got := holderIDs(t, home, gone, scan); len(got) != 0 {
			t.Errorf("never started (scan %v): %v", scan, got)
		}
	}

	// Unsafe under its own name: a symlink, a broken header. FindChild
	// refuses both as malformed, so both hold the id.
	link, broken := NewID(), NewID()
	if err := os.Symlink(f0(t, owner), filepath.Join(ChildrenDir(other.main), link+".jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ChildrenDir(owner.main), broken+".jsonl"), []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, want string }{{link, other.parent}, {broken, owner.parent}} {
		for _, scan := range []bool{false, true} {
			if got := holderIDs(t, home, tc.id, scan); !sameIDs(got, []string{tc.want}) {
				t.Errorf("unsafe %s (scan %v): %v, want [%s]", tc.id, scan, got, tc.want)
			}
		}
	}
}

// f0 is a regular child transcript of f to point a symlink at.
func f0(t *testing.T, f family) string {
	t.Helper()
	id := NewID()
	return f.child(t, "target-"+id+".jsonl", f.owned(id))
}
