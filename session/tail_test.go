package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestReadTail: the end of a transcript tells whether it holds messages
// and its last attempt end, whether an attempt started since, across
// chunk boundaries, with a torn final line left out.
func TestReadTail(t *testing.T) {
	t.Parallel()
	u := model.Usage{Input: 7, Output: 1}
	write := func(t *testing.T, build func(w *Writer)) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "t.jsonl")
		w, err := Create(path, Header{ID: "t1", Cwd: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		build(w)
		w.Close()
		return path
	}
	big := strings.Repeat("x", 3*tailChunk)
	cases := []struct {
		name                   string
		build                  func(w *Writer)
		tear                   int // bytes cut off the end
		messages, ended, since bool
		endID                  string
	}{
		{name: "header only", build: func(w *Writer) {}},
		{name: "ended", messages: true, ended: true, endID: "a2", build: func(w *Writer) {
			w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a1"})
			w.AppendMessage(model.UserText("go"))
			w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Status: "completed", Usage: &u})
			w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a2"})
			w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a2", Status: "completed", Usage: &u})
		}},
		{name: "started since", messages: true, ended: true, since: true, endID: "a1", build: func(w *Writer) {
			w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a1"})
			w.AppendMessage(model.UserText("go"))
			w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Status: "completed", Usage: &u})
			w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a2"})
			w.AppendMessage(model.UserText("again"))
		}},
		{name: "far back across chunks", messages: true, ended: true, endID: "a1", build: func(w *Writer) {
			w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Status: "crash", Usage: &u})
			w.AppendMessage(model.UserText(big))
			w.AppendMessage(model.UserText(big))
		}},
		{name: "only message torn", since: true, tear: 10, build: func(w *Writer) {
			w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a1"})
			w.AppendMessage(model.UserText("go"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := write(t, c.build)
			if c.tear > 0 {
				data := readFile(t, path)
				os.WriteFile(path, data[:len(data)-c.tear], 0o600)
			}
			tail, err := ReadTail(path)
			if err != nil {
				t.Fatal(err)
			}
			if tail.Header.ID != "t1" || tail.HasMessages != c.messages || (tail.LastEnd != nil) != c.ended || tail.StartedSince != c.since {
				t.Fatalf("tail = %+v", tail)
			}
			if c.ended && tail.LastEnd.AttemptID != c.endID {
				t.Fatalf("last end %s, want %s", tail.LastEnd.AttemptID, c.endID)
			}
			// A transcript parsed from its bytes says the same.
			tr, err := Parse(path, readFile(t, path))
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.Tail(); got.Header.ID != tail.Header.ID || got.HasMessages != tail.HasMessages || got.StartedSince != tail.StartedSince ||
				(got.LastEnd == nil) != (tail.LastEnd == nil) || got.LastEnd != nil && got.LastEnd.AttemptID != tail.LastEnd.AttemptID {
				t.Fatalf("Parse(...).Tail() = %+v, ReadTail = %+v", got, tail)
			}
		})
	}
	if _, err := ReadTail(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("ReadTail of a missing file succeeded")
	}
}

// TestReadLifetime: the lifetime comes from the last end entry's sum when
// it holds one and no attempt started since, and from every attempt entry
// otherwise; both agree with what the attempt entries say.
func TestReadLifetime(t *testing.T) {
	t.Parallel()
	u := model.Usage{Input: 100, Output: 10}
	for _, withSum := range []bool{true, false} {
		for _, crashed := range []bool{false, true} {
			t.Run(fmt.Sprint(withSum, crashed), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "t.jsonl")
				w, err := Create(path, Header{ID: "t1", Cwd: "/p"})
				if err != nil {
					t.Fatal(err)
				}
				var life Lifetime
				for i := range 3 {
					id := fmt.Sprint("a", i)
					w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: id})
					life = life.Started()
					end := AttemptEntry{Phase: PhaseEnd, AttemptID: id, Status: "completed", Usage: &u}
					if withSum {
						l := life.With(&u)
						end.Lifetime = &l
						life = l
					}
					w.AppendAttempt(end)
				}
				if crashed {
					w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a3"})
				}
				w.Close()
				got, err := ReadLifetime(path)
				if err != nil {
					t.Fatal(err)
				}
				want := Lifetime{Attempts: 3, Usage: model.Usage{Input: 300, Output: 30}}
				if crashed {
					want.Attempts, want.Usage.Incomplete = 4, true
				}
				if got.Attempts != want.Attempts || got.Usage != want.Usage {
					t.Fatalf("lifetime %+v, want %+v", got, want)
				}
				tr, err := Parse(path, readFile(t, path))
				if err != nil {
					t.Fatal(err)
				}
				if p := tr.Lifetime(); p.Attempts != want.Attempts || p.Usage != want.Usage {
					t.Fatalf("Parse(...).Lifetime() = %+v, want %+v", p, want)
				}
			})
		}
	}
}
