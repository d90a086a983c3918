package session

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// turn returns an assistant message calling read with id, and its result.
func turn(id string) []model.Message {
	return []model.Message{
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"` + id + `.go"}`)}}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: "contents of " + id}}},
	}
}

// writeCompacted writes a transcript of a prompt and n read turns and
// returns its path, its writer still open, and the entries of its messages.
func writeCompacted(t *testing.T, n int) (string, *Writer, []Entry) {
	t.Helper()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var entries []Entry
	msgs := []model.Message{model.UserText("read every file")}
	for i := 1; i <= n; i++ {
		msgs = append(msgs, turn(fmt.Sprint("c", i))...)
	}
	for _, m := range msgs {
		e, err := w.AppendMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	return path, w, entries
}

func TestCompactionRebuildsHistory(t *testing.T) {
	t.Parallel()
	path, w, entries := writeCompacted(t, 3) // prompt, a1 r1, a2 r2, a3 r3
	// Keep the last turn (a3, r3): the tail starts at entry 5.
	c1, err := w.AppendCompaction(CompactionEntry{Summary: "read c1 and c2", FirstKept: entries[5].ID, TokensBefore: 900, Trigger: "threshold",
		Usage: &model.Usage{Input: 800, Output: 30}})
	if err != nil {
		t.Fatal(err)
	}
	more := turn("c4")
	for _, m := range more {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}

	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 9 {
		t.Errorf("Messages holds %d messages, want all 9 originals", len(tr.Messages))
	}
	want := []model.Message{model.SummaryMessage("read c1 and c2")}
	for _, e := range entries[5:] {
		want = append(want, *e.Message)
	}
	want = append(want, more...)
	if got := tr.History(); !reflect.DeepEqual(got, want) {
		t.Errorf("History =\n%+v\nwant the summary, the kept turn and the later one:\n%+v", got, want)
	}
	if !strings.Contains(tr.History()[0].Text(), "read c1 and c2") || tr.History()[0].Role != model.RoleUser {
		t.Errorf("summary message = %+v; want a user message holding the summary", tr.History()[0])
	}
	cs := tr.Compactions()
	if len(cs) != 1 || cs[0].FirstKept != entries[5].ID || cs[0].TokensBefore != 900 || cs[0].Usage.Output != 30 || cs[0].Trigger != "threshold" || cs[0].Time.IsZero() {
		t.Errorf("Compactions = %+v", cs)
	}
	if c1.Line != 9 {
		t.Errorf("compaction written at line %d, want 9", c1.Line)
	}
	// Pairs are checked on the whole file, and it is consistent.
	if s := ScanPairs(tr.Messages); s.State != Consistent {
		t.Errorf("ScanPairs on the full file: %v %s", s.State, s.Reason)
	}
}

func TestSecondCompactionBuildsOnTheFirst(t *testing.T) {
	t.Parallel()
	path, w, entries := writeCompacted(t, 4)
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "first", FirstKept: entries[5].ID}); err != nil {
		t.Fatal(err)
	}
	// The second keeps only the last turn, c4 (entries 7, 8).
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "second", FirstKept: entries[7].ID}); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := tr.History()
	if len(h) != 3 || h[0].Text() != model.SummaryMessage("second").Text() || !reflect.DeepEqual(h[1:], []model.Message{*entries[7].Message, *entries[8].Message}) {
		t.Errorf("History = %+v; want the second summary and turn c4", h)
	}

	// A compaction that keeps nothing: the summary alone, then what follows.
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "third"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.UserText("go on")); err != nil {
		t.Fatal(err)
	}
	tr, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if h := tr.History(); len(h) != 2 || h[0].Text() != model.SummaryMessage("third").Text() || h[1].Text() != "go on" {
		t.Errorf("History = %+v; want the third summary and the new prompt", h)
	}
	if len(tr.Messages) != 10 || len(tr.Compactions()) != 3 {
		t.Errorf("%d messages and %d compactions; want every one kept", len(tr.Messages), len(tr.Compactions()))
	}
	if ids := tr.CallIDs(); !reflect.DeepEqual(ids, []string{"c1", "c2", "c3", "c4"}) {
		t.Errorf("CallIDs = %v; want the calls of the compacted part too", ids)
	}
}

// TestCompactionThatKeepsWhatTheModelNeverSaw refuses transcripts whose
// compaction names a tail the model could not have had: an unknown entry,
// a tool result (which would lose its call), or a message an earlier
// compaction already replaced. Such a line is damage, not a crash tail, so
// it is refused even as the final line.
func TestCompactionThatKeepsWhatTheModelNeverSaw(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		first func(entries []Entry) string
		want  string
	}{
		{"unknown entry", func([]Entry) string { return "nosuchentry" }, "not a message the model saw"},
		{"tool result", func(e []Entry) string { return e[4].ID }, "a toolResult message"},
		{"replaced by an earlier compaction", func(e []Entry) string { return e[1].ID }, "not a message the model saw"},
	}
	for _, tc := range cases {
		for _, final := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/final=%v", tc.name, final), func(t *testing.T) {
				t.Parallel()
				path, w, entries := writeCompacted(t, 3)
				if _, err := w.AppendCompaction(CompactionEntry{Summary: "first", FirstKept: entries[3].ID}); err != nil {
					t.Fatal(err)
				}
				line, err := encodeEntry(Entry{Type: EntryCompaction, ID: "bad", Compaction: &CompactionEntry{Summary: "s", FirstKept: tc.first(entries)}})
				if err != nil {
					t.Fatal(err)
				}
				appendRaw(t, path, line)
				if !final {
					appendRaw(t, path, messageLine(t, model.UserText("later")))
				}
				_, err = Open(path)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path+":10:") {
					t.Fatalf("Open = %v; want an error at line 10 saying %q", err, tc.want)
				}
			})
		}
	}
}

func TestBadCompactionLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, line, want string
	}{
		{"no summary", `{"type":"compaction","id":"x","summary":"  ","tokensBefore":3}`, "no summary"},
		{"negative tokens", `{"type":"compaction","id":"x","summary":"s","tokensBefore":-1}`, "negative tokensBefore"},
		{"negative usage", `{"type":"compaction","id":"x","summary":"s","usage":{"input":-1,"output":0}}`, "negative usage"},
		{"summary not a string", `{"type":"compaction","id":"x","summary":3}`, "invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Mid-file it is an error naming the line ...
			data := lines(headerLine(t, "h"), []byte(tc.line+"\n"), messageLine(t, model.UserText("y")))
			_, err := parseTranscript("t.jsonl", data)
			if err == nil || !strings.Contains(err.Error(), "t.jsonl:2:") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("interior: %v; want t.jsonl:2: ... %s", err, tc.want)
			}
			// ... and as the final line a torn tail, left out of the view.
			tr, err := parseTranscript("t.jsonl", lines(headerLine(t, "h"), messageLine(t, model.UserText("y")), []byte(tc.line+"\n")))
			if err != nil || tr.Torn == nil || len(tr.Compactions()) != 0 || len(tr.History()) != 1 {
				t.Errorf("final: %v, torn %+v; want a torn tail and the history without it", err, tr)
			}
		})
	}
}

// TestRepairAfterCompaction repairs a crash tail that follows a
// compaction: the pairs are checked on the whole file and the history the
// next attempt sees still starts at the summary.
func TestRepairAfterCompaction(t *testing.T) {
	t.Parallel()
	path, w, entries := writeCompacted(t, 2)
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "did c1", FirstKept: entries[3].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(turn("c3")[0]); err != nil { // a call left without its result
		t.Fatal(err)
	}
	w.Close()
	appendRaw(t, path, []byte(`{"type":"message","id":"torn","mess`))
	rep, err := Repair(path)
	if err != nil || rep.Tail.Action != RepairTruncated || len(rep.Interrupted) != 1 {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := tr.History()
	if len(h) != 5 || h[0].Text() != model.SummaryMessage("did c1").Text() || h[4].Results[0].Content != UnknownOutcomeText {
		t.Errorf("History after repair = %+v; want the summary, turn c2, the c3 call and its unknown-outcome result", h)
	}
}

func TestViewFirstKept(t *testing.T) {
	t.Parallel()
	path, w, entries := writeCompacted(t, 2)
	if _, err := w.AppendCompaction(CompactionEntry{Summary: "s", FirstKept: entries[3].ID}); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v := tr.View()
	if v.Len() != 3 {
		t.Fatalf("view has %d messages, want 3 (summary, a2, r2)", v.Len())
	}
	if id, err := v.FirstKept(2); err != nil || id != entries[3].ID {
		t.Errorf("FirstKept(2) = %q, %v; want %s", id, err, entries[3].ID)
	}
	if id, err := v.FirstKept(0); err != nil || id != "" {
		t.Errorf("FirstKept(0) = %q, %v; want none", id, err)
	}
	if _, err := v.FirstKept(3); err == nil || !strings.Contains(err.Error(), "earlier summary") {
		t.Errorf("FirstKept(3) kept the summary: %v", err)
	}
	if _, err := v.FirstKept(4); err == nil {
		t.Error("FirstKept(4) of 3 messages did not fail")
	}

	// The view follows later entries as the worker applies them, and the
	// copy handed out does not change the transcript's own.
	m := model.UserText("next")
	if err := v.Apply(Entry{Type: EntryMessage, ID: "n1", Message: &m}); err != nil {
		t.Fatal(err)
	}
	if err := v.Apply(Entry{Type: EntryCompaction, ID: "k", Compaction: &CompactionEntry{Summary: "t", FirstKept: "n1"}}); err != nil {
		t.Fatal(err)
	}
	if got := v.Messages(); len(got) != 2 || got[1].Text() != "next" {
		t.Errorf("view after apply = %+v", got)
	}
	if err := v.Apply(Entry{Type: EntryCompaction, ID: "k2", Compaction: &CompactionEntry{Summary: "t", FirstKept: entries[3].ID}}); err == nil {
		t.Error("a compaction keeping a replaced message was applied")
	}
	if v.Len() != 2 || tr.View().Len() != 3 {
		t.Errorf("a failed Apply changed the view (%d), or the copy leaked into the transcript (%d)", v.Len(), tr.View().Len())
	}
	if NewView().Len() != 0 || len(NewView().Messages()) != 0 {
		t.Error("a new view is not empty")
	}
}

func TestAttemptEndCarriesCapAndHealth(t *testing.T) {
	t.Parallel()
	path := newTranscript(t, Header{}, []model.Message{model.UserText("x")})
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	end := AttemptEntry{Phase: PhaseEnd, AttemptID: "a", Status: StatusCompleted, Turns: 4, Capped: CappedTurns,
		Health: []string{"3 failed edit/write calls within 5m0s"}}
	if err := w.AppendAttempt(end); err != nil {
		t.Fatal(err)
	}
	bad := end
	bad.Capped = "time"
	if err := w.AppendAttempt(bad); err == nil || !strings.Contains(err.Error(), "capped") {
		t.Errorf("an unknown cap was written: %v", err)
	}
	w.Close()
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := tr.LastAttemptEnd()
	if !ok || got.Capped != CappedTurns || !reflect.DeepEqual(got.Health, end.Health) {
		t.Errorf("attempt end = %+v; want the cap and the health lines back", got)
	}
}

func TestTaskRecordCarriesCapAndHealth(t *testing.T) {
	t.Parallel()
	r, err := ParseTaskRecord(readFile(t, "testdata/records/task.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Capped != CappedTurns || len(r.Health) != 1 || !strings.Contains(r.Health[0], "5 consecutive turns") {
		t.Errorf("capped %q, health %q; want them read from the fixture", r.Capped, r.Health)
	}
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseTaskRecord(raw)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Errorf("round trip changed the record: %v\n%+v\n%+v", err, back, r)
	}
}
