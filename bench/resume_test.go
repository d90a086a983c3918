package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// resumeSize is the size of the transcript BenchmarkResume reads.
const resumeSize = 100 << 20

// crashedTranscript writes a transcript of at least size bytes of tool
// turns (read calls with ~9 KB results, each turn with a line of assistant
// text) that ends the way a crash leaves one: the last assistant message
// made two calls, one result is on disk, and the second result's line is
// torn halfway. It returns the path and the torn bytes, which follow the
// last complete line.
func crashedTranscript(b *testing.B, size int) (string, []byte) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "crashed.jsonl")
	w, err := session.Create(path, session.Header{ID: session.NewID(), Cwd: "/p"})
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { // ✓\n", 150)
	for i, written := 0, int64(0); written < int64(size); i++ {
		id := fmt.Sprintf("call-%d", i)
		if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "Reading the next file."}},
			ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"pkg/file%d.go"}`, i))}}}); err != nil {
			b.Fatal(err)
		}
		e, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: out}}})
		if err != nil {
			b.Fatal(err)
		}
		written = e.Offset
	}
	last := []model.ToolCall{
		{ID: "last-1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)},
		{ID: "last-2", Name: "grep", Args: json.RawMessage(`{"pattern":"TODO"}`)},
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: last}); err != nil {
		b.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "last-1", ToolName: "read", Content: out}}}); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	// The torn line: the first half of the second result's entry.
	line, err := json.Marshal(map[string]any{"type": "message", "id": "torn", "message": model.Message{Role: model.RoleToolResult,
		Results: []model.ToolResult{{ToolCallID: "last-2", ToolName: "grep", Content: out}}}})
	if err != nil {
		b.Fatal(err)
	}
	return path, line[:len(line)/2]
}

// tear appends the torn bytes to path.
func tear(b *testing.B, path string, torn []byte) {
	b.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkResume measures what a resume does to a 100 MB transcript with
// a crash tail before the agent runs again: session.Open (parse every
// line, the torn one left out), ScanPairs (the order-aware call/result
// check, which must find the history repairable) and RepairTail (cut the
// torn line, fsync). The torn line is put back between iterations, untimed.
// Each iteration runs beside two floors that read the same file:
// "readfile" (os.ReadFile) and "linescan" (a bufio line scan).
func BenchmarkResume(b *testing.B) {
	path, torn := crashedTranscript(b, resumeSize)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	clean := st.Size()
	tear(b, path, torn)
	readFile := floor{name: "readfile", run: func(b *testing.B) {
		data, err := os.ReadFile(path)
		if err != nil || int64(len(data)) < clean {
			b.Fatalf("read %d bytes: %v", len(data), err)
		}
	}}
	lineScan := floor{name: "linescan", run: func(b *testing.B) {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<20)
		lines := 0
		for {
			line, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				continue
			}
			if bytes.HasSuffix(line, []byte("\n")) {
				lines++
			}
			if err != nil {
				break
			}
		}
		if lines < 2 {
			b.Fatalf("scanned %d lines", lines)
		}
	}}
	b.Run("open-validate-repair", func(b *testing.B) {
		b.SetBytes(clean + int64(len(torn)))
		paired(b, func(b *testing.B) {
			tr, err := session.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if tr.Torn == nil {
				b.Fatal("the torn tail was not seen")
			}
			if scan := session.ScanPairs(tr.Messages); scan.State != session.Repairable || len(scan.Missing) != 1 {
				b.Fatalf("pair scan: %v %s", scan.State, scan.Reason)
			}
			rep, err := session.RepairTail(path)
			if err != nil {
				b.Fatal(err)
			}
			if rep.Action != session.RepairTruncated || rep.Offset != clean {
				b.Fatalf("repair: %v", rep)
			}
			b.StopTimer()
			tear(b, path, torn)
			b.StartTimer()
		}, readFile, lineScan)
	})
}
