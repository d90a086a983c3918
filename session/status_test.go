package session

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusJSONUnchanged: a Status is the same JSON string it was before
// it had a type, both ways, for every value.
func TestStatusJSONUnchanged(t *testing.T) {
	t.Parallel()
	for _, s := range Statuses {
		out, err := json.Marshal(struct {
			S Status `json:"status"`
		}{s})
		if err != nil || string(out) != `{"status":"`+string(s)+`"}` {
			t.Fatalf("marshal %s = %s, %v", s, out, err)
		}
		var back struct {
			S Status `json:"status"`
		}
		if err := json.Unmarshal(out, &back); err != nil || back.S != s {
			t.Fatalf("unmarshal %s = %q, %v", out, back.S, err)
		}
	}
	var none struct {
		S Status `json:"status"`
	}
	if err := json.Unmarshal([]byte(`{"status":""}`), &none); err != nil || none.S != "" {
		t.Fatalf("an empty status is no status: %q, %v", none.S, err)
	}
}

// TestUnknownStatusIsAnError: a status this ink does not know, in a
// transcript's attempt end or a task record, is refused with a message
// naming the value and the known ones, never passed on.
func TestUnknownStatusIsAnError(t *testing.T) {
	t.Parallel()
	var s Status
	err := json.Unmarshal([]byte(`"paused"`), &s)
	var unknown *UnknownStatusError
	if !errors.As(err, &unknown) || unknown.Value != "paused" || !strings.Contains(err.Error(), `unknown status "paused"`) ||
		!strings.Contains(err.Error(), "completed, aborted, timeout, crash, interrupted") {
		t.Fatalf("err = %v", err)
	}

	end := []byte(`{"type":"attempt","id":"e2","phase":"end","attemptId":"a1","time":"2026-11-30T12:01:00Z","status":"paused","finalTextLen":0}`)
	if _, err := decodeEntry(end); !errors.As(err, &unknown) || !strings.HasPrefix(err.Error(), `attempt entry: unknown status "paused"`) {
		t.Errorf("attempt end with an unknown status: %v", err)
	}
	// A known status where it does not belong is refused too.
	rejected := []byte(strings.Replace(string(end), `"paused"`, `"rejected"`, 1))
	if _, err := decodeEntry(rejected); err == nil || !strings.Contains(err.Error(), `attempt end has status "rejected"`) {
		t.Errorf("attempt end with status rejected: %v", err)
	}

	if _, err := ParseTaskRecord(patchJSON(t, "task.json", map[string]any{"status": "paused"})); !errors.As(err, &unknown) {
		t.Errorf("task record with an unknown status: %v", err)
	}
	if _, err := ParseTaskRecord(patchJSON(t, "task.json", map[string]any{"status": "started"})); err == nil || !strings.Contains(err.Error(), `status "started" is not one of`) {
		t.Errorf("task record with status started: %v", err)
	}

	// A transcript holding such a line is malformed where that line is,
	// and the message says which status.
	dir := t.TempDir()
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", "child.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "child.jsonl")
	// (A later line makes it no crash tail: a torn last line is repaired,
	// not read.)
	bad := strings.Replace(string(golden), `"status":"interrupted"`, `"status":"paused"`, 1) +
		`{"type":"attempt","id":"e3","phase":"start","attemptId":"a2","time":"2026-11-30T12:02:00Z","finalTextLen":0}` + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), `unknown status "paused"`) {
		t.Errorf("Open of a transcript with an unknown status: %v", err)
	}
}

// TestGoldenStatusesReadTyped: the golden transcript, whose bytes predate
// the Status type, reads back with typed statuses: its attempt end and the
// task record beside a result.
func TestGoldenStatusesReadTyped(t *testing.T) {
	t.Parallel()
	tr, err := Open(filepath.Join("testdata", "golden", "child.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ends []Status
	for _, e := range tr.Entries {
		if e.Attempt != nil && e.Attempt.Phase == PhaseEnd {
			ends = append(ends, e.Attempt.Status)
		}
	}
	if len(ends) != 1 || ends[0] != StatusInterrupted {
		t.Errorf("attempt ends = %v, want [interrupted]", ends)
	}
	var recs []Status
	for _, m := range tr.Messages {
		for _, r := range TaskRecordsOf(m) {
			recs = append(recs, r.Status)
		}
	}
	if len(recs) != 1 || recs[0] != StatusCompleted {
		t.Errorf("task record statuses = %v, want [completed]", recs)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Capped != CappedTurns {
		t.Errorf("the golden attempt end's cap = %+v, want turns", end)
	}
}

// TestStatusSets: which statuses end an attempt and which a TaskRecord
// may carry.
func TestStatusSets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s                  Status
		ends, record, refu bool
	}{
		{StatusCompleted, true, true, false},
		{StatusAborted, true, true, false},
		{StatusTimeout, true, true, false},
		{StatusCrash, true, true, false},
		{StatusInterrupted, true, true, false},
		{StatusRefused, false, false, true},
		{StatusRejected, false, true, false},
		{StatusStarted, false, false, false},
		{StatusUnfinished, false, false, false},
		{StatusFailed, false, false, false},
		{"paused", false, false, false},
	} {
		if tc.s.EndsAttempt() != tc.ends || tc.s.OfTaskRecord() != tc.record || tc.s.Known() != (tc.s != "paused") {
			t.Errorf("%s: EndsAttempt %v OfTaskRecord %v Known %v", tc.s, tc.s.EndsAttempt(), tc.s.OfTaskRecord(), tc.s.Known())
		}
	}
	if len(Statuses) != 10 {
		t.Errorf("Statuses has %d values; a new one needs its place in EndsAttempt, OfTaskRecord and the wire", len(Statuses))
	}
}

// TestCapClosedSet: a cap is the same JSON string as before, and one ink
// does not know is refused in a transcript line and a task record.
func TestCapClosedSet(t *testing.T) {
	t.Parallel()
	for _, c := range []Cap{"", CappedTurns, CappedBudget} {
		var back Cap
		if err := json.Unmarshal([]byte(`"`+string(c)+`"`), &back); err != nil || back != c || !c.Known() {
			t.Errorf("cap %q: %q, %v", c, back, err)
		}
	}
	var unknown *UnknownCapError
	end := []byte(`{"type":"attempt","id":"e2","phase":"end","attemptId":"a1","time":"2026-11-30T12:01:00Z","status":"completed","capped":"tokens","finalTextLen":0}`)
	if _, err := decodeEntry(end); !errors.As(err, &unknown) || !strings.Contains(err.Error(), `attempt entry: unknown capped value "tokens" (this ink knows turns, budget)`) {
		t.Errorf("attempt end with an unknown cap: %v", err)
	}
	if _, err := ParseTaskRecord(patchJSON(t, "task.json", map[string]any{"capped": "tokens"})); !errors.As(err, &unknown) {
		t.Errorf("task record with an unknown cap: %v", err)
	}
	if r, err := ParseTaskRecord(patchJSON(t, "task.json", map[string]any{"capped": "budget"})); err != nil || r.Capped != CappedBudget {
		t.Errorf("task record capped budget: %+v, %v", r.Capped, err)
	}
}
