package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/inkdev/ink/model"
)

// TaskRunner runs one `task` call on behalf of the worker: it sends the
// request to the orchestrator and waits for the child's result. The worker
// implements it over ipc. RunTask gets the call id of the tool call and its
// arguments, already validated; it must honour ctx and be safe for
// concurrent use, since several task calls may run at once.
type TaskRunner interface {
	RunTask(ctx context.Context, callID string, args json.RawMessage) Result
}

// MinTaskTimeoutMs is the smallest timeoutMs a task call may ask for.
const MinTaskTimeoutMs = 1000

// childIDPattern is the shape of a child id (DESIGN §3: lowercase
// [a-z0-9-]).
var childIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// taskTool is the worker side of the `task` tool. It checks the arguments
// and forwards good calls to its TaskRunner. It is safe for concurrent use
// when the runner is.
type taskTool struct {
	runner TaskRunner
}

var _ Tool = (*taskTool)(nil)

// NewTask returns the `task` tool, which delegates work to a child agent
// through r. Bad arguments are answered with an isError Result without
// calling r; good ones are passed to r unchanged, with the call id from
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
			"agent picks a named agent profile; worktree: true gives the child its own git worktree and branch, so its edits " +
			"do not touch the working copy. timeoutMs bounds the child's run time. " +
			"To continue a child that stopped (interrupted, timed out, crashed) or to follow up on its answer, call task with " +
			"resume set to the child session id from its result and a new prompt; agent and worktree must then be left out.",
		Schema: schema([]string{"prompt"},
			prop{"prompt", "string", "What the child should do; it sees nothing else from this conversation."},
			prop{"agent", "string", "Name of the agent profile to run (default: a general agent). Not allowed with resume."},
			prop{"timeoutMs", "integer", "Time limit for the child in milliseconds, at least 1000."},
			prop{"worktree", "boolean", "Run the child in its own git worktree on its own branch. Not allowed with resume."},
			prop{"resume", "string", "Child session id to continue (from an earlier task result)."},
		),
	}
}

func (t *taskTool) Safe() bool { return true }

func (t *taskTool) Run(ctx context.Context, raw json.RawMessage) Result {
	if msg := validateTaskArgs(raw); msg != "" {
		return errorResult("task: %s", msg)
	}
	return t.runner.RunTask(ctx, CallID(ctx), raw)
}

// taskArgNames are the arguments task takes, in the order it documents them.
var taskArgNames = []string{"prompt", "agent", "timeoutMs", "worktree", "resume"}

// validateTaskArgs returns what is wrong with a task call's arguments, or
// "" when they are good (DESIGN §4).
func validateTaskArgs(raw json.RawMessage) string {
	takes := "task takes: " + strings.Join(taskArgNames, ", ")
	raw = bytes.TrimSpace(raw)
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return "arguments must be a JSON object; " + takes
	}
	var unknown []string
	for k := range fields {
		if !contains(taskArgNames, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Sprintf("unknown argument %s; %s", strings.Join(unknown, ", "), takes)
	}
	present := func(k string) bool { _, ok := fields[k]; return ok }
	given := func(k string) bool { return present(k) && !bytes.Equal(fields[k], []byte("null")) }

	var prompt string
	if !given("prompt") {
		return "prompt is required: say what the child should do"
	}
	if json.Unmarshal(fields["prompt"], &prompt) != nil {
		return "prompt must be a string"
	}
	if strings.TrimSpace(prompt) == "" {
		return "prompt is blank: say what the child should do"
	}
	if given("agent") {
		var agent string
		if json.Unmarshal(fields["agent"], &agent) != nil {
			return "agent must be a string naming an agent profile"
		}
		if strings.TrimSpace(agent) == "" {
			return "agent is blank: name an agent profile, or leave agent out for the default agent"
		}
	}
	if given("timeoutMs") {
		if msg := checkTimeoutMs(fields["timeoutMs"]); msg != "" {
			return msg
		}
	}
	if given("worktree") {
		var wt bool
		if json.Unmarshal(fields["worktree"], &wt) != nil {
			return "worktree must be true or false"
		}
	}
	if present("resume") {
		var id string
		if json.Unmarshal(fields["resume"], &id) != nil || fields["resume"][0] != '"' {
			return "resume must be a string: the child session id from an earlier task result"
		}
		switch {
		case strings.TrimSpace(id) == "":
			return "resume is blank: give the child session id from an earlier task result, or leave resume out to start a new child"
		case strings.Contains(id, "/") || strings.Contains(id, ".."):
			return fmt.Sprintf("resume %q is not a child session id (ids are lowercase letters, digits and -, never paths); give the id from an earlier task result", id)
		case !childIDPattern.MatchString(id):
			return fmt.Sprintf("resume %q is not a child session id (ids are lowercase letters, digits and -); give the id from an earlier task result", id)
		}
		var refused []string
		for _, k := range []string{"agent", "worktree"} {
			if present(k) {
				refused = append(refused, k)
			}
		}
		if len(refused) > 0 {
			return fmt.Sprintf("%s cannot be given with resume: a resumed child keeps its agent and worktree; leave %s out",
				strings.Join(refused, " and "), strings.Join(refused, " and "))
		}
	}
	return ""
}

// checkTimeoutMs returns what is wrong with a timeoutMs value, or "".
func checkTimeoutMs(raw json.RawMessage) string {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return fmt.Sprintf("timeoutMs must be a whole number of milliseconds (at least %d), got %s", MinTaskTimeoutMs, raw)
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.IsInf(f, 0) || f > math.MaxInt64/2 {
		return fmt.Sprintf("timeoutMs must be a whole number of milliseconds (at least %d), got %s", MinTaskTimeoutMs, raw)
	}
	if f < MinTaskTimeoutMs {
		return fmt.Sprintf("timeoutMs must be at least %d (one second), got %s", MinTaskTimeoutMs, raw)
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
