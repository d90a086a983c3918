package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// TestStatusSchemaIsAnEnum: the outputSchema of task, task_status and
// task_wait says which statuses a client can branch on (every one of
// session.Statuses, as the same strings the results carry), keeps each
// field's description, and refuses a result with a status outside it.
func TestStatusSchemaIsAnEnum(t *testing.T) {
	t.Parallel()
	want := make([]any, 0, len(session.Statuses))
	for _, s := range session.Statuses {
		want = append(want, string(s))
	}
	task, err := jsonschema.For[TaskOutput](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		t.Fatal(err)
	}
	st := task.Properties["tasks"].Items.Properties["status"]
	if st == nil || st.Type != "string" || !slices.Equal(st.Enum, want) || !strings.HasPrefix(st.Description, "completed, aborted") {
		t.Fatalf("task's status schema = %+v", st)
	}
	if c := task.Properties["tasks"].Items.Properties["capped"]; c == nil || !slices.Equal(c.Enum, []any{"turns", "budget"}) || !strings.HasPrefix(c.Description, "turns or budget") {
		t.Fatalf("task's capped schema = %+v", c)
	}
	status, err := jsonschema.For[StatusOutput](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		t.Fatal(err)
	}
	if cs := status.Properties["children"].Items.Properties["status"]; cs == nil || !slices.Equal(cs.Enum, want) {
		t.Fatalf("task_status's child status schema = %+v", cs)
	}

	resolved, err := task.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(out TaskOutput) error {
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return resolved.Validate(v)
	}
	// The statuses a task result carries, including the one a front end
	// gives a task without a result of its own.
	for _, tr := range []orchestrator.TaskResult{{Status: orchestrator.StatusCompleted}, {Status: orchestrator.StatusStarted, ChildID: "01abc"}, {}} {
		if err := check(TaskOutput{Tasks: []ChildResult{childResult(tr)}}); err != nil {
			t.Errorf("status %q: %v", tr.Status, err)
		}
	}
	if r := childResult(orchestrator.TaskResult{}); r.Status != session.StatusFailed {
		t.Errorf("a task without a status is reported %q, want failed", r.Status)
	}
	if err := check(TaskOutput{Tasks: []ChildResult{{Status: "paused"}}}); err == nil {
		t.Error("a result with an unknown status matched the outputSchema")
	}
}
