package tools

import (
	"context"
	"encoding/json"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/taskargs"
)

// TaskRunner runs one `task` call on behalf of the worker: it sends the
// request to the orchestrator and waits for the child's result. The worker
// implements it over ipc. RunTask gets the call id of the tool call and its
// arguments, already validated; it must honour ctx and be safe for
// concurrent use, since several task calls may run at once.
type TaskRunner interface {
	RunTask(ctx context.Context, callID string, args json.RawMessage) Result
}

// taskTool is the worker side of the `task` tool. It checks the arguments
// and forwards good calls to its TaskRunner. It is safe for concurrent use
// when the runner is.
type taskTool struct {
	runner TaskRunner
}

var _ Tool = (*taskTool)(nil)

// NewTask returns the `task` tool, which delegates work to a child agent
// through r. Bad arguments (taskargs.Parse) are answered with an isError
// Result without calling r; good ones are passed to r unchanged, with the call id from
// CallID(ctx), and r's Result is returned as it is. The tool is safe for
// concurrent use when r is.
func NewTask(r TaskRunner) Tool {
	return &taskTool{runner: r}
}

func (t *taskTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "task",
		Description: "Delegate a self-contained piece of work to a child agent that runs as its own process with a fresh context. " +
			"The child sees only your prompt (not this conversation), so say everything it needs: the goal, the relevant paths, " +
			"and what its final report should contain. Its final message comes back to you as this tool's result. " +
			"Several task calls in one message run in parallel; use that for independent investigations. " +
			"background: true starts the child and returns its id at once, so you can do other work meanwhile; collect its result " +
			"with task_wait (task_status shows its progress, task_cancel stops it). Use background children and task_wait for " +
			"independent work that takes long, and always collect them before you finish. " +
			"agent picks a named agent profile; worktree: true gives the child its own git worktree and branch, so its edits " +
			"do not touch the working copy. timeoutMs bounds the child's run time. " +
			"To continue a child that stopped (interrupted, timed out, crashed) or to follow up on its answer, call task with " +
			"resume set to the child session id from its result and a new prompt; agent and worktree must then be left out.",
		Schema: taskargs.TaskSchema(false),
	}
}

func (t *taskTool) Safe() bool { return true }

func (t *taskTool) Run(ctx context.Context, raw json.RawMessage) Result {
	if _, err := taskargs.Parse(raw); err != nil {
		return errorResult("%v", err)
	}
	return t.runner.RunTask(ctx, CallID(ctx), raw)
}
