package orchestrator

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TestLostWorkerIsKilledThenRecorded: a child whose heartbeats stop while
// it works (a frozen process, a lost machine) is lost within 4.25 s of
// its last beat at the default 1 s interval: the supervisor kills it
// first, then writes its attempt's end (interrupted, worker lost) itself,
// and answers the parent with the child's id, with which the parent
// resumes it to completion.
func TestLostWorkerIsKilledThenRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first ipc.TaskAnswer
		h := newHarness(t, Config{MaxDepth: 1, HeartbeatInterval: time.Second}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() || !w.Turn(1) {
					return
				}
				a, ok := w.Delegate("call-1", `{"prompt":"stuck"}`)
				if !ok || a.Record == nil {
					return
				}
				first = a
				if !w.Turn(2) {
					return
				}
				if _, ok := w.Delegate("call-2", `{"resume":"`+a.Record.ChildID+`","prompt":"go on"}`); !ok {
					return
				}
				w.Turn(3)
				w.Complete("main is done", model.Usage{Input: 10, Output: 1})
			},
			byPrompt: map[string]play{
				"stuck": func(w *fakeWorker) {
					if w.Start() && w.Turn(1) && w.Say("half way", model.Usage{Input: 100, Output: 10}) {
						time.Sleep(2500 * time.Millisecond) // beating, on the fake clock
						w.StopBeating()
						w.Hang()
					}
				},
				"go on": completes("finished after the resume", model.Usage{Input: 50, Output: 5}),
			},
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		if res.Status != StatusCompleted {
			t.Fatalf("run ended %s: %s", res.Status, res.Reason)
		}
		lost := h.l.byPrompt("stuck")
		lastBeat, killedAt, endAtKill := lost.beatTimes()
		if killedAt.IsZero() {
			t.Fatal("the silent worker was never killed")
		}
		if silent := killedAt.Sub(lastBeat); silent <= 4*time.Second || silent > 4250*time.Millisecond {
			t.Errorf("killed %s after its last beat, want within (4s, 4.25s]", silent)
		}
		if endAtKill {
			t.Error("the attempt's end was in the transcript before the worker was killed")
		}
		if closes, kills := lost.ends(); kills != 1 {
			t.Errorf("the lost worker was closed %d and killed %d times, want killed once", closes, kills)
		}

		// Its transcript records the end, written by the supervisor.
		tr, err := h.store.Open(lost.Spec.Transcript, false)
		if err != nil {
			t.Fatal(err)
		}
		end, ok := attemptEnd(tr, lost.Spec.AttemptID)
		if !ok || end.AttemptID != lost.Spec.AttemptID || end.Status != StatusInterrupted || end.Reason != "worker lost: no heartbeat for 4s" {
			t.Fatalf("end of the lost attempt = %+v", end)
		}
		if end.Turns != 1 || end.FinalText != "half way" || end.FinalTextLen != len("half way") || end.Usage == nil || end.Usage.Input != 100 || !end.Usage.Incomplete || end.Lifetime == nil || end.Lifetime.Attempts != 1 {
			t.Errorf("end of the lost attempt = %+v (usage %+v, lifetime %+v), want 1 turn, its text and incomplete usage", end, end.Usage, end.Lifetime)
		}
		if lastBeat.IsZero() {
			t.Error("the worker never beat before it fell silent")
		}
		if st, err := h.store.Probe(lost.Spec.Transcript); err != nil || st.State != lease.Free {
			t.Errorf("the lost child's lease is %v (%v), want free", st.State, err)
		}

		// The parent was told, with the id to resume it.
		id := tr.Header.ID
		if !first.IsError || !strings.Contains(first.Content, "task interrupted after 1 turn: worker lost: no heartbeat for 4s.") || !strings.Contains(first.Content, id) {
			t.Errorf("answer to the lost child's call:\n%s", first.Content)
		}
		if first.Record.Status != StatusInterrupted || first.Record.ChildID != id {
			t.Errorf("task record %+v", first.Record)
		}
		warn := h.rec.waitFor(t, "a lost warning", is[event.Warning](lost.Spec.Label)).Body.(event.Warning)
		if !strings.Contains(warn.Text, "sent no heartbeat for 4s: it is lost") {
			t.Errorf("warning %q", warn.Text)
		}

		// The resume continued the same transcript and completed.
		resumed := h.l.byPrompt("go on")
		if resumed == nil || resumed.Spec.Transcript != lost.Spec.Transcript {
			t.Fatalf("the resume ran %v, want the lost child's transcript", resumed)
		}
		tr, err = h.store.Open(lost.Spec.Transcript, false)
		if err != nil {
			t.Fatal(err)
		}
		if end, _ := tr.LastAttemptEnd(); end.Status != StatusCompleted || end.AttemptID != resumed.Spec.AttemptID {
			t.Errorf("after the resume the last end is %+v", end)
		}
		if _, kills := resumed.ends(); kills != 0 {
			t.Error("the resumed worker, which beat, was killed")
		}
	})
}

