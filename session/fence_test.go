package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// fenceRig is a transcript whose start entry of attempt "a1" under epoch
// 3 the supervisor wrote, and the fence in front of it.
type fenceRig struct {
	path  string
	w     *Writer
	fence *Fence
	lease error // what the lease check answers
}

func newFenceRig(t *testing.T) *fenceRig {
	t.Helper()
	r := &fenceRig{path: filepath.Join(t.TempDir(), "c1.jsonl")}
	w, _, err := CreateWith(r.path, Header{ID: NewID(), Cwd: "/p"}, Entry{Attempt: &AttemptEntry{Phase: PhaseStart, AttemptID: "a1", Epoch: 3}}, Entry{Message: ptr(model.UserText("find the tests"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	tr, err := Open(r.path)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	r.fence = NewFence(w, tr.View(), "a1", 3, func() error { return r.lease })
	return r
}

func ptr[T any](v T) *T { return &v }

// encode is what a remote worker sends: entries encoded on its side.
func encode(t *testing.T, entries ...Entry) [][]byte {
	t.Helper()
	_, lines, err := EncodeEntries(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func msg(m model.Message) Entry { return Entry{Message: &m} }

func endOf(attempt string, epoch int64) Entry {
	return Entry{Attempt: &AttemptEntry{Phase: PhaseEnd, AttemptID: attempt, Epoch: epoch, Status: "completed", Turns: 1, FinalText: "done", FinalTextLen: 4}}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestFenceWritesAWorkersAttempt: batches in order are written as sent and
// acknowledged with their offsets; a batch sent again is acknowledged
// again and written once; the end entry closes the fence; the transcript
// reads back as if the worker had written it itself.
func TestFenceWritesAWorkersAttempt(t *testing.T) {
	t.Parallel()
	r := newFenceRig(t)
	call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "ls", Args: []byte(`{}`)}}}
	result := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c1", ToolName: "ls", Content: "a_test.go"}}}
	batches := []Append{
		{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, msg(call))},
		{Seq: 2, AttemptID: "a1", Epoch: 3, Lines: encode(t, msg(result)), Durable: true},
		{Seq: 3, AttemptID: "a1", Epoch: 3, Lines: encode(t, msg(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "done"}}}), endOf("a1", 3)), Durable: true},
	}
	before := size(t, r.path)
	first, err := r.fence.Append(batches[0])
	if err != nil || first.Seq != 1 || len(first.Offsets) != 1 || first.Offsets[0] != before {
		t.Fatalf("first batch: %+v, %v; want it at offset %d", first, err, before)
	}
	if _, err := r.fence.Append(batches[1]); err != nil {
		t.Fatal(err)
	}
	grown := size(t, r.path)
	again, err := r.fence.Append(batches[1])
	if err != nil || again.Seq != 2 || size(t, r.path) != grown {
		t.Fatalf("a re-sent batch: %+v, %v, file %d → %d bytes; want it acknowledged and not written again", again, err, grown, size(t, r.path))
	}
	if _, err := r.fence.Append(batches[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.fence.Append(Append{Seq: 4, AttemptID: "a1", Epoch: 3, Lines: encode(t, msg(model.UserText("more")))}); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "already ended") {
		t.Errorf("a batch after the end: %v, want fenced", err)
	}
	tr, err := Open(r.path)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := tr.LastAttemptEnd()
	if len(tr.Messages) != 4 || !ok || end.AttemptID != "a1" || end.FinalText != "done" || tr.Torn != nil {
		t.Fatalf("transcript holds %d messages, end %+v (%v), torn %+v", len(tr.Messages), end, ok, tr.Torn)
	}
}

// TestFenceRefuses: every batch a stale or broken worker could send is
// refused as fenced, nothing of it is written, and the fence stays closed
// for the valid batch that follows.
func TestFenceRefuses(t *testing.T) {
	t.Parallel()
	say := func(text string) Entry {
		return msg(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: text}}})
	}
	cases := []struct {
		name string
		// prior batches, accepted
		prior []func(t *testing.T) Append
		bad   func(t *testing.T, r *fenceRig) Append
		want  string
	}{
		{name: "stale epoch", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 2, Lines: encode(t, say("x"))}
		}, want: "epoch 2"},
		{name: "another attempt", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a0", Epoch: 3, Lines: encode(t, say("x"))}
		}, want: `attempt "a0"`},
		{name: "gap", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 2, AttemptID: "a1", Epoch: 3, Lines: encode(t, say("x"))}
		}, want: "batches were lost"},
		{name: "repeat with other lines", prior: []func(t *testing.T) Append{func(t *testing.T) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, say("x"))}
		}}, bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, say("y"))}
		}, want: "sent again with other lines"},
		{name: "lease lost", bad: func(t *testing.T, r *fenceRig) Append {
			r.lease = errors.New("lease taken over by epoch 4")
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, say("x"))}
		}, want: "no longer holds"},
		{name: "header line", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: [][]byte{headerLine(t, NewID())}}
		}, want: "second session header"},
		{name: "start line", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, Entry{Attempt: &AttemptEntry{Phase: PhaseStart, AttemptID: "a1", Epoch: 3}})}
		}, want: "only the supervisor writes an attempt's start"},
		{name: "end of another attempt", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, endOf("a9", 3))}
		}, want: "ends attempt a9"},
		{name: "end before the last line", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, endOf("a1", 3), say("after"))}
		}, want: "before the batch's last line"},
		{name: "compaction of unseen history", bad: func(t *testing.T, _ *fenceRig) Append {
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, Entry{Compaction: &CompactionEntry{Summary: "s", FirstKept: NewID(), TokensBefore: 10}})}
		}, want: "not a message the model saw"},
		{name: "two entries on one line", bad: func(t *testing.T, _ *fenceRig) Append {
			l := encode(t, say("a"), say("b"))
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: [][]byte{append(append([]byte(nil), l[0]...), l[1]...)}}
		}, want: "line 1 of the batch"},
		{name: "no newline", bad: func(t *testing.T, _ *fenceRig) Append {
			l := encode(t, say("a"))[0]
			return Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: [][]byte{l[:len(l)-1]}}
		}, want: "does not end in a newline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFenceRig(t)
			for _, p := range tc.prior {
				if _, err := r.fence.Append(p(t)); err != nil {
					t.Fatal(err)
				}
			}
			want := readFile(t, r.path)
			bad := tc.bad(t, r)
			_, err := r.fence.Append(bad)
			if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Append = %v; want fenced, saying %q", err, tc.want)
			}
			r.lease = nil
			next := Append{Seq: uint64(len(tc.prior) + 1), AttemptID: "a1", Epoch: 3, Lines: encode(t, say("valid"))}
			if _, err := r.fence.Append(next); !errors.Is(err, ErrFenced) {
				t.Errorf("a valid batch after the refusal: %v; want the fence closed", err)
			}
			if got := readFile(t, r.path); string(got) != string(want) {
				t.Errorf("the transcript changed:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestFenceClose: once the supervisor gives the attempt up, nothing the
// worker sends is written.
func TestFenceClose(t *testing.T) {
	t.Parallel()
	r := newFenceRig(t)
	r.fence.Close("worker lost: no heartbeat for 4s")
	before := size(t, r.path)
	_, err := r.fence.Append(Append{Seq: 1, AttemptID: "a1", Epoch: 3, Lines: encode(t, msg(model.UserText("late")))})
	if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "no heartbeat") || size(t, r.path) != before {
		t.Fatalf("Append after Close = %v (file %d → %d bytes)", err, before, size(t, r.path))
	}
}
