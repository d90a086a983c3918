// Package taskargs owns the arguments of ink's `task` tool and of the tools
// that follow background children (`task_status`, `task_wait`,
// `task_cancel`): their names and the one parser every front end uses — the
// tools a worker gives its model, the supervisor that runs the children,
// `ink task` on the command line and the MCP server — so a call is accepted
// or refused by the same rules wherever it comes from.
//
// A task call starts one child (or continues one with resume). With
// background it returns at once with the child's id; the caller collects
// the result later with task_wait. The MCP server also takes a batch of
// tasks in one call (ParseBatch), run at once and answered in order.
//
// Each tool's arguments are one Go type (Args, StatusArgs, WaitArgs,
// CancelArgs; BatchArgs for the MCP server's task): the schemas a model
// sees are generated from it and the parsers decode into it, both with
// package toolargs; the parsers then check what a type cannot say (a
// blank prompt, a timeout's range, resume beside agent).
package taskargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/inkdev/ink/toolargs"
)

// Args are the arguments of one task call. Pointer fields tell "absent"
// from a zero value: with Resume, Agent and Worktree are refused by their
// presence.
//
// The type is the one declaration of task's arguments: its json tags name
// them, its jsonschema tags describe them to the model (TaskSchema), and
// Parse decodes them with toolargs.Decode.
type Args struct {
	Prompt    string  `json:"prompt" jsonschema:"What the child should do; it sees nothing else from this conversation, so say everything it needs: the goal, the relevant paths and what its final report should contain."`
	Agent     *string `json:"agent,omitempty" jsonschema:"Name of the agent profile to run (default: a general agent). Not allowed with resume."`
	TimeoutMs *int64  `json:"timeoutMs,omitempty" jsonschema:"Time limit for the child in milliseconds, at least 1000."`
	Worktree  *bool   `json:"worktree,omitempty" jsonschema:"Run the child in its own git worktree on its own branch, so its edits do not touch the working copy. Not allowed with resume."`
	Resume    *string `json:"resume,omitempty" jsonschema:"Child session id to continue (from an earlier task result), with a new prompt."`
	// Background starts the child and answers at once with its id; its
	// result is collected later (task_wait). Allowed with resume.
	Background bool `json:"background,omitempty" jsonschema:"Start the child and return at once with its id instead of waiting; collect its result later with task_wait."`
}

// Names are the arguments task takes, in the order they are documented
// (Args' fields).
var Names = toolargs.Names[Args]()

// MinTimeoutMs is the smallest timeoutMs a call may give (one second).
const MinTimeoutMs = 1000

// maxTimeoutMs keeps a timeout representable as a time.Duration.
const maxTimeoutMs = math.MaxInt64 / 1_000_000

// MaxIDLen is the longest child id accepted (ids ink makes have 26
// characters).
const MaxIDLen = 64

var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })

// Error is a refused call; its text says what was wrong and how to fix it,
// and starts with the tool's name ("task: ", "task_wait: ", …).
type Error struct {
	// Tool is the refused tool's name; "" means task.
	Tool string
	Msg  string
}

func (e *Error) Error() string {
	tool := e.Tool
	if tool == "" {
		tool = "task"
	}
	return tool + ": " + e.Msg
}

func refuse(format string, a ...any) (Args, error) {
	return Args{}, &Error{Msg: fmt.Sprintf(format, a...)}
}

// Parse decodes and checks the JSON arguments of a task call. The error is
// an *Error whose text tells the caller (a model or a person) what to fix.
func Parse(raw json.RawMessage) (Args, error) {
	a, err := toolargs.Decode[Args]("task", raw)
	if err != nil {
		return Args{}, fromDecode(err)
	}
	// Decode took a null as absent; resume refuses a null, and with
	// resume even a null agent or worktree is refused.
	var fields map[string]json.RawMessage
	json.Unmarshal(bytes.TrimSpace(raw), &fields)
	present := func(k string) bool { _, ok := fields[k]; return ok }

	if strings.TrimSpace(a.Prompt) == "" {
		return refuse("prompt is blank: say what the child should do, in a self-contained instruction")
	}
	if a.Agent != nil && strings.TrimSpace(*a.Agent) == "" {
		return refuse("agent is blank: name an agent profile, or leave agent out for the default agent")
	}
	if a.TimeoutMs != nil && (*a.TimeoutMs < MinTimeoutMs || *a.TimeoutMs > maxTimeoutMs) {
		return refuse("%s", timeoutMessage(fields["timeoutMs"]))
	}
	if present("resume") {
		if a.Resume == nil {
			return refuse("resume must be a string: the child session id from an earlier task result")
		}
		if err := CheckID(*a.Resume); err != nil {
			return Args{}, err
		}
		var both []string
		for _, k := range []string{"agent", "worktree"} {
			if present(k) {
				both = append(both, k)
			}
		}
		if len(both) > 0 {
			w := strings.Join(both, " and ")
			return refuse("%s cannot be given with resume: a resumed child keeps its agent and worktree; leave %s out", w, w)
		}
	}
	return a, nil
}

// WordArgs words the problems toolargs.Decode finds in task's arguments
// with what the model should give instead.
func (Args) WordArgs(e *toolargs.Error) string {
	switch {
	case e.Problem == toolargs.Missing && e.Field == "prompt":
		return "prompt is required: say what the child should do, in a self-contained instruction"
	case e.Problem != toolargs.WrongType:
		return ""
	}
	switch e.Field {
	case "prompt":
		return "prompt must be a string: say what the child should do"
	case "agent":
		return "agent must be a string naming an agent profile"
	case "timeoutMs":
		return timeoutMessage(e.Got)
	case "worktree", "background":
		return e.Field + " must be true or false"
	case "resume":
		return "resume must be a string: the child session id from an earlier task result"
	}
	return ""
}

// fromDecode is a toolargs.Decode error as an *Error.
func fromDecode(err error) error {
	var e *toolargs.Error
	if errors.As(err, &e) {
		tool := e.Tool
		if tool == "task" {
			tool = ""
		}
		return &Error{Tool: tool, Msg: e.Msg}
	}
	return err
}

// CheckID reports what is wrong with a child id given to resume, or nil.
func CheckID(id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return &Error{Msg: "resume is blank: give the child session id from an earlier task result, or leave resume out to start a new child"}
	case strings.Contains(id, "/") || strings.Contains(id, ".."):
		return &Error{Msg: fmt.Sprintf("resume %q is not a child session id (ids are lowercase letters, digits and -, never paths); give the id from an earlier task result", id)}
	case len(id) > MaxIDLen:
		return &Error{Msg: fmt.Sprintf("resume %q is not a child session id: it has %d characters and ids have at most %d; give the id from an earlier task result", id, len(id), MaxIDLen)}
	case !idPattern().MatchString(id):
		return &Error{Msg: fmt.Sprintf("resume %q is not a child session id (ids are lowercase letters, digits and -); give the id from an earlier task result", id)}
	}
	return nil
}

// timeoutMessage refuses the timeoutMs raw: not a whole number of
// milliseconds, or under MinTimeoutMs.
func timeoutMessage(raw json.RawMessage) string {
	return fmt.Sprintf("timeoutMs must be a whole number of milliseconds, at least %d (one second) and at most %d; got %s", MinTimeoutMs, int64(maxTimeoutMs), raw)
}

// JSON encodes a as the arguments of a task call.
func (a Args) JSON() json.RawMessage {
	b, _ := json.Marshal(a)
	return b
}
