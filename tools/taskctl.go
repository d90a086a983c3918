package tools

import (
	"context"
	"encoding/json"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/taskargs"
)

// Names of the tools that follow an agent's children, as ControlTask gets
// them.
const (
	TaskStatusTool = taskargs.StatusTool
	TaskWaitTool   = taskargs.WaitTool
	TaskCancelTool = taskargs.CancelTool
)

// TaskController answers an agent's task_status, task_wait and task_cancel
// calls about the children it started (background ones above all): the
// worker implements it over ipc, the supervisor keeps the children.
// ControlTask gets the tool's name (TaskStatusTool, TaskWaitTool or
// TaskCancelTool), the call id and its arguments, already checked; it must
// honour ctx and be safe for concurrent use.
type TaskController interface {
	ControlTask(ctx context.Context, tool, callID string, args json.RawMessage) Result
}

// taskControl is one of the three tools that follow an agent's children.
// It checks its arguments with package taskargs and forwards good calls
// to its controller. It is safe for concurrent use when the controller is.
type taskControl struct {
	name  string
	desc  string
	parse func(json.RawMessage) error
	c     TaskController
}

var _ Tool = (*taskControl)(nil)

// NewTaskControls returns task_status, task_wait and task_cancel, which
// follow, collect and stop the children started with task (background:
// true) through c. An agent gets them when it has the task tool. Bad
// arguments are answered with an isError Result without calling c; c's
// Result is returned as it is, its Records included. The tools are safe
// for concurrent use when c is.
func NewTaskControls(c TaskController) []Tool {
	return []Tool{
		&taskControl{
			name: taskargs.StatusTool, c: c,
			desc: "Report on the children you started with task: for each, whether it is queued, running or ended, its elapsed time, " +
				"model turns, tokens, the tool it is running now and its worktree. ids picks children; leave it out for all. " +
				"It does not wait and does not return results: use task_wait for those.",
			parse: func(raw json.RawMessage) error { _, err := taskargs.ParseStatus(raw); return err },
		},
		&taskControl{
			name: taskargs.WaitTool, c: c,
			desc: "Wait for children started with task({background: true}) and return their results, in the order they were started, " +
				"each exactly as a task call would have returned it. Without ids it waits for every background child whose result " +
				"you have not collected yet. timeoutMs bounds the wait: when it runs out, the children that ended are returned and " +
				"the others are named as still running (call task_wait again, or task_cancel them). Start independent children in " +
				"the background, do other work, then collect them all with one task_wait.",
			parse: func(raw json.RawMessage) error { _, err := taskargs.ParseWait(raw); return err },
		},
		&taskControl{
			name: taskargs.CancelTool, c: c,
			desc: "Stop a child you started with task. It stops at its next safe point, its transcript records that it was aborted, " +
				"and what it did so far is returned; it can be continued later with task({resume: id, prompt: \"…\"}).",
			parse: func(raw json.RawMessage) error { _, err := taskargs.ParseCancel(raw); return err },
		},
	}
}

func (t *taskControl) Spec() model.ToolSpec {
	var schema json.RawMessage
	switch t.name {
	case taskargs.StatusTool:
		schema = taskargs.StatusSchema()
	case taskargs.WaitTool:
		schema = taskargs.WaitSchema()
	default:
		schema = taskargs.CancelSchema()
	}
	return model.ToolSpec{Name: t.name, Description: t.desc, Schema: schema}
}

// Safe is true: these calls only talk to the supervisor, so they may run
// beside other safe calls (a task_wait beside the task calls it waits for).
func (t *taskControl) Safe() bool { return true }

func (t *taskControl) Run(ctx context.Context, raw json.RawMessage) Result {
	if err := t.parse(raw); err != nil {
		return errorResult("%v", err)
	}
	return t.c.ControlTask(ctx, t.name, CallID(ctx), raw)
}
