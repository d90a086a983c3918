package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// recordingController is a TaskController that records its calls and
// answers with records, as the worker does for task_wait.
type recordingController struct {
	mu    sync.Mutex
	calls []string
}

var _ TaskController = (*recordingController)(nil)

func (c *recordingController) ControlTask(ctx context.Context, tool, callID string, args json.RawMessage) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, tool+" "+callID+" "+string(args))
	return Result{Content: "2 children ended", Records: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":2}`)}}
}

// TestTaskControls: the three tools check their arguments with the shared
// parser, forward good calls with their call id, and pass the controller's
// result (records included) back unchanged.
func TestTaskControls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool, args, refusal string
	}{
		{"task_status", `{}`, ""},
		{"task_status", `{"ids":["01abc"]}`, ""},
		{"task_status", `{"ids":"01abc"}`, "task_status: ids must be a list"},
		{"task_wait", ``, ""},
		{"task_wait", `{"ids":["01abc"],"timeoutMs":0}`, ""},
		{"task_wait", `{"timeoutMs":-1}`, "task_wait: timeoutMs must be a whole number of milliseconds, 0 or more"},
		{"task_wait", `{"wait":true}`, `task_wait: unknown argument "wait"`},
		{"task_cancel", `{"id":"01abc"}`, ""},
		{"task_cancel", `{}`, "task_cancel: id is required"},
		{"task_cancel", `{"id":"../etc"}`, "never paths"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			t.Parallel()
			c := &recordingController{}
			var tool Tool
			for _, x := range NewTaskControls(c) {
				if x.Spec().Name == tc.tool {
					tool = x
				}
			}
			if tool == nil || !tool.Safe() {
				t.Fatalf("no safe %s tool", tc.tool)
			}
			r := tool.Run(WithCallID(context.Background(), "call-9"), json.RawMessage(tc.args))
			if tc.refusal != "" {
				if !r.IsError || !strings.Contains(r.Content, tc.refusal) || len(c.calls) != 0 {
					t.Fatalf("Run(%s) = %+v (calls %v), want the refusal %q and no call", tc.args, r, c.calls, tc.refusal)
				}
				return
			}
			if r.IsError || r.Content != "2 children ended" || len(r.Records) != 2 {
				t.Fatalf("Run(%s) = %+v, want the controller's result", tc.args, r)
			}
			if len(c.calls) != 1 || c.calls[0] != tc.tool+" call-9 "+tc.args {
				t.Fatalf("calls = %q", c.calls)
			}
		})
	}
}

func TestTaskControlSpecs(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"task_status": {"ids"},
		"task_wait":   {"ids", "timeoutMs"},
		"task_cancel": {"id"},
	}
	for _, tool := range NewTaskControls(&recordingController{}) {
		spec := tool.Spec()
		props, ok := want[spec.Name]
		if !ok {
			t.Fatalf("unexpected tool %q", spec.Name)
		}
		var required []string
		if spec.Name == "task_cancel" {
			required = []string{"id"}
		}
		checkSchema(t, spec.Schema, props, required)
		if !strings.Contains(spec.Description, "task") || len(spec.Description) < 100 {
			t.Errorf("%s: description too thin: %q", spec.Name, spec.Description)
		}
		delete(want, spec.Name)
	}
	if len(want) != 0 {
		t.Fatalf("missing tools %v", want)
	}
}
