package session

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// benchTranscript writes a transcript of about size bytes of tool turns.
func benchTranscript(b *testing.B, size int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	w, err := Create(path, Header{ID: NewID(), Cwd: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("line of tool output ✓\n", 400)
	for i, written := 0, 0; written < size; i++ {
		id := fmt.Sprintf("c%d", i)
		w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)}}})
		e, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: out}}})
		if err != nil {
			b.Fatal(err)
		}
		written = int(e.Offset)
	}
	w.Close()
	return path
}

// BenchmarkOpen measures a full parse of a 16 MB transcript.
func BenchmarkOpen(b *testing.B) {
	path := benchTranscript(b, 16<<20)
	tr, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(tr.Size)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Open(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRepairTailClean measures the tail check of a clean 16 MB
// transcript, which reads only its last line.
func BenchmarkRepairTailClean(b *testing.B) {
	path := benchTranscript(b, 16<<20)
	for b.Loop() {
		if _, err := RepairTail(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMessage measures appending a user message (no fsync).
func BenchmarkAppendMessage(b *testing.B) {
	path := filepath.Join(b.TempDir(), "a.jsonl")
	w, err := Create(path, Header{ID: NewID(), Cwd: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	m := model.UserText(strings.Repeat("x", 1000))
	for b.Loop() {
		if _, err := w.AppendMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}