// TestBeatingWorkerIsNotLost: a child that beats keeps running however
// long it works without a message, and ends as it says.
func TestBeatingWorkerIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 1, HeartbeatInterval: time.Second}, cast{
			main: delegates(`{"prompt":"slow"}`),
			child: func(w *fakeWorker) {
				if w.Start() && w.Turn(1) {
					time.Sleep(time.Minute) // a long tool call, on the fake clock
					w.Complete("slow but done", model.Usage{Input: 1, Output: 1})
				}
			},
		}.play)
		if res := h.run(t, RunOptions{Prompt: "p"}); res.Status != StatusCompleted {
			t.Fatalf("run ended %s: %s", res.Status, res.Reason)
		}
		child := h.l.byPrompt("slow")
		if _, kills := child.ends(); kills != 0 {
			t.Error("a worker that beat was killed")
		}
		end := h.rec.waitFor(t, "task.end", is[event.TaskEnd](child.Spec.Label)).Body.(event.TaskEnd)
		if end.Status != StatusCompleted {
			t.Errorf("task.end %s %q", end.Status, end.Reason)
		}
		if ws, _ := bodies[event.Warning](h.rec.all()); len(ws) != 0 {
			t.Errorf("warnings %v", ws)
		}
	})
}

// TestLivenessJudgesOnlyOnTime: the loss rule at the 1 s interval, and a
// check that comes late (the supervisor itself stalled) does not judge.
func TestLivenessJudgesOnlyOnTime(t *testing.T) {
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name   string
		beats  []time.Duration
		checks []time.Duration
		lost   bool
	}{
		{"silent 4s is not lost yet", nil, ticks(250*time.Millisecond, 4*time.Second), false},
		{"silent past 4s is lost", nil, ticks(250*time.Millisecond, 4250*time.Millisecond), true},
		{"a beat resets the clock", []time.Duration{3 * time.Second}, ticks(250*time.Millisecond, 6500*time.Millisecond), false},
		{"a late check does not judge", nil, []time.Duration{250 * time.Millisecond, 9 * time.Second}, false},
		{"the next check judges", nil, []time.Duration{250 * time.Millisecond, 9 * time.Second, 9250 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveness(time.Second, t0)
			for _, b := range tc.beats {
				l.beat(ipc.Heartbeat{ProgressSeq: 1}, at(b))
			}
			lost := false
			for _, c := range tc.checks {
				lost = l.lost(at(c))
			}
			if lost != tc.lost {
				t.Errorf("lost = %v, want %v", lost, tc.lost)
			}
		})
	}
	if got := newLiveness(0, t0).lostReason(); got != "worker lost: no heartbeat for 4s" {
		t.Errorf("reason %q", got)
	}
}

// attemptEnd is the end entry of attempt id in tr.
func attemptEnd(tr *session.Transcript, id string) (session.AttemptEntry, bool) {
	for _, a := range tr.Attempts() {
		if a.Phase == session.PhaseEnd && a.AttemptID == id {
			return a, true
		}
	}
	return session.AttemptEntry{}, false
}

// ticks returns every multiple of step up to and including end.
func ticks(step, end time.Duration) []time.Duration {
	var out []time.Duration
	for d := step; d <= end; d += step {
		out = append(out, d)
	}
	return out
}
