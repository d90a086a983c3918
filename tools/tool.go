package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/inkdev/ink/model"
)

// Result is what a tool run produced.
type Result struct {
	// Content is the text the model sees.
	Content string
	// IsError marks a failed call; the model sees Content as an error.
	IsError bool
	// Record is an opaque record stored beside the result in the transcript
	// and never sent to a model (the TaskRecord of a `task` call).
	Record json.RawMessage
	// Records are opaque records stored beside the result in the same way:
	// the TaskRecords of the background children a task_wait or
	// task_cancel call collected.
	Records []json.RawMessage
}

// Tool is one tool an agent may call. Implementations are safe for
// concurrent use when Safe reports true.
type Tool interface {
	// Spec is the name, description and argument schema shown to the model.
	Spec() model.ToolSpec
	// Safe reports whether calls may run concurrently with other safe calls.
	Safe() bool
	// Run executes one call. Bad arguments and failures are reported as an
	// isError Result, never a panic. Run honours ctx cancellation.
	Run(ctx context.Context, args json.RawMessage) Result
}

type callIDKey struct{}

// WithCallID returns ctx carrying the id of the tool call being run. The
// agent loop sets it so that tools which need it (task) can read it.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID returns the tool call id set by WithCallID, or "".
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// errorResult is an isError Result with a formatted message.
func errorResult(format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), IsError: true}
}
