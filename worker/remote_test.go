package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// fenceHost plays the host of a remote attempt: the transcript is on its
// side, behind a session.Fence, and every Append is answered from it.
// refuseAt, when not 0, answers that append as fenced instead, as a host
// whose lease another attempt took would.
type fenceHost struct {
	t        *testing.T
	path     string
	fence    *session.Fence
	refuseAt uint64

	in chan ipc.HostMsg

	mu      sync.Mutex
	appends int
	// late are the events whose entry was not on disk when they came.
	late []string
}

func (h *fenceHost) Recv() (ipc.HostMsg, error) {
	m, ok := <-h.in
	if !ok {
		return nil, errors.New("host closed")
	}
	return m, nil
}

func (h *fenceHost) Send(m ipc.WorkerMsg) error {
	switch m := m.(type) {
	case ipc.Append:
		h.mu.Lock()
		h.appends++
		h.mu.Unlock()
		if m.Seq == h.refuseAt {
			h.fence.Close("lease taken over by epoch 4")
		}
		ack, err := h.fence.Append(session.Append{Seq: m.Seq, AttemptID: m.AttemptID, Epoch: m.Epoch, Lines: m.Lines, Durable: m.Durable})
		if err != nil {
			h.in <- ipc.Appended{Seq: m.Seq, Fenced: errors.Is(err, session.ErrFenced), Error: err.Error()}
			return nil
		}
		h.in <- ipc.Appended{Seq: ack.Seq, Offsets: ack.Offsets}
	case ipc.Event:
		// On disk before its event: the message an event carries is in
		// the transcript when the event arrives.
		if msg, ok := m.Body.(event.Message); ok {
			data, _ := os.ReadFile(h.path)
			if text := msg.Message.Text(); text != "" && !strings.Contains(string(data), text) {
				h.mu.Lock()
				h.late = append(h.late, text)
				h.mu.Unlock()
			}
		}
	}
	return nil
}

// remoteAttempt makes the transcript a host would have opened for a remote
// attempt (header, start entry under epoch 3, prompt) and the spec and
// host of that attempt; script is the worker's model.
func remoteAttempt(t *testing.T, script string) (ipc.AttemptSpec, *fenceHost) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "child.jsonl")
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	id, attemptID := session.NewID(), session.NewID()
	prompt := model.UserText("look around")
	w, written, err := session.CreateWith(path, session.Header{ID: id, Cwd: dir},
		session.Entry{Attempt: &session.AttemptEntry{Phase: session.PhaseStart, AttemptID: attemptID, Epoch: 3}}, session.Entry{Message: &prompt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	view := session.NewView()
	_ = view.Apply(written[1])
	life := session.Lifetime{}.Started()
	spec := ipc.AttemptSpec{
		AttemptID: attemptID, SessionID: id, Label: "main/1", Depth: 1,
		Binding: model.Binding{Provider: "script", Model: scriptPath}, Tools: []string{"ls"}, Cwd: dir, Root: dir,
		Prompt: "look around", HeartbeatInterval: time.Hour, Sandbox: "danger-full-access",
		Remote: &ipc.RemoteSpec{Epoch: 3, History: view.Export(), Lifetime: life},
	}
	h := &fenceHost{t: t, path: path, fence: session.NewFence(w, view, attemptID, 3, nil), in: make(chan ipc.HostMsg, 8)}
	return spec, h
}

const lsThenAnswer = "rules:\n  - when: {turn: 1}\n    reply:\n      calls: [{tool: ls, args: {}}]\n  - reply: {text: \"all seen\"}\n"

// TestRemoteAttemptWritesThroughItsHost: a remote worker writes every
// entry through its host, each one on disk before its event, and its end
// last; the transcript reads back whole.
func TestRemoteAttemptWritesThroughItsHost(t *testing.T) {
	t.Parallel()
	spec, h := remoteAttempt(t, lsThenAnswer)
	a := newAttempt(spec, h, slog.New(slog.DiscardHandler))
	out := a.run(context.Background())
	if out.Status != session.StatusCompleted || out.Text != "all seen" || out.Epoch != 3 {
		t.Fatalf("outcome %+v", out)
	}
	h.mu.Lock()
	late := h.late
	h.mu.Unlock()
	if len(late) > 0 {
		t.Errorf("events came before their entries were on disk: %q", late)
	}
	tr, err := session.Open(h.path)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := tr.LastAttemptEnd()
	if !ok || end.AttemptID != spec.AttemptID || end.Epoch != 3 || end.Status != session.StatusCompleted || end.Lifetime == nil || end.Lifetime.Attempts != 1 {
		t.Fatalf("end entry %+v (%v)", end, ok)
	}
	if n := len(tr.Messages); n != 4 {
		t.Errorf("%d messages in the transcript, want prompt, call, result and answer", n)
	}
}

// TestRemoteAttemptFenced: when its host answers an append as fenced, the
// worker writes nothing more and ends as a fenced worker does.
func TestRemoteAttemptFenced(t *testing.T) {
	t.Parallel()
	spec, h := remoteAttempt(t, lsThenAnswer)
	h.refuseAt = 2 // the tool result
	before, _ := os.ReadFile(h.path)
	a := newAttempt(spec, h, slog.New(slog.DiscardHandler))
	out := a.run(context.Background())
	if out.Status != session.StatusCrash || !strings.Contains(out.Reason, "fenced") || !strings.Contains(out.Reason, "epoch 4") {
		t.Fatalf("outcome %s %q, want a crash saying it was fenced", out.Status, out.Reason)
	}
	h.mu.Lock()
	appends := h.appends
	h.mu.Unlock()
	if appends != 2 {
		t.Errorf("the worker sent %d appends, want none after the refusal", appends)
	}
	after, _ := os.ReadFile(h.path)
	tr, err := session.Open(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.LastAttemptEnd(); ok || len(tr.Messages) != 2 || !strings.HasPrefix(string(after), string(before)) {
		t.Errorf("after the refusal the transcript holds %d messages and an end (%v); want the prompt and the call only", len(tr.Messages), ok)
	}
}
