package session

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// skipTranscript writes a transcript of two turns, a compaction that keeps
// the second, and a third turn: lines 3 (the prompt), 4 (call c1) and 5
// (its result) lie before the model's history, lines 6 to 10 inside it.
// third is the id of the third turn's call. It returns the path and the
// file's lines.
func skipTranscript(t *testing.T, third string) (string, []string) {
	t.Helper()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) string {
		e, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"f.go"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: strings.Repeat("package main\n", 40)}}}); err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	if err := w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: "a1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.UserText("read the files")); err != nil {
		t.Fatal(err)
	}
	call("c1")
	kept := call("c2")
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "read f.go", FirstKept: kept}); err != nil {
		t.Fatal(err)
	}
	call(third)
	u := model.Usage{Input: 10, Output: 2}
	if err := w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Status: StatusCompleted, Usage: &u}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return path, strings.SplitAfter(string(readFile(t, path)), "\n")
}

// damage cuts line n (1-based) of lines short of its closing braces, its
// start kept, and writes the file.
func damage(t *testing.T, path string, lines []string, n int) {
	t.Helper()
	lines = append([]string(nil), lines...)
	lines[n-1] = strings.TrimSuffix(lines[n-1], "}}\n") + "\n"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// openFor continues the transcript at path for one attempt, repair allowed.
func openFor(path string) (*Opened, *Refusal, error) {
	return OpenAttempt(OpenRequest{
		Path:   path,
		Repair: true,
		Start:  AttemptEntry{Phase: PhaseStart, AttemptID: "a2"},
		Prompt: model.UserText("go on"),
	})
}

// TestReadForResumeSkipsWhatTheModelWillNotSee: a resume reads only the
// start of the user and toolResult lines before the model's history, so
// damage inside one of them does not stop it (Open refuses the file), and
// the file is only appended to; damage anywhere a resume must read — the
// history, an assistant line, the last line — is refused with Open's
// error or repaired as before; a call id written twice across a
// compaction is refused.
func TestReadForResumeSkipsWhatTheModelWillNotSee(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		third string // the third turn's call id
		line  int    // the line damaged, 0 for none
		torn  bool   // a partial line is appended
		// refused: the words of OpenAttempt's refusal ("" continues it);
		// openRefuses: Open refuses the file.
		refused     string
		openRefuses bool
	}{
		{name: "result before the last compaction", third: "c3", line: 5, openRefuses: true},
		{name: "prompt before the last compaction", third: "c3", line: 3, openRefuses: true},
		{name: "result in the history", third: "c3", line: 7, refused: ":7: invalid JSON", openRefuses: true},
		{name: "assistant line before the history", third: "c3", line: 4, refused: ":4: invalid JSON", openRefuses: true},
		{name: "call id reused across a compaction", third: "c1", refused: "tool call id c1 is used twice"},
		{name: "torn last line", third: "c3", torn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, lines := skipTranscript(t, tc.third)
			if tc.line > 0 {
				damage(t, path, lines, tc.line)
			}
			if tc.torn {
				appendRaw(t, path, []byte(`{"type":"message","id":"x","message":{"role":"assis`))
			}
			before := readFile(t, path)
			sameAsOpen(t, before)
			if _, err := Open(path); (err != nil) != tc.openRefuses {
				t.Fatalf("Open: %v, want refused %v", err, tc.openRefuses)
			}
			r, rerr := ReadForResume(path)
			o, refusal, err := openFor(path)
			if err != nil {
				t.Fatal(err)
			}
			after := readFile(t, path)
			if tc.refused != "" {
				if refusal == nil || !strings.Contains(refusal.Reason, tc.refused) {
					t.Fatalf("refusal %+v, want one that says %q", refusal, tc.refused)
				}
				if !bytes.Equal(after, before) {
					t.Fatal("a refused transcript changed")
				}
				return
			}
			if rerr != nil || refusal != nil {
				t.Fatalf("ReadForResume: %v; OpenAttempt refused: %+v", rerr, refusal)
			}
			defer o.Writer.Close()
			kept := before
			if tc.torn {
				kept = before[:r.Torn.Offset] // the torn line cut, as before
			}
			if !bytes.HasPrefix(after, kept) || len(after) <= len(kept) {
				t.Fatal("continuing changed the transcript's bytes instead of appending to them")
			}
			msgs := o.View.Messages()
			if len(msgs) != 6 || !strings.Contains(msgs[0].Text(), "read f.go") || msgs[1].ToolCalls[0].ID != "c2" || msgs[4].Results[0].ToolCallID != "c3" || msgs[5].Text() != "go on" {
				t.Fatalf("history after continuing: %+v", msgs)
			}
			if got := strings.Join(o.Reserved, " "); got != "c1 c2 c3" {
				t.Fatalf("reserved call ids %q, want c1 c2 c3", got)
			}
			if o.Lifetime.Attempts != 2 {
				t.Fatalf("lifetime %+v, want two attempts started", o.Lifetime)
			}
		})
	}
}

// TestReadForResumeSkipsLongLines: a result line longer than the reader's
// buffer, before the history, is skipped from its start alone, damaged or
// not; one inside the history is read whole.
func TestReadForResumeSkipsLongLines(t *testing.T) {
	t.Parallel()
	for _, damaged := range []bool{false, true} {
		path := newTranscript(t, Header{}, nil)
		w, err := OpenWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("0123456789abcdef", lineBuffer/16+1000)
		for i, id := range []string{"c1", "c2"} {
			if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read"}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: long}}}); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				if _, err := w.AppendCompaction(CompactionEntry{Summary: "read c1"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.Close()
		if damaged {
			lines := strings.SplitAfter(string(readFile(t, path)), "\n")
			damage(t, path, lines, 3)
		}
		sameAsOpen(t, readFile(t, path))
		r, err := ReadForResume(path)
		if err != nil {
			t.Fatalf("damaged %v: %v", damaged, err)
		}
		if v := r.View().Messages(); len(v) != 3 || v[2].Results[0].Content != long {
			t.Fatalf("damaged %v: the history holds %d messages, want the summary and the second turn whole", damaged, len(v))
		}
		if got := strings.Join(r.CallIDs(), " "); got != "c1 c2" {
			t.Fatalf("call ids %q", got)
		}
	}
}

// TestResumeSkeletonKeepsEarlierCalls: when a compaction kept no message
// and results of the history answer calls made before it, the skeleton
// starts with those calls, so that the pair check accepts the history as
// it did when it covered the whole file.
func TestResumeSkeletonKeepsEarlierCalls(t *testing.T) {
	t.Parallel()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c0", Name: "grep"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c0", ToolName: "grep", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c2", Name: "grep"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "looked around"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c2", ToolName: "grep", Content: "y"}}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	sameAsOpen(t, readFile(t, path))
	r, err := ReadForResume(path)
	if err != nil {
		t.Fatal(err)
	}
	sk := r.Skeleton()
	if len(sk) != 2 || sk[0].Role != model.RoleAssistant || len(sk[0].ToolCalls) != 1 || sk[0].ToolCalls[0].ID != "c2" || sk[0].ToolCalls[0].Name != "grep" {
		t.Fatalf("skeleton %+v, want the call c2 and its result", sk)
	}
	if scan := ScanPairs(sk); scan.State != Consistent {
		t.Fatalf("pair scan: %v %s", scan.State, scan.Reason)
	}
}
