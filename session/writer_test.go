package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions", "-p", "main", "children", "c1.jsonl")
	launch := validLaunch("01main", "c1")
	launch.Tools = []string{"read", "grep", "ls", "find"} // Create sorts them
	created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w, err := Create(path, Header{ID: "c1", Cwd: "/home/me/proj", Parent: "01main", CreatedAt: created, Launch: &launch})
	if err != nil {
		t.Fatal(err)
	}
	start := AttemptEntry{Phase: PhaseStart, AttemptID: "a1", Epoch: 3, Pid: 4242, Time: created}
	if err := w.AppendAttempt(start); err != nil {
		t.Fatal(err)
	}
	msgs := sampleMessages()
	var entries []Entry
	for _, m := range msgs {
		e, err := w.AppendMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	end := AttemptEntry{Phase: PhaseEnd, AttemptID: "a1", Epoch: 3, Pid: 4242, Time: created.Add(time.Minute), Status: "completed",
		Turns: 2, Usage: &model.Usage{Input: 10, Output: 5}, FinalText: "Entry point is src/auth/login.go ✅", FinalTextLen: len("Entry point is src/auth/login.go ✅")}
	if err := w.AppendAttempt(end); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(model.UserText("late")); err == nil {
		t.Error("AppendMessage after Close succeeded")
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode = %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode = %v, want 0700", di.Mode().Perm())
	}

	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Torn != nil {
		t.Errorf("Torn = %+v, want nil", tr.Torn)
	}
	if !reflect.DeepEqual(tr.Messages, msgs) {
		t.Errorf("messages differ after reopen:\n got %+v\nwant %+v", tr.Messages, msgs)
	}
	if tr.Header.ID != "c1" || tr.Header.Parent != "01main" || !tr.Header.CreatedAt.Equal(created) || tr.Header.Type != "session" || tr.Header.Version != 1 {
		t.Errorf("header = %+v", tr.Header)
	}
	if got := tr.Header.Launch.Tools; !reflect.DeepEqual(got, []string{"find", "grep", "ls", "read"}) {
		t.Errorf("launch tools = %v, want sorted", got)
	}
	atts := tr.Attempts()
	if len(atts) != 2 || !reflect.DeepEqual(atts[0], start) {
		t.Errorf("attempts = %+v", atts)
	}
	last, ok := tr.LastAttemptEnd()
	if !ok || last.Status != "completed" || last.FinalText != end.FinalText || last.Usage.Input != 10 {
		t.Errorf("LastAttemptEnd = %+v, %v", last, ok)
	}
	// Entries returned by the writer carry the positions the reader sees.
	for i, e := range entries {
		got := tr.Entries[i+1]
		if got.Line != e.Line || got.Offset != e.Offset || got.ID != e.ID {
			t.Errorf("entry %d: writer said line %d offset %d id %s, reader line %d offset %d id %s", i, e.Line, e.Offset, e.ID, got.Line, got.Offset, got.ID)
		}
	}
	if string(tr.Entries[4].TaskRecord) != string(msgs[3].TaskRecord) {
		t.Errorf("task record entry = %s", tr.Entries[4].TaskRecord)
	}
	raw := string(readFile(t, path))
	if !strings.Contains(raw, `"taskRecord":{"version":1`) || !strings.Contains(raw, "<b>&amp;</b>") {
		t.Errorf("file lacks taskRecord beside message or escapes HTML:\n%s", raw)
	}
	if strings.Count(raw, "\n") != len(tr.Entries)+1 || !strings.HasSuffix(raw, "\n") {
		t.Errorf("file is not one line per entry")
	}
}

func TestCreateRefusesExistingAndBadHeaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	w, err := Create(path, Header{ID: "a", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	before := readFile(t, path)
	if _, err := Create(path, Header{ID: "a", Cwd: "/p"}); err == nil {
		t.Error("Create over an existing transcript succeeded")
	}
	if string(readFile(t, path)) != string(before) {
		t.Error("a refused Create changed the existing file")
	}
	bad := validLaunch("p", "b")
	bad.Cwd = "rel"
	for name, h := range map[string]Header{
		"bad id":       {ID: "../x", Cwd: "/p"},
		"relative cwd": {ID: "b", Cwd: "p"},
		"bad launch":   {ID: "b", Cwd: "/p", Parent: "p", Launch: &bad},
		"version 2":    {ID: "b", Cwd: "/p", Version: 2},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
		if _, err := Create(p, h); err == nil {
			t.Errorf("%s: Create succeeded", name)
		}
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: refused Create left a file", name)
		}
	}
}

func TestOpenWriterAppendsAfterExistingEntries(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages()
	path := newTranscript(t, Header{}, msgs[:2])
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := w.AppendMessage(msgs[2])
	if err != nil {
		t.Fatal(err)
	}
	if e.Line != 4 {
		t.Errorf("appended entry line = %d, want 4", e.Line)
	}
	w.Close()
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tr.Messages, msgs[:3]) {
		t.Errorf("messages = %+v", tr.Messages)
	}
	if tr.Entries[2].Offset != e.Offset {
		t.Errorf("offset = %d, reader says %d", e.Offset, tr.Entries[2].Offset)
	}
}

