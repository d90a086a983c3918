package orchestrator

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TestFromTranscript: a worker that died before its outcome reached the
// supervisor is told from its transcript: its own end entry when it wrote
// one (a second Ctrl-C after it recorded the cancel), else the turns and
// usage it recorded — also when the end is one its supervisor wrote for it
// lost. A result that came with its outcome is left alone.
func TestFromTranscript(t *testing.T) {
	t.Parallel()
	dir := "/ink-test/sessions"
	o := &Orchestrator{store: newMemStore()}
	write := func(name string, end bool, lostEnd ...string) string {
		p := filepath.Join(dir, name+".jsonl")
		w, err := o.store.(*memStore).writer(p, session.Header{Type: "session", Version: session.Version, ID: name, CreatedAt: time.Now().UTC(), Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		// An earlier attempt, which must not count.
		must(w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "old", Epoch: 1, Time: time.Now().UTC()}))
		_, err = w.AppendMessage(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "old"}}, Usage: &model.Usage{Input: 5000}})
		must(err)
		must(w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: "old", Epoch: 1, Status: "completed", Turns: 1, Time: time.Now().UTC()}))
		must(w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a2", Epoch: 2, Time: time.Now().UTC()}))
		_, err = w.AppendMessage(model.UserText("go"))
		must(err)
		_, err = w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "bash", Args: []byte(`{"command":"sleep 9"}`)}}, Usage: &model.Usage{Input: 700, Output: 20}})
		must(err)
		if len(lostEnd) > 0 {
			must(w.AppendAttempt(session.LostEnd(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a2", Epoch: 2}, lostEnd[0], session.Lifetime{})))
		}
		if end {
			u := model.Usage{Input: 700, Output: 20}
			must(w.AppendAttempt(session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: "a2", Epoch: 2, Status: "aborted", Reason: "cancelled by the user", Turns: 1, Usage: &u, Time: time.Now().UTC()}))
		}
		return p
	}
	ended, cut := write("ended", true), write("cut", false)
	workerLost := "worker lost: the remote worker's stream broke"
	lostEnded := write("lost", false, workerLost)
	lost := "the worker process (pid 42) exited with status 0 before reporting an outcome"
	for _, c := range []struct {
		name string
		in   attemptResult
		path string
		want attemptResult
	}{
		{"end recorded, outcome lost", attemptResult{Status: "aborted", Reason: lost, AttemptID: "a2", Launched: true}, ended,
			attemptResult{Status: "aborted", Reason: "cancelled by the user; then " + lost, Turns: 1, Usage: model.Usage{Input: 700, Output: 20}, AttemptID: "a2", Epoch: 2, Launched: true}},
		{"killed before its end", attemptResult{Status: "aborted", Reason: "killed", AttemptID: "a2", Launched: true}, cut,
			attemptResult{Status: "aborted", Reason: "killed", Turns: 1, Usage: model.Usage{Input: 700, Output: 20, Incomplete: true}, AttemptID: "a2", Launched: true}},
		{"end recorded for a lost worker", attemptResult{Status: "crash", Reason: lost, AttemptID: "a2", Launched: true}, lostEnded,
			attemptResult{Status: "interrupted", Reason: workerLost + "; then " + lost, Turns: 1, Usage: model.Usage{Input: 700, Output: 20, Incomplete: true}, AttemptID: "a2", Epoch: 2, Launched: true}},
		{"outcome received", attemptResult{Status: "crash", Reason: "x", AttemptID: "a2", Epoch: 2, Launched: true}, ended,
			attemptResult{Status: "crash", Reason: "x", AttemptID: "a2", Epoch: 2, Launched: true}},
		{"never launched", attemptResult{Status: "crash", Reason: "no binary", AttemptID: "a2"}, ended,
			attemptResult{Status: "crash", Reason: "no binary", AttemptID: "a2"}},
		{"no transcript", attemptResult{Status: "crash", Reason: "x", AttemptID: "a2", Launched: true}, filepath.Join(dir, "none.jsonl"),
			attemptResult{Status: "crash", Reason: "x", AttemptID: "a2", Launched: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := o.fromTranscript(c.in, c.path)
			if got.Status != c.want.Status || got.Reason != c.want.Reason || got.Turns != c.want.Turns || got.Usage != c.want.Usage || got.Epoch != c.want.Epoch {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
