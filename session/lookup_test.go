package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// family is a main session with children on disk.
type family struct {
	home, main, parent string
}

func newFamily(t *testing.T) family {
	t.Helper()
	home := t.TempDir()
	f := family{home: home, parent: NewID()}
	f.main = MainPath(home, "/home/me/proj", f.parent)
	w, err := Create(f.main, Header{ID: f.parent, Cwd: "/home/me/proj"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	return f
}

// child writes a child transcript named file with header h and the given
// attempt end statuses ("" = a start without an end).
func (f family) child(t *testing.T, file string, h Header, statuses ...Status) string {
	t.Helper()
	path := filepath.Join(ChildrenDir(f.main), file)
	if h.Cwd == "" {
		h.Cwd = "/home/me/proj"
	}
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		a := NewID()
		if err := w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: a, Pid: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AppendMessage(model.UserText("work")); err != nil {
			t.Fatal(err)
		}
		if st != "" {
			if err := w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: a, Status: st}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Close()
	return path
}

// owned returns a valid child header of f.
func (f family) owned(id string) Header {
	l := validLaunch(f.parent, id)
	return Header{ID: id, Parent: f.parent, Launch: &l}
}

func lookupCode(t *testing.T, err error) *LookupError {
	t.Helper()
	var le *LookupError
	if !errors.As(err, &le) {
		t.Fatalf("error %v is not a *LookupError", err)
	}
	return le
}

func TestFindChildByHeaderID(t *testing.T) {
	t.Parallel()
	f := newFamily(t)
	id := NewID()
	path := f.child(t, "renamed-by-hand.jsonl", f.owned(id), "completed")
	f.child(t, "decoy.jsonl", f.owned(NewID()))
	got, err := FindChild(f.main, f.parent, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != path || got.Header.ID != id || got.Header.Launch.ChildID != id {
		t.Errorf("found %+v", got)
	}
	// A file named after the id but holding another id is not the child.
	other := NewID()
	f.child(t, other+".jsonl", f.owned(NewID()))
	if _, err := FindChild(f.main, f.parent, other); lookupCode(t, err).Code != CodeNotFound {
		t.Errorf("file name trusted: %v", err)
	}
}

func TestFindChildRefusals(t *testing.T) {
	t.Parallel()
	f := newFamily(t)
	done := NewID()
	f.child(t, done+".jsonl", f.owned(done), "crash", "completed")
	lost := NewID()
	f.child(t, lost+".jsonl", f.owned(lost), "")

	dup := NewID()
	f.child(t, "a.jsonl", f.owned(dup))
	f.child(t, "b.jsonl", f.owned(dup))

	foreign := NewID()
	h := f.owned(foreign)
	h.Parent = "someone-else"
	f.child(t, foreign+".jsonl", h)

	foreignLaunch := NewID()
	h = f.owned(foreignLaunch)
	h.Launch.ParentSessionID = "someone-else"
	f.child(t, foreignLaunch+".jsonl", h)

	noLaunch := NewID()
	f.child(t, noLaunch+".jsonl", Header{ID: noLaunch, Parent: f.parent})

	swapped := NewID()
	h = f.owned(swapped)
	h.Launch.ChildID = NewID()
	f.child(t, swapped+".jsonl", h)

	badLaunch := NewID()
	line := headerLine(t, badLaunch)
	raw := strings.Replace(string(line), `"cwd"`, `"parent":"`+f.parent+`","launch":{"version":7,"childId":"`+badLaunch+`"},"cwd"`, 1)
	os.WriteFile(filepath.Join(ChildrenDir(f.main), badLaunch+".jsonl"), []byte(raw), 0o600)

	garbled := NewID()
	os.WriteFile(filepath.Join(ChildrenDir(f.main), garbled+".jsonl"), []byte("{\"type\":\"sess"), 0o600)
	os.WriteFile(filepath.Join(ChildrenDir(f.main), "junk.jsonl"), []byte("junk\n"), 0o600)

	linked := NewID()
	target := f.child(t, "../../elsewhere.jsonl", f.owned(linked))
	os.Symlink(target, filepath.Join(ChildrenDir(f.main), linked+".jsonl"))
	os.Symlink(target, filepath.Join(ChildrenDir(f.main), "link.jsonl"))

	for _, tc := range []struct {
		name, id string
		code     Code
		want     []string
	}{
		{"slash", "a/b", CodeBadID, []string{"not a child id"}},
		{"dotdot", "..", CodeBadID, nil},
		{"uppercase", strings.ToUpper(done), CodeBadID, nil},
		{"empty", "", CodeBadID, nil},
		{"traversal", "../" + done, CodeBadID, nil},
		{"unknown", NewID(), CodeNotFound, []string{done + " (completed)", lost + " (unfinished)", "junk.jsonl (malformed header)", "link.jsonl (symlink)"}},
		{"ambiguous", dup, CodeAmbiguous, []string{"a.jsonl", "b.jsonl"}},
		{"header parent", foreign, CodeNotOwned, []string{"someone-else"}},
		{"launch parent", foreignLaunch, CodeNotOwned, []string{"launch record"}},
		{"missing launch", noLaunch, CodeMissingLaunch, []string{"no launch record"}},
		{"launch for another child", swapped, CodeInvalidLaunch, []string{"is for child"}},
		{"unparsable launch", badLaunch, CodeInvalidLaunch, []string{"version 7"}},
		{"garbled file named after id", garbled, CodeNotFound, []string{garbled, "never started"}},
		{"symlink named after id", linked, CodeMalformed, []string{"symlink"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := FindChild(f.main, f.parent, tc.id)
			le := lookupCode(t, err)
			if le.Code != tc.code {
				t.Fatalf("code = %s (%s), want %s", le.Code, le.Message, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(le.Message, w) {
					t.Errorf("message %q lacks %q", le.Message, w)
				}
			}
		})
	}
	if _, err := FindChild(f.main, f.parent, done); err != nil {
		t.Errorf("a valid child among broken ones: %v", err)
	}
}

func TestFindChildBadIDTouchesNoFile(t *testing.T) {
	t.Parallel()
	f := newFamily(t)
	// A children "directory" that is a symlink makes every scan fail; a bad
	// id must be refused before that scan.
	os.MkdirAll(filepath.Dir(ChildrenDir(f.main)), 0o700)
	if err := os.Symlink("/", ChildrenDir(f.main)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"../../etc/passwd", "/etc", "x/..", "A"} {
		_, err := FindChild(f.main, f.parent, id)
		if le := lookupCode(t, err); le.Code != CodeBadID {
			t.Errorf("FindChild(%q) code %s", id, le.Code)
		}
	}
	_, err := FindChild(f.main, f.parent, "ok")
	if le := lookupCode(t, err); le.Code != CodeNotFound || !strings.Contains(le.Message, "not a directory") {
		t.Errorf("symlinked children dir: %v", err)
	}
}

func TestFindChildWithoutChildren(t *testing.T) {
	t.Parallel()
	f := newFamily(t)
	_, err := FindChild(f.main, f.parent, "abc")
	le := lookupCode(t, err)
	if le.Code != CodeNotFound || !strings.Contains(le.Message, "no children") {
		t.Errorf("got %s: %s", le.Code, le.Message)
	}
}

func TestListChildren(t *testing.T) {
	t.Parallel()
	f := newFamily(t)
	a, b := NewID(), NewID()
	f.child(t, b+".jsonl", f.owned(b), "crash", "interrupted", "")
	f.child(t, a+".jsonl", f.owned(a), "completed")
	os.WriteFile(filepath.Join(ChildrenDir(f.main), "z.jsonl"), []byte("junk\n"), 0o600)
	os.WriteFile(filepath.Join(ChildrenDir(f.main), a+".jsonl.lease"), nil, 0o600)
	kids, err := ListChildren(f.main)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 3 {
		t.Fatalf("got %d children: %+v", len(kids), kids)
	}
	// Sorted by id; the unreadable file has no id and comes first.
	if kids[0].ID != "" || !strings.HasPrefix(kids[0].Problem, "malformed") {
		t.Errorf("kids[0] = %+v", kids[0])
	}
	if kids[1].ID != a || kids[1].LastStatus != "completed" || kids[1].Attempts != 1 || kids[1].Agent != "scout" || kids[1].Problem != "" {
		t.Errorf("kids[1] = %+v", kids[1])
	}
	if kids[2].ID != b || kids[2].LastStatus != StatusUnfinished || kids[2].Attempts != 3 {
		t.Errorf("kids[2] = %+v", kids[2])
	}
	none, err := ListChildren(filepath.Join(f.home, "nothing.jsonl"))
	if err != nil || len(none) != 0 {
		t.Errorf("no children dir: %v %v", none, err)
	}
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cwd := "/home/me/proj"
	mk := func(created time.Time, prompt string, statuses ...Status) string {
		id := NewID()
		path := MainPath(home, cwd, id)
		w, err := Create(path, Header{ID: id, Cwd: cwd, CreatedAt: created})
		if err != nil {
			t.Fatal(err)
		}
		w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a"})
		w.AppendMessage(model.UserText(prompt))
		w.AppendMessage(model.UserText("second prompt"))
		for _, st := range statuses {
			w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a", Status: st})
		}
		w.Close()
		return id
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	older := mk(t0, "first\n  task", "completed")
	newer := mk(t0.Add(time.Hour), strings.Repeat("long ", 100))
	f := family{home: home, main: MainPath(home, cwd, older), parent: older}
	kid := NewID()
	f.child(t, kid+".jsonl", f.owned(kid), "completed")
	broken := filepath.Join(SessionsDir(home, cwd), "broken.jsonl")
	os.WriteFile(broken, []byte("nope\n"), 0o600)
	// A transcript a crash left without its bytes never started: not listed.
	os.WriteFile(filepath.Join(SessionsDir(home, cwd), NewID()+".jsonl"), nil, 0o600)
	mk(t0, "other cwd") // same cwd; next one in another cwd must not show
	otherCwd := NewID()
	if w, err := Create(MainPath(home, "/elsewhere", otherCwd), Header{ID: otherCwd, Cwd: "/elsewhere"}); err == nil {
		w.Close()
	}

	got, err := ListSessions(home, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d sessions: %+v", len(got), got)
	}
	for _, s := range got {
		if s.ID == otherCwd {
			t.Error("a session of another cwd is listed")
		}
	}
	// broken.jsonl has no creation time and sorts by its (recent) mtime.
	if got[0].Path != broken || got[0].Problem == "" {
		t.Errorf("got[0] = %+v", got[0])
	}
	if got[1].ID != newer || got[1].LastStatus != StatusUnfinished || len([]rune(got[1].FirstPrompt)) != maxPromptRunes {
		t.Errorf("got[1] = %+v", got[1])
	}
	var o SessionSummary
	for _, s := range got {
		if s.ID == older {
			o = s
		}
	}
	if o.FirstPrompt != "first task" || o.LastStatus != "completed" || o.Children != 1 || o.ModTime.IsZero() {
		t.Errorf("older = %+v", o)
	}
	if none, err := ListSessions(t.TempDir(), cwd); err != nil || len(none) != 0 {
		t.Errorf("empty home: %v %v", none, err)
	}
}