func TestOpenWriterRefuses(t *testing.T) {
	t.Parallel()
	good := newTranscript(t, Header{}, sampleMessages()[:1])
	dir := t.TempDir()
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	torn := writeRaw(t, lines(headerLine(t, "x"), []byte(`{"type":"message","id":"1","mess`)))
	for name, path := range map[string]string{
		"symlink":      link,
		"directory":    dir,
		"missing":      filepath.Join(dir, "nope.jsonl"),
		"partial line": torn,
		"empty":        writeRaw(t, nil),
	} {
		before, _ := os.ReadFile(path)
		if w, err := OpenWriter(path); err == nil {
			w.Close()
			t.Errorf("%s: OpenWriter succeeded", name)
		}
		after, _ := os.ReadFile(path)
		if string(before) != string(after) {
			t.Errorf("%s: refused OpenWriter changed the file", name)
		}
	}
}

func TestAppendRejectsInvalidMessages(t *testing.T) {
	t.Parallel()
	path := newTranscript(t, Header{}, nil)
	before := readFile(t, path)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for name, m := range map[string]model.Message{
		"no role":              {Content: []model.Block{{Type: "text", Text: "x"}}},
		"empty results":        {Role: model.RoleToolResult},
		"record on user":       {Role: model.RoleUser, Content: []model.Block{{Type: "text", Text: "x"}}, TaskRecord: json.RawMessage(`{}`)},
		"record not object":    {Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c"}}, TaskRecord: json.RawMessage(`[1]`)},
		"records on assistant": {Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "x"}}, TaskRecords: []json.RawMessage{json.RawMessage(`{}`)}},
		"records not objects":  {Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c"}}, TaskRecords: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`"x"`)}},
		"call without id":      {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Name: "read"}}},
		"invalid args JSON":    {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "read", Args: json.RawMessage(`{`)}}},
		"result without id":    {Role: model.RoleToolResult, Results: []model.ToolResult{{Content: "x"}}},
		"user carries calls":   {Role: model.RoleUser, ToolCalls: []model.ToolCall{{ID: "c", Name: "read"}}},
	} {
		if _, err := w.AppendMessage(m); err == nil {
			t.Errorf("%s: AppendMessage succeeded", name)
		}
	}
	if err := w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a", Status: "done"}); err == nil {
		t.Error("attempt end with an unknown status was written")
	}
	if string(readFile(t, path)) != string(before) {
		t.Error("rejected appends changed the file")
	}
}

func TestWriterConcurrentAppendsStayWholeLines(t *testing.T) {
	t.Parallel()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("界", 20000)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := w.AppendMessage(model.UserText(big)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	w.Close()
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 160 || tr.Torn != nil {
		t.Errorf("got %d messages, torn %+v; want 160 whole lines", len(tr.Messages), tr.Torn)
	}
	for i, e := range tr.Entries {
		if e.Line != i+2 {
			t.Fatalf("entry %d on line %d", i, e.Line)
		}
	}
}

// TestTaskRecordsRoundTrip: a task_wait result and ink's closing note to an
// agent carry the records of the background children they collect; they
// are written beside the message as taskRecords, read back in order, and
// TaskRecordsOf returns them after the message's own record.
func TestTaskRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	path := newTranscript(t, Header{}, nil)
	w, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(child string, status Status) json.RawMessage {
		r := TaskRecord{Version: 1, AttemptID: "a-" + child, ChildID: child, Launched: true, Status: status}
		b, _ := json.Marshal(r)
		return b
	}
	wait := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "w1", ToolName: "task_wait", Content: "both ended"}},
		TaskRecords: []json.RawMessage{rec("c1", "completed"), json.RawMessage("{\n \"version\": 1, \"attemptId\": \"a-c2\", \"childId\": \"c2\", \"launched\": true, \"status\": \"timeout\"}")}}
	note := model.UserText("[ink] your background child ended")
	note.TaskRecords = []json.RawMessage{rec("c3", "aborted")}
	for _, m := range []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "w1", Name: "task_wait"}}}, wait, note} {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !strings.Contains(string(readFile(t, path)), `"taskRecords":[{"version":1,"attemptId":"a-c1","childId":"c1","launched":true,"status":"completed"},{"version":1,"attemptId":"a-c2"`) {
		t.Fatalf("taskRecords not written compact beside the message:\n%s", readFile(t, path))
	}
	tr, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		for _, r := range TaskRecordsOf(m) {
			got = append(got, r.ChildID+":"+string(r.Status))
		}
	}
	if strings.Join(got, ",") != "c1:completed,c2:timeout,c3:aborted" {
		t.Fatalf("records read back = %v", got)
	}
	one := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "t", ToolName: "task"}}, TaskRecord: rec("c0", "crash"), TaskRecords: []json.RawMessage{json.RawMessage(`{"version":7}`), rec("c4", "completed")}}
	got = nil
	for _, r := range TaskRecordsOf(one) {
		got = append(got, r.ChildID)
	}
	if strings.Join(got, ",") != "c0,c4" {
		t.Fatalf("TaskRecordsOf = %v, want the own record first and the bad one left out", got)
	}
}
