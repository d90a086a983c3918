package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// samples holds one value of every kind, with every field set.
func samples() []Event {
	u := model.Usage{Input: 1200, Output: 80, CacheRead: 5}
	return []Event{
		Message{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "hi"}}, Usage: &u}},
		TurnStart{Turn: 3},
		ToolStart{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)},
		ToolEnd{ID: "c1", Name: "bash", IsError: true, DurationMs: 12},
		Warning{Text: "retrying"},
		Compaction{Trigger: "threshold", TokensBefore: 170000, TokensAfter: 30000, Window: 200000, Kept: 4, Replaced: 20, FirstKept: "e1", Usage: &u},
		RunStart{Transcript: "/t.jsonl", Model: "script:/s.yaml", Cwd: "/w", Continued: true, MaxParallel: 8, MaxDepth: 1},
		WorkerStart{Pid: 42, AttemptID: "a1"},
		TaskQueued{ChildID: "c", AgentName: "scout", Child: "main/3", ToolCallID: "t1", Background: true},
		TaskStart{ChildID: "c", AgentName: "scout", Child: "main/3", ToolCallID: "t1", Worktree: "/wt", AttemptID: "a2", Pid: 43, Resumed: true, Sandbox: "read-only", Background: true},
		TaskEnd{ChildID: "c", Status: "completed", Reason: "r", Turns: 2, Usage: &u, Transcript: "/c.jsonl", ToolCallID: "t1", AttemptID: "a2",
			Worktree: &session.WorktreeOutcome{Path: "/wt", Branch: "ink/c", Disposition: "kept-work", Detail: "1 file"}, Health: []string{"h"}},
		RunEnd{Status: "completed", Text: "done", Turns: 4, Usage: map[string]model.Usage{"main": u}, Transcript: "/t.jsonl", Rejected: 1, Budget: &Budget{Limit: 2000000, Spent: 1234}},
	}
}

func TestEveryKindRoundTrips(t *testing.T) {
	t.Parallel()
	kinds := map[string]bool{}
	for _, ev := range samples() {
		t.Run(ev.Kind(), func(t *testing.T) {
			kinds[ev.Kind()] = true
			env := Envelope{Seq: 7, Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Agent: "main/3", Session: "s1", WorkerSeq: 2, Body: ev}
			line, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			var flat map[string]any
			if err := json.Unmarshal(line, &flat); err != nil {
				t.Fatalf("not one JSON object: %s", line)
			}
			if flat["v"] != 1.0 || flat["seq"] != 7.0 || flat["type"] != ev.Kind() || flat["agent"] != "main/3" || flat["session"] != "s1" || flat["time"] != "2026-12-01T10:00:00Z" {
				t.Fatalf("header fields wrong: %s", line)
			}
			var back Envelope
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, env) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", back, env)
			}
		})
	}
	if len(kinds) != len(decoders) {
		t.Fatalf("samples cover %d kinds, the package has %d", len(kinds), len(decoders))
	}
}

func TestDecodeRefusesUnknownKind(t *testing.T) {
	t.Parallel()
	if _, err := Decode("tool.exploded", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("Decode of an unknown kind = %v", err)
	}
	if _, err := Decode(KindTurnStart, []byte(`{"turn":"three"}`)); err == nil {
		t.Fatal("Decode accepted a body of the wrong shape")
	}
}

// TestDecodeRefusesUnknownStatus: a task.end or run.end whose status this
// ink does not know is an error naming it, not an event passed on.
func TestDecodeRefusesUnknownStatus(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{KindTaskEnd, KindRunEnd} {
		if _, err := Decode(kind, []byte(`{"status":"paused"}`)); err == nil || !strings.Contains(err.Error(), `unknown status "paused"`) {
			t.Errorf("%s: %v", kind, err)
		}
		if e, err := Decode(kind, []byte(`{"status":"completed"}`)); err != nil || e == nil {
			t.Errorf("%s completed: %v", kind, err)
		}
	}
}
