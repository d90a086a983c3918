package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// The structured results of the tools. A client may show its model only a
// result's structuredContent (Claude Code does, when it is there), so each
// holds everything the result's text says: a child's answer, its id, how it
// ended, its usage, its worktree and how to continue it. Each tool's
// outputSchema is generated from its type here, and every value is checked
// against that schema before it is sent, so the two cannot drift.

// TaskOutput is the structured result of task: one entry per task, in the
// order given.
type TaskOutput struct {
	Summary string        `json:"summary,omitempty" jsonschema:"for a tasks list: what the call came to (how many ran and how many failed)"`
	Tasks   []ChildResult `json:"tasks" jsonschema:"one entry per task, in the order the tasks were given"`
}

// ChildResult is one child's result in task, task_wait and task_cancel.
// Text and Notes together are the child's text result.
type ChildResult struct {
	ChildID string         `json:"childId,omitempty" jsonschema:"the child session id: resume it with task({resume: childId, prompt}), follow it with task_status, task_wait or task_cancel; absent when the task was refused before a child existed"`
	Agent   string         `json:"agent,omitempty" jsonschema:"the agent profile the child ran as"`
	Status  session.Status `json:"status" jsonschema:"completed, aborted, timeout, crash, interrupted, rejected (refused before it ran), failed, or started (a background child, still running: collect it with task_wait)"`
	IsError bool           `json:"isError" jsonschema:"true when there is no usable answer: notes say why and how to continue"`
	Text    string         `json:"text,omitempty" jsonschema:"the child's answer: its final message (its last 50KB when it was longer)"`
	Notes   string         `json:"notes,omitempty" jsonschema:"the rest of the result: what went wrong, caps and health observations, what became of its worktree, its usage and how to continue it"`
	Reason  string         `json:"reason,omitempty" jsonschema:"why the child ended as it did, when it did not complete"`
	Capped  session.Cap    `json:"capped,omitempty" jsonschema:"turns or budget: a cap stopped the child and text is its wrap-up answer, not a confirmed completion"`
	Turns   int            `json:"turns" jsonschema:"model turns the child ran in this attempt"`
	Usage   *Usage         `json:"usage,omitempty" jsonschema:"tokens the child spent in this attempt"`
	// Worktree is what became of the child's worktree.
	Worktree   *session.WorktreeOutcome `json:"worktree,omitempty" jsonschema:"what became of the child's worktree: its path, branch and disposition (removed, kept with work, kept so that the child can be resumed, …)"`
	Transcript string                   `json:"transcript,omitempty" jsonschema:"the child's transcript, where its work is preserved"`
	Resume     string                   `json:"resume,omitempty" jsonschema:"the call that continues this child with a new prompt"`
	Health     []string                 `json:"health,omitempty" jsonschema:"what the health watch observed (repeated calls, failing edits, a tool open too long)"`
}

// Usage is the tokens a child spent.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead,omitempty"`
	CacheWrite int64 `json:"cacheWrite,omitempty"`
	Incomplete bool  `json:"incomplete,omitempty" jsonschema:"a stream ended before the provider reported its usage, so the counts are a lower bound"`
}

// StatusOutput is the structured result of task_status.
type StatusOutput struct {
	Summary  string                     `json:"summary" jsonschema:"how many children are still running or queued"`
	Children []orchestrator.ChildStatus `json:"children" jsonschema:"every child reported on, in the order they were started"`
}

// CollectOutput is the structured result of task_wait and task_cancel: the
// results of the children that ended, and the children still running.
type CollectOutput struct {
	Summary string                     `json:"summary" jsonschema:"how many of the children waited for ended"`
	Tasks   []ChildResult              `json:"tasks" jsonschema:"the results of the children that ended, in the order they were started"`
	Running []orchestrator.ChildStatus `json:"running,omitempty" jsonschema:"the children still running when the wait ended"`
	Next    string                     `json:"next,omitempty" jsonschema:"when children are still running: why the wait ended and what to do"`
}

// WorktreesOutput is the structured result of worktrees_list.
type WorktreesOutput struct {
	Worktrees []WorktreeEntry `json:"worktrees"`
}

// WorktreeEntry is one child worktree as worktrees_list reports it.
type WorktreeEntry struct {
	ChildID  string `json:"childId"`
	State    string `json:"state" jsonschema:"clean, work-present, merged, creating or unknown"`
	Branch   string `json:"branch,omitempty"`
	Path     string `json:"path"`
	Baseline string `json:"baseline,omitempty" jsonschema:"the commit the worktree was made from"`
	Ahead    int    `json:"ahead" jsonschema:"commits on the branch that the main checkout's HEAD lacks"`
	Behind   int    `json:"behind" jsonschema:"commits of the main checkout's HEAD that the branch lacks"`
	Dirty    bool   `json:"dirty" jsonschema:"uncommitted changes or untracked files in the worktree"`
	Locked   bool   `json:"locked"`
	LockPID  int    `json:"lockPid,omitempty" jsonschema:"the process that locked it"`
	InUse    bool   `json:"inUse" jsonschema:"a running child works in it"`
	Problem  string `json:"problem,omitempty" jsonschema:"what could not be read"`
}

