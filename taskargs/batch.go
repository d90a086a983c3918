package taskargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxBatch bounds how many tasks one batch call may hold.
const MaxBatch = 32

// Batch is a task call that starts one child or several at once. Tasks run
// at once and are answered in order; with Background every one is started
// in the background and the call answers at once.
type Batch struct {
	Tasks      []Args
	Background bool
	// Single is true when the call gave one task's arguments directly
	// rather than a tasks list.
	Single bool
}

// ParseBatch decodes the arguments of the MCP server's task tool: either
// one task's arguments (Parse), or tasks — a list of task arguments, each
// without background — plus an optional background beside it.
func ParseBatch(raw json.RawMessage) (Batch, error) {
	raw = bytes.TrimSpace(raw)
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return Batch{}, &Error{Msg: "the arguments must be a JSON object; task takes: " + strings.Join(Names, ", ") + " — or tasks, a list of such objects, with background beside it"}
	}
	list, ok := fields["tasks"]
	if !ok {
		a, err := Parse(raw)
		if err != nil {
			return Batch{}, err
		}
		return Batch{Tasks: []Args{a}, Background: a.Background, Single: true}, nil
	}
	var extra []string
	for _, k := range Names {
		if _, ok := fields[k]; ok && k != "background" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return Batch{}, &Error{Msg: fmt.Sprintf("%q cannot be given beside tasks: put each task's prompt, agent, timeoutMs, worktree and resume inside its item of tasks", extra[0])}
	}
	for k := range fields {
		if k != "tasks" && k != "background" {
			return Batch{}, &Error{Msg: fmt.Sprintf("unknown argument %q; with tasks, task takes only tasks and background", k)}
		}
	}
	var b Batch
	if v, ok := fields["background"]; ok && !bytes.Equal(v, []byte("null")) {
		if json.Unmarshal(v, &b.Background) != nil {
			return Batch{}, &Error{Msg: "background must be true or false"}
		}
	}
	var items []json.RawMessage
	if len(list) == 0 || list[0] != '[' || json.Unmarshal(list, &items) != nil {
		return Batch{}, &Error{Msg: `tasks must be a list of task objects, e.g. [{"prompt": "…"}, {"prompt": "…"}]`}
	}
	if len(items) == 0 {
		return Batch{}, &Error{Msg: "tasks is empty: give at least one task object, or give prompt instead of tasks"}
	}
	if len(items) > MaxBatch {
		return Batch{}, &Error{Msg: fmt.Sprintf("tasks holds %d tasks; give at most %d per call (start more in the background and collect them with task_wait)", len(items), MaxBatch)}
	}
	for i, item := range items {
		var keys map[string]json.RawMessage
		if json.Unmarshal(item, &keys) == nil {
			if _, ok := keys["background"]; ok {
				return Batch{}, &Error{Msg: fmt.Sprintf("tasks[%d]: background goes beside tasks, not inside an item", i)}
			}
			if _, ok := keys["tasks"]; ok {
				return Batch{}, &Error{Msg: fmt.Sprintf("tasks[%d]: tasks cannot be nested", i)}
			}
		}
		a, err := Parse(item)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return Batch{}, &Error{Msg: fmt.Sprintf("tasks[%d]: %s", i, e.Msg)}
			}
			return Batch{}, err
		}
		a.Background = b.Background
		b.Tasks = append(b.Tasks, a)
	}
	return b, nil
}
