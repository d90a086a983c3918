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
package taskargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Args are the arguments of one task call. Pointer fields tell "absent"
// from a zero value: with Resume, Agent and Worktree are refused by their
// presence.
type Args struct {
	Prompt    string  `json:"prompt"`
	Agent     *string `json:"agent,omitempty"`
	TimeoutMs *int64  `json:"timeoutMs,omitempty"`
	Worktree  *bool   `json:"worktree,omitempty"`
	Resume    *string `json:"resume,omitempty"`
	// Background starts the child and answers at once with its id; its
	// result is collected later (task_wait). Allowed with resume.
	Background bool `json:"background,omitempty"`
}

// Names are the arguments task takes, in the order they are documented.
var Names = []string{"prompt", "agent", "timeoutMs", "worktree", "resume", "background"}

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
	takes := "task takes: " + strings.Join(Names, ", ")
	raw = bytes.TrimSpace(raw)
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return refuse("the arguments must be a JSON object; %s", takes)
	}
	var unknown []string
	for k := range fields {
		if !contains(Names, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return refuse("unknown argument %s; %s", strings.Join(unknown, ", "), takes)
	}
	present := func(k string) bool { _, ok := fields[k]; return ok }
	given := func(k string) bool { return present(k) && !bytes.Equal(fields[k], []byte("null")) }

	var a Args
	if !given("prompt") {
		return refuse("prompt is required: say what the child should do, in a self-contained instruction")
	}
	if json.Unmarshal(fields["prompt"], &a.Prompt) != nil {
		return refuse("prompt must be a string: say what the child should do")
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return refuse("prompt is blank: say what the child should do, in a self-contained instruction")
	}
	if given("agent") {
		var s string
		if json.Unmarshal(fields["agent"], &s) != nil {
			return refuse("agent must be a string naming an agent profile")
		}
		if strings.TrimSpace(s) == "" {
			return refuse("agent is blank: name an agent profile, or leave agent out for the default agent")
		}
		a.Agent = &s
	}
	if given("timeoutMs") {
		ms, err := timeoutMs(fields["timeoutMs"])
		if err != nil {
			return Args{}, err
		}
		a.TimeoutMs = &ms
	}
	if given("worktree") {
		var b bool
		if json.Unmarshal(fields["worktree"], &b) != nil {
			return refuse("worktree must be true or false")
		}
		a.Worktree = &b
	}
	if given("background") {
		if json.Unmarshal(fields["background"], &a.Background) != nil {
			return refuse("background must be true or false")
		}
	}
	if present("resume") {
		var id string
		if r := fields["resume"]; len(r) == 0 || r[0] != '"' || json.Unmarshal(r, &id) != nil {
			return refuse("resume must be a string: the child session id from an earlier task result")
		}
		if err := CheckID(id); err != nil {
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
		a.Resume = &id
	}
	return a, nil
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

// timeoutMs reads a whole number of milliseconds, in any JSON notation of a
// whole number (60000, 6e4, 60000.0), at least MinTimeoutMs.
func timeoutMs(raw json.RawMessage) (int64, error) {
	bad := func() (int64, error) {
		return 0, &Error{Msg: fmt.Sprintf("timeoutMs must be a whole number of milliseconds, at least %d (one second) and at most %d; got %s", MinTimeoutMs, int64(maxTimeoutMs), raw)}
	}
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return bad()
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
		return bad()
	}
	if f < MinTimeoutMs {
		return bad()
	}
	if f > maxTimeoutMs {
		return bad()
	}
	return int64(f), nil
}

// JSON encodes a as the arguments of a task call.
func (a Args) JSON() json.RawMessage {
	b, _ := json.Marshal(a)
	return b
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
