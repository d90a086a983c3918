package taskargs

import "encoding/json"

// The JSON schemas of the tools, shared by ink's own agents and the MCP
// server so that a model sees the same arguments in both. The parsers in
// this package, not the schemas, decide what is accepted.

var taskProps = map[string]any{
	"prompt": map[string]any{"type": "string", "description": "What the child should do; it sees nothing else from this conversation, so say everything it needs: the goal, the relevant paths and what its final report should contain."},
	"agent":  map[string]any{"type": "string", "description": "Name of the agent profile to run (default: a general agent). Not allowed with resume."},
	"timeoutMs": map[string]any{"type": "integer", "minimum": MinTimeoutMs,
		"description": "Time limit for the child in milliseconds, at least 1000."},
	"worktree":   map[string]any{"type": "boolean", "description": "Run the child in its own git worktree on its own branch, so its edits do not touch the working copy. Not allowed with resume."},
	"resume":     map[string]any{"type": "string", "description": "Child session id to continue (from an earlier task result), with a new prompt."},
	"background": map[string]any{"type": "boolean", "description": "Start the child and return at once with its id instead of waiting; collect its result later with task_wait."},
}

// TaskSchema is the JSON schema of task's arguments. With batch it also
// offers tasks, a list of task objects run at once (the MCP server's form),
// and prompt is no longer required at the top level.
func TaskSchema(batch bool) json.RawMessage {
	props := map[string]any{}
	for k, v := range taskProps {
		props[k] = v
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false, "required": []string{}}
	if !batch {
		s["required"] = []string{"prompt"}
		return mustJSON(s)
	}
	item := map[string]any{}
	for k, v := range taskProps {
		if k != "background" {
			item[k] = v
		}
	}
	props["tasks"] = map[string]any{
		"type":        "array",
		"minItems":    1,
		"maxItems":    MaxBatch,
		"description": "Several tasks to run at once, instead of prompt and the other fields; every result comes back in this order. Give background beside tasks to start them all in the background.",
		"items":       map[string]any{"type": "object", "properties": item, "required": []string{"prompt"}, "additionalProperties": false},
	}
	return mustJSON(s)
}

var idsProp = map[string]any{
	"type":        "array",
	"items":       map[string]any{"type": "string"},
	"maxItems":    MaxIDs,
	"description": "Child session ids (from the task results that started them).",
}

// StatusSchema is the JSON schema of task_status's arguments.
func StatusSchema() json.RawMessage {
	return objectSchema(map[string]any{
		"ids": withDescription(idsProp, "Child session ids to report on; leave out for every child."),
	})
}

// WaitSchema is the JSON schema of task_wait's arguments.
func WaitSchema() json.RawMessage {
	return objectSchema(map[string]any{
		"ids": withDescription(idsProp, "Child session ids to wait for; leave out for every background child whose result you have not collected yet."),
		"timeoutMs": map[string]any{"type": "integer", "minimum": 0,
			"description": "Stop waiting after this many milliseconds and report the children that ended so far (0: do not wait). Leave out to wait until they all end."},
	})
}

// CancelSchema is the JSON schema of task_cancel's arguments.
func CancelSchema() json.RawMessage {
	return objectSchema(map[string]any{
		"id": map[string]any{"type": "string", "description": "Child session id of the child to stop."},
	}, "id")
}

// objectSchema is a closed object schema with props and the required names.
func objectSchema(props map[string]any, required ...string) json.RawMessage {
	if required == nil {
		required = []string{}
	}
	return mustJSON(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

func withDescription(p map[string]any, desc string) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	out["description"] = desc
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("taskargs: schema: " + err.Error())
	}
	return b
}
