package taskargs

import (
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/inkdev/ink/toolargs"
)

// The JSON schemas of the tools, generated from their argument types with
// toolargs.Schema and shared by ink's own agents and the MCP server, so
// that a model sees the same arguments in both. The parsers in this
// package, not the schemas, decide what is accepted; the edits below only
// add what a struct tag cannot say.

// BatchArgs is the schema form of the MCP server's task arguments (what
// ParseBatch reads): one task's arguments, or tasks, a list of them run at
// once, with background beside it.
type BatchArgs struct {
	Args
	Tasks []Args `json:"tasks,omitempty" jsonschema:"Several tasks to run at once, instead of prompt and the other fields; every result comes back in this order. Give background beside tasks to start them all in the background."`
}

// TaskSchema is the JSON schema of task's arguments. With batch it also
// offers tasks, a list of task objects run at once (the MCP server's form),
// and prompt is no longer required at the top level.
func TaskSchema(batch bool) json.RawMessage {
	if !batch {
		return toolargs.Schema[Args](minTimeout)
	}
	return toolargs.Schema[BatchArgs](minTimeout, func(s *jsonschema.Schema) {
		s.Required = nil
		tasks := toolargs.Property(s, "tasks")
		tasks.MinItems, tasks.MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(MaxBatch)
		// background goes beside tasks, not inside an item.
		minTimeout(tasks.Items)
		delete(tasks.Items.Properties, "background")
		tasks.Items.PropertyOrder = slices.DeleteFunc(tasks.Items.PropertyOrder, func(k string) bool { return k == "background" })
	})
}

// minTimeout says timeoutMs' minimum in the schema s.
func minTimeout(s *jsonschema.Schema) {
	toolargs.Property(s, "timeoutMs").Minimum = jsonschema.Ptr(float64(MinTimeoutMs))
}

// StatusSchema is the JSON schema of task_status's arguments.
func StatusSchema() json.RawMessage {
	return toolargs.Schema[StatusArgs](maxIDs)
}

// WaitSchema is the JSON schema of task_wait's arguments.
func WaitSchema() json.RawMessage {
	return toolargs.Schema[WaitArgs](maxIDs, func(s *jsonschema.Schema) {
		toolargs.Property(s, "timeoutMs").Minimum = jsonschema.Ptr(0.0)
	})
}

// CancelSchema is the JSON schema of task_cancel's arguments.
func CancelSchema() json.RawMessage {
	return toolargs.Schema[CancelArgs]()
}

// maxIDs says how many ids the schema s takes.
func maxIDs(s *jsonschema.Schema) {
	toolargs.Property(s, "ids").MaxItems = jsonschema.Ptr(MaxIDs)
}