// MergeOutput is the structured result of worktree_merge.
type MergeOutput struct {
	Summary        string   `json:"summary" jsonschema:"what was merged and what became of the worktree"`
	ChildID        string   `json:"childId"`
	Branch         string   `json:"branch"`
	Into           string   `json:"into" jsonschema:"the branch merged into"`
	Path           string   `json:"path" jsonschema:"the worktree's path"`
	Committed      string   `json:"committed,omitempty" jsonschema:"the commit made of the worktree's uncommitted work first (commit: true)"`
	CommittedFiles []string `json:"committedFiles,omitempty"`
	Commit         string   `json:"commit,omitempty" jsonschema:"the merge commit"`
	AlreadyMerged  bool     `json:"alreadyMerged,omitempty"`
	Shortstat      string   `json:"shortstat,omitempty"`
	Removed        bool     `json:"removed" jsonschema:"the worktree and its branch were removed, everything in them being merged"`
	Kept           string   `json:"kept,omitempty" jsonschema:"why the worktree was kept"`
}

// AgentsOutput is the structured result of agents_list.
type AgentsOutput struct {
	Agents []AgentInfo `json:"agents"`
	Notes  []string    `json:"notes,omitempty" jsonschema:"profile files that were skipped and why, and project profiles not trusted"`
}

// AgentInfo is one profile as agents_list reports it.
type AgentInfo struct {
	Name        string   `json:"name" jsonschema:"give it as task's agent"`
	Description string   `json:"description"`
	Tools       []string `json:"tools,omitempty"`
	Model       string   `json:"model,omitempty"`
	TimeoutS    float64  `json:"timeoutSeconds,omitempty"`
	Worktree    *bool    `json:"worktree,omitempty" jsonschema:"the agent runs in its own worktree"`
	Source      string   `json:"source"`
	Refused     string   `json:"refused,omitempty" jsonschema:"why a task naming this agent is refused"`
}

// typeSchemas are the schemas of the closed sets the results carry: a
// status is one of session.Statuses and a cap turns or budget, so a client
// can branch on them.
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[session.Status](): {Type: "string", Enum: enumOf(session.Statuses)},
	reflect.TypeFor[session.Cap]():    {Type: "string", Enum: enumOf([]session.Cap{session.CappedTurns, session.CappedBudget})},
}

// enumOf is vs as a schema's enum.
func enumOf[T ~string](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// childResult is the structured form of one task result.
func childResult(t orchestrator.TaskResult) ChildResult {
	status := t.Status
	if status == "" {
		status = session.StatusFailed
	}
	r := ChildResult{
		ChildID: t.ChildID, Agent: t.Agent, Status: status, IsError: t.IsError, Text: t.Answer, Notes: t.Notes,
		Reason: t.Record.Reason, Capped: t.Record.Capped, Turns: t.Record.Turns, Worktree: t.Record.Worktree,
		Health: t.Record.Health,
	}
	if u := t.Record.Usage; u != nil {
		r.Usage = &Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Incomplete: u.Incomplete}
	}
	if tr := t.Record.Transcript; tr != nil && tr.Present {
		r.Transcript = tr.Path
		if t.ChildID != "" {
			r.Resume = fmt.Sprintf("task({resume: %q, prompt: \"…\"})", t.ChildID)
		}
	}
	return r
}

// childResults is childResult of each, never nil.
func childResults(ts []orchestrator.TaskResult) []ChildResult {
	out := make([]ChildResult, 0, len(ts))
	for _, t := range ts {
		out = append(out, childResult(t))
	}
	return out
}

// handler is a tool's handler: the result (text and isError) and, unless
// the result is an error, its structured form.
type handler[Out any] func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Out)

// addTool registers t with an outputSchema generated from Out; h's value
// becomes the result's structuredContent, checked against that schema
// (an error result carries none, so that clients show its text). The
// arguments are left to h, which decodes them with toolargs (and the task
// tools' with the taskargs parsers the command line uses), for the same
// messages; t.InputSchema is generated from the arguments' type
// (toolargs.Schema), the one h decodes into.
func addTool[Out any](s *Server, t *mcp.Tool, h handler[Out]) {
	schema, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: typeSchemas})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	t.OutputSchema = schema
	s.add(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, out := h(ctx, req)
		if res.IsError || out == nil {
			return res, nil
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%s: structured result: %w", t.Name, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("%s: structured result: %w", t.Name, err)
		}
		if err := resolved.Validate(v); err != nil {
			return nil, fmt.Errorf("%s: structured result does not match the outputSchema: %w", t.Name, err)
		}
		res.StructuredContent = json.RawMessage(raw)
		return res, nil
	})
}

// worktreeEntry is the structured form of one worktrees_list entry.
func worktreeEntry(in worktree.Info) WorktreeEntry {
	return WorktreeEntry{
		ChildID: in.ChildID, State: in.State(), Branch: in.Record.Branch, Path: in.Record.Path, Baseline: in.Record.Baseline,
		Ahead: in.Ahead, Behind: in.Behind, Dirty: in.Dirty, Locked: in.Locked, LockPID: in.LockPID,
		InUse: in.Locked && in.LockPID > 0 && in.LockPIDAlive, Problem: in.Problem,
	}
}
