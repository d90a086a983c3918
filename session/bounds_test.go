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

// toolTurns appends n tool turns (an assistant call, then a result of
// size bytes) to w and returns the entry ids of the assistant messages.
func toolTurns(t *testing.T, w *Writer, from, n, size int) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		id := fmt.Sprint("call-", i)
		e, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"f.go"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
		if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: strings.Repeat("x", size)}}}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestResumeHistoryBound: of a history since the last compaction longer
// than MaxResumeHistory, a resume decodes and gives the model only its
// most recent turns that fit, whole (a result never without its call),
// after the last summary and a note that says what was left out; the
// call ids and the attempts still cover the whole file.
func TestResumeHistoryBound(t *testing.T) {
	t.Parallel()
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprint("after a compaction ", compacted), func(t *testing.T) {
			t.Parallel()
			path := newTranscript(t, Header{}, nil)
			w, err := OpenWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendMessage(model.UserText("read every file")); err != nil {
				t.Fatal(err)
			}
			turns := 0
			if compacted {
				ids := toolTurns(t, w, 0, 10, 1000)
				if _, err := w.AppendCompaction(CompactionEntry{Summary: "read ten files", FirstKept: ids[9]}); err != nil {
					t.Fatal(err)
				}
				turns = 10
			}
			const size = 64 << 10
			n := MaxResumeHistory/size + 40
			ids := toolTurns(t, w, turns, n, size)
			turns += n
			w.Close()

			r, err := ReadForResume(path)
			if err != nil {
				t.Fatal(err)
			}
			h := r.View()
			msgs := h.Messages()
			// The skeleton is the history's (without the summary and the
			// note); the call ids are the whole file's.
			head := 1
			if compacted {
				head = 2
			}
			if len(r.Skeleton()) != len(msgs)-head || len(r.CallIDs()) != turns {
				t.Fatalf("%d skeletons and %d call ids, want %d and %d", len(r.Skeleton()), len(r.CallIDs()), len(msgs)-head, turns)
			}
			i := 0
			if compacted {
				if !strings.Contains(msgs[0].Text(), "read ten files") {
					t.Fatalf("history starts with %q, want the summary", msgs[0].Text())
				}
				i = 1
			}
			note := msgs[i].Text()
			if r.Omitted == nil || !strings.Contains(note, fmt.Sprintf("the %d earliest messages", r.Omitted.Messages)) || !strings.Contains(note, "were left out") {
				t.Fatalf("omitted %+v, note %q", r.Omitted, note)
			}
			tail := msgs[i+1:]
			if tail[0].Role != model.RoleAssistant || len(tail)%2 != 0 || tail[len(tail)-1].Results[0].ToolCallID != fmt.Sprint("call-", turns-1) {
				t.Fatalf("the tail of %d messages starts with a %s message", len(tail), tail[0].Role)
			}
			if got, want := h.ids[i+1], ids[len(ids)-len(tail)/2]; got != want {
				t.Errorf("the tail starts at entry %s, want %s", got, want)
			}
			if r.decoded > MaxResumeHistory || r.decoded < MaxResumeHistory-2*size-4096 {
				t.Errorf("decoded %d bytes, want the most that fits in %d", r.decoded, MaxResumeHistory)
			}
			if scan := ScanPairs(tail); scan.State != Consistent {
				t.Errorf("the tail's calls and results: %v %s", scan.State, scan.Reason)
			}
		})
	}
}

// TestResumeHistoryBoundKeepsACallWithItsResult: when even the last turn
// passes the bound (a result line past MaxResumeLine whose pieces are too
// short to clip), the tail starts at the call of that turn's results,
// and the messages before it are what is left out.
func TestResumeHistoryBoundKeepsACallWithItsResult(t *testing.T) {
	t.Parallel()
	const pieces, piece = 70, 250_000 // under resumeKeep each, over MaxResumeHistory together
	calls := model.Message{Role: model.RoleAssistant}
	results := model.Message{Role: model.RoleToolResult}
	for i := range pieces {
		id := fmt.Sprint("big-", i)
		calls.ToolCalls = append(calls.ToolCalls, model.ToolCall{ID: id, Name: "read", Args: json.RawMessage(`{}`)})
		results.Results = append(results.Results, model.ToolResult{ToolCallID: id, ToolName: "read", Content: strings.Repeat("y", piece)})
	}
	path := writeMessages(t, model.UserText("read them"), calls, results)
	r, err := ReadForResume(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := r.View().Messages()
	if r.Omitted == nil || r.Omitted.Messages != 1 || len(msgs) != 3 || len(msgs[1].ToolCalls) != pieces || len(msgs[2].Results) != pieces {
		t.Fatalf("omitted %+v, history of %d messages", r.Omitted, len(msgs))
	}
	if len(r.Clipped) != 0 || len(msgs[2].Results[pieces-1].Content) != piece {
		t.Errorf("a result too short to clip was clipped: %+v", r.Clipped)
	}
}
