package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// writeMessages appends msgs to a new transcript and returns its path.
func writeMessages(t *testing.T, msgs ...model.Message) string {
	t.Helper()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, m := range msgs {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestResumeLineBound: a message of the history whose line passes
// MaxResumeLine reaches the model clipped, with a note that names the
// bound, and is listed in Clipped; the transcript keeps it whole and the
// other messages are untouched.
func TestResumeLineBound(t *testing.T) {
	t.Parallel()
	huge := "HEAD" + strings.Repeat("é", MaxResumeLine/2+10) + "TAIL"
	calls := make([]model.ToolCall, 0, 400)
	for i := range 400 {
		calls = append(calls, model.ToolCall{ID: fmt.Sprint("c", i), Name: "ls", Args: json.RawMessage(`{"path":"` + strings.Repeat("p", 30000) + `"}`)})
	}
	path := writeMessages(t,
		model.UserText("write a lot"),
		model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: huge}}},
		model.UserText("go on"),
		// A long line whose every piece is short: nothing to clip.
		model.Message{Role: model.RoleAssistant, ToolCalls: calls},
	)
	before := readFile(t, path)
	r, err := ReadForResume(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Clipped) != 1 || r.Clipped[0].Line != 3 || r.Clipped[0].Bytes <= MaxResumeLine {
		t.Fatalf("clipped = %+v; want line 3", r.Clipped)
	}
	h := r.View().Messages()
	if len(h) != 4 {
		t.Fatalf("history of %d messages", len(h))
	}
	got := h[1].Text()
	if len(got) > resumeKeep+1000 || !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") ||
		!strings.Contains(got, "left out when this session was resumed: its transcript line (3, ") ||
		!strings.Contains(got, "over ink's resume line bound of 8 MiB; the transcript keeps it whole") {
		t.Errorf("clipped message = %.200q … (%d bytes)", got, len(got))
	}
	if h[0].Text() != "write a lot" || h[2].Text() != "go on" || len(h[3].ToolCalls) != 400 || string(h[3].ToolCalls[399].Args) != string(calls[399].Args) {
		t.Error("a message within the bound was changed")
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Error("reading for resume changed the file")
	}
	tr, err := Open(path)
	if err != nil || tr.Messages[1].Text() != huge {
		t.Fatalf("Open does not give the whole message back: %v", err)
	}
}

// TestOpenLean: long messages that are not about tasks come back as
// skeletons; task calls, task results and TaskRecords come back whole.
func TestOpenLean(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("z", 2*leanLine)
	record, _ := json.Marshal(TaskRecord{Version: 1, AttemptID: "a1", ChildID: "k1", Launched: true, Status: "completed"})
	path := writeMessages(t,
		model.UserText(long),
		model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: long}},
			ToolCalls: []model.ToolCall{{ID: "t1", Name: "task", Args: json.RawMessage(`{"prompt":"` + long + `"}`)}, {ID: "r1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)}}},
		model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "r1", ToolName: "read", Content: long}}},
		model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "t1", ToolName: "task", Content: long}}, TaskRecord: record},
		model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "w1", ToolName: "task_wait", Content: long}}, TaskRecords: []json.RawMessage{record}},
		model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "short"}}},
	)
	tr, err := OpenLean(path)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Messages
	if !tr.Lean || len(m) != 6 {
		t.Fatalf("lean %v, %d messages", tr.Lean, len(m))
	}
	if m[0].Text() != "" || m[0].Role != model.RoleUser || m[2].Results[0].Content != "" || m[2].Results[0].ToolCallID != "r1" {
		t.Errorf("long messages not about tasks were kept whole or lost their skeleton: %+v", m[2])
	}
	if len(m[1].ToolCalls) != 2 || !strings.Contains(string(m[1].ToolCalls[0].Args), long) {
		t.Error("a task call lost its arguments")
	}
	if m[3].Results[0].Content != long || len(TaskRecordsOf(m[3])) != 1 || len(TaskRecordsOf(m[4])) != 1 {
		t.Error("a task result or a TaskRecord was not kept")
	}
	if m[5].Text() != "short" {
		t.Error("a short message was not kept whole")
	}
}
