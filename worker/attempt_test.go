package worker

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// fakeStream records what the attempt sends to its host; the host sends
// nothing.
type fakeStream struct {
	sent []ipc.WorkerMsg
}

func (f *fakeStream) Send(m ipc.WorkerMsg) error {
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeStream) Recv() (ipc.HostMsg, error) { return nil, io.EOF }

// transcript writes a transcript with msgs and returns its path, header and
// bytes.
func transcript(t *testing.T, msgs ...model.Message) (string, session.Header, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "child.jsonl")
	h := session.Header{Type: "session", Version: session.Version, ID: "child1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Cwd: "/src"}
	w, err := session.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, h, data
}

func testAttempt(spec ipc.AttemptSpec) (*attempt, *fakeStream) {
	s := &fakeStream{}
	return newAttempt(spec, s, slog.New(slog.DiscardHandler)), s
}

func call(id, name string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Args: json.RawMessage(`{}`)}
}

func result(id, name, text string) model.Message {
	return model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: name, Content: text}}}
}

// TestOpenTranscriptRefusals: a header changed since validation, a crash
// tail without permission to repair, and a history broken beyond a crash
// tail are refused, and the file stays byte-identical.
func TestOpenTranscriptRefusals(t *testing.T) {
	tail := []model.Message{model.UserText("go"), {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("c1", "bash")}}}
	cases := []struct {
		name   string
		msgs   []model.Message
		spec   func(h session.Header, path string) ipc.AttemptSpec
		code   session.Code
		reason string
	}{
		{"header changed", []model.Message{model.UserText("go")}, func(h session.Header, path string) ipc.AttemptSpec {
			h.Cwd = "/elsewhere"
			hdr, _ := json.Marshal(h)
			return ipc.AttemptSpec{Transcript: path, ExpectHeader: hdr, Repair: true}
		}, session.CodeHeaderChanged, "changed since it was validated"},
		{"repair not allowed", tail, func(h session.Header, path string) ipc.AttemptSpec {
			return ipc.AttemptSpec{Transcript: path}
		}, session.CodeMalformed, "repair was not allowed"},
		{"gap mid-history", append(append([]model.Message(nil), tail...), model.UserText("more")), func(h session.Header, path string) ipc.AttemptSpec {
			return ipc.AttemptSpec{Transcript: path, Repair: true}
		}, session.CodeMalformed, "cannot be continued"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, h, before := transcript(t, c.msgs...)
			a, _ := testAttempt(c.spec(h, path))
			w, _, refused := a.openTranscript(nil, session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a2"}, model.UserText("continue"))
			if w != nil {
				w.Close()
			}
			if refused == nil || refused.Status != session.StatusRefused || refused.Code != c.code || !strings.Contains(refused.Reason, c.reason) {
				t.Fatalf("outcome %+v, want a refusal %s saying %q", refused, c.code, c.reason)
			}
			// The code travels beside the reason, not inside it.
			if strings.HasPrefix(refused.Reason, string(c.code)) {
				t.Errorf("reason %q starts with its code", refused.Reason)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatalf("the refused transcript changed:\n%s", after)
			}
		})
	}
}

// TestOpenTranscriptRepairsInCallOrder: a crash tail whose calls are
// answered partly from children and partly as outcome-unknown gets its
// results in call order, each task answer with its TaskRecord.
func TestOpenTranscriptRepairsInCallOrder(t *testing.T) {
	path, h, before := transcript(t,
		model.UserText("go"),
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call("t1", "task"), call("r1", "read"), call("t2", "task")}},
		result("r1", "read", "file text"),
	)
	hdr, _ := json.Marshal(h)
	ans := ipc.Answer{Message: result("t2", "task", "child two's answer"), TaskRecord: json.RawMessage(`{"version":1,"childId":"kid2","status":"completed"}`)}
	a, stream := testAttempt(ipc.AttemptSpec{Transcript: path, ExpectHeader: hdr, Repair: true, Answers: []ipc.Answer{ans}})
	w, history, refused := a.openTranscript(nil, session.AttemptEntry{Phase: session.PhaseStart, AttemptID: "a2"}, model.UserText("continue"))
	if refused != nil {
		t.Fatalf("refused: %+v", refused)
	}
	w.Close()
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the repair changed bytes that were already there")
	}
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// The repairs, then the attempt's start and prompt, as one batch.
	if n := len(tr.Messages); n != 6 || tr.Messages[5].Text() != "continue" {
		t.Fatalf("after the repairs: %d messages, the last %+v; want the prompt after two repairs", n, tr.Messages[n-1])
	}
	if at := tr.Attempts(); len(at) != 1 || at[0].Phase != session.PhaseStart || at[0].AttemptID != "a2" {
		t.Fatalf("attempt entries after the repairs: %+v, want the start of a2", at)
	}
	var order []string
	for _, m := range tr.Messages[3:5] {
		r := m.Results[0]
		order = append(order, r.ToolCallID)
		switch r.ToolCallID {
		case "t1":
			if r.Content != session.UnknownOutcomeText || !r.IsError {
				t.Errorf("t1 answered %+v", r)
			}
		case "t2":
			if !bytes.Contains(m.TaskRecord, []byte(`"childId":"kid2"`)) || r.Content != "child two's answer" {
				t.Errorf("t2 answered %+v with record %s", r, m.TaskRecord)
			}
		}
	}
	if strings.Join(order, ",") != "t1,t2" {
		t.Fatalf("repairs in order %v, want t1,t2", order)
	}
	if history.Len() != 6 {
		t.Fatalf("history has %d messages, want 6", history.Len())
	}
	if len(stream.sent) != 1 {
		t.Fatalf("want one warning event, got %v", stream.sent)
	}
	if ev, ok := stream.sent[0].(ipc.Event); !ok || ev.Body.Kind() != "warning" {
		t.Fatalf("want one warning event, got %v", stream.sent)
	}
}

// TestLoopCapsAreSessionCaps: the loop's caps become the outcome's by the
// same word, so the two vocabularies cannot drift apart unnoticed.
func TestLoopCapsAreSessionCaps(t *testing.T) {
	for loopCap, want := range map[string]session.Cap{"": "", loop.CappedTurns: session.CappedTurns, loop.CappedBudget: session.CappedBudget} {
		if got := capOf(loopCap); got != want || !got.Known() {
			t.Errorf("capOf(%q) = %q, want %q", loopCap, got, want)
		}
	}
}
