package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/taskargs"
)

// Tool descriptions, written for the client's model.
const (
	taskDescription = "Run work in a child coding agent: a separate ink process with a fresh context, its own transcript " +
		"(resumable after a crash, a timeout or a lost connection) and, with worktree: true, its own git worktree and branch, " +
		"so its edits never touch the working copy. The child sees only your prompt, so make it self-contained: the goal, " +
		"the relevant paths, and what its final report must contain. Its final message comes back as this tool's result, " +
		"with its child session id.\n\n" +
		"Parallel work: do not call task several times one after another for independent pieces of work. Give them all in " +
		"one call as tasks: [{prompt, …}, {prompt, …}] — they run at the same time and every result comes back in order — " +
		"or start each with background: true, which returns the child id at once, do other work, and collect the results " +
		"with task_wait.\n\n" +
		"To continue a child (it failed, timed out, was interrupted, or you have a follow-up), call task with resume: " +
		"<child session id> and a new prompt. agent picks an agent profile (agents_list shows them); timeoutMs bounds the child."
	statusDescription = "Report on the children started in this session: for each, whether it is starting, queued, running or " +
		"ended, how long it has run, its model turns, tokens, the tool it is running now and its worktree. ids picks " +
		"children; leave it out for all. It never waits and returns no results: use task_wait for those."
	waitDescription = "Wait for children started with task({background: true}) and return their results, in the order they " +
		"were started, each exactly as task would have returned it. Without ids it waits for every background child whose " +
		"result has not been collected yet. timeoutMs bounds the wait: when it runs out, the results of the children that " +
		"ended come back and the others are named as still running (call task_wait again, or task_cancel them). Start " +
		"independent children in the background, do other work, then collect them all with one task_wait."
	cancelDescription = "Stop a child of this session. It stops at its next safe point, its transcript records that it was " +
		"aborted, and what it did so far comes back; it can be continued later with task({resume: id, prompt: \"…\"})."
)

func boolPtr(b bool) *bool { return &b }

// addTaskTools registers task, task_status, task_wait and task_cancel.
func (s *Server) addTaskTools() {
	addTool(s, &mcp.Tool{
		Name: "task", Title: "Run child agents", Description: taskDescription,
		InputSchema: taskargs.TaskSchema(true),
		// A child edits files and runs commands: not read-only, and
		// running the same task twice does the work twice.
		Annotations: &mcp.ToolAnnotations{Title: "Run child agents", ReadOnlyHint: false, DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(true)},
	}, s.task)
	addTool(s, &mcp.Tool{
		Name: taskargs.StatusTool, Title: "Child status", Description: statusDescription,
		InputSchema: taskargs.StatusSchema(),
		Annotations: &mcp.ToolAnnotations{Title: "Child status", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.status)
	addTool(s, &mcp.Tool{
		Name: taskargs.WaitTool, Title: "Collect background children", Description: waitDescription,
		InputSchema: taskargs.WaitSchema(),
		Annotations: &mcp.ToolAnnotations{Title: "Collect background children", ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, s.wait)
	addTool(s, &mcp.Tool{
		Name: taskargs.CancelTool, Title: "Stop a child", Description: cancelDescription,
		InputSchema: taskargs.CancelSchema(),
		// Stopping keeps the child's work and lets it be resumed.
		Annotations: &mcp.ToolAnnotations{Title: "Stop a child", ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.cancel)
}

// task runs one task call: one child, a batch, or background children.
func (s *Server) task(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *TaskOutput) {
	b, err := taskargs.ParseBatch(req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
	p, err := s.parent(req.Session)
	if err != nil {
		return toolError("task: " + err.Error()), nil
	}
	callCtx, release := s.callContext(ctx, req.Session, p)
	defer release()
	prog := newProgress(req)
	defer prog.stop()
	res := p.Task(callCtx, orchestrator.Call{Tasks: b.Tasks, Background: b.Background, Batch: !b.Single, Progress: prog.update})
	return textResult(res.Content, res.IsError), &TaskOutput{Summary: res.Summary, Tasks: childResults(res.Tasks)}
}

// status answers task_status.
func (s *Server) status(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *StatusOutput) {
	a, err := taskargs.ParseStatus(req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
	p, err := s.parent(req.Session)
	if err != nil {
		return toolError("task_status: " + err.Error()), nil
	}
	res := p.Status(a)
	children := res.Children
	if children == nil {
		children = []orchestrator.ChildStatus{}
	}
	return textResult(res.Content, res.IsError), &StatusOutput{Summary: res.Summary, Children: children}
}

// wait answers task_wait; a client that cancels the call ends the wait,
// not the children.
func (s *Server) wait(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *CollectOutput) {
	a, err := taskargs.ParseWait(req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
	p, err := s.parent(req.Session)
	if err != nil {
		return toolError("task_wait: " + err.Error()), nil
	}
	callCtx, release := s.callContext(ctx, req.Session, p)
	defer release()
	return collected(p.Wait(callCtx, a))
}

// cancel answers task_cancel.
func (s *Server) cancel(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *CollectOutput) {
	a, err := taskargs.ParseCancel(req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
	p, err := s.parent(req.Session)
	if err != nil {
		return toolError("task_cancel: " + err.Error()), nil
	}
	callCtx, release := s.callContext(ctx, req.Session, p)
	defer release()
	return collected(p.Cancel(callCtx, a))
}

// collected is the result of task_wait or task_cancel.
func collected(res orchestrator.CallResult) (*mcp.CallToolResult, *CollectOutput) {
	summary := res.Summary
	if summary == "" {
		summary, _, _ = strings.Cut(res.Content, "\n")
	}
	return textResult(res.Content, res.IsError), &CollectOutput{Summary: summary, Tasks: childResults(res.Tasks), Running: res.Children, Next: res.Next}
}
