package taskargs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/inkdev/ink/toolargs"
)

// Names of the tools that follow background children.
const (
	StatusTool = "task_status"
	WaitTool   = "task_wait"
	CancelTool = "task_cancel"
)

// MaxIDs bounds how many child ids one task_status or task_wait call may
// name.
const MaxIDs = 64

// StatusArgs are the arguments of task_status: the children to report on;
// none means every child of the caller.
type StatusArgs struct {
	IDs []string `json:"ids,omitempty" jsonschema:"Child session ids to report on; leave out for every child."`
}

// WaitArgs are the arguments of task_wait. IDs names the children to wait
// for; none means every background child whose result was not collected
// yet. TimeoutMs bounds the wait (0: do not wait, report what has ended);
// nil waits until they all end.
type WaitArgs struct {
	IDs       []string `json:"ids,omitempty" jsonschema:"Child session ids to wait for; leave out for every background child whose result you have not collected yet."`
	TimeoutMs *int64   `json:"timeoutMs,omitempty" jsonschema:"Stop waiting after this many milliseconds and report the children that ended so far (0: do not wait). Leave out to wait until they all end."`
}

// CancelArgs are the arguments of task_cancel: the child to stop.
type CancelArgs struct {
	ID string `json:"id" jsonschema:"Child session id of the child to stop."`
}

// ParseStatus decodes and checks the arguments of task_status.
func ParseStatus(raw json.RawMessage) (StatusArgs, error) {
	a, err := toolargs.Decode[StatusArgs](StatusTool, raw)
	if err != nil {
		return StatusArgs{}, fromDecode(err)
	}
	a.IDs, err = idList(StatusTool, a.IDs)
	return a, err
}

// ParseWait decodes and checks the arguments of task_wait.
func ParseWait(raw json.RawMessage) (WaitArgs, error) {
	a, err := toolargs.Decode[WaitArgs](WaitTool, raw)
	if err != nil {
		return WaitArgs{}, fromDecode(err)
	}
	if a.IDs, err = idList(WaitTool, a.IDs); err != nil {
		return WaitArgs{}, err
	}
	if a.TimeoutMs != nil && (*a.TimeoutMs < 0 || *a.TimeoutMs > maxTimeoutMs) {
		return WaitArgs{}, &Error{Tool: WaitTool, Msg: waitTimeoutMessage(strconv.FormatInt(*a.TimeoutMs, 10))}
	}
	return a, nil
}

// ParseCancel decodes and checks the arguments of task_cancel.
func ParseCancel(raw json.RawMessage) (CancelArgs, error) {
	a, err := toolargs.Decode[CancelArgs](CancelTool, raw)
	if err != nil {
		return CancelArgs{}, fromDecode(err)
	}
	if err := checkChildID(CancelTool, "id", a.ID); err != nil {
		return CancelArgs{}, err
	}
	return a, nil
}

const idsMessage = `ids must be a list of child session ids, e.g. ["01k…"]; leave it out for every child`

// WordArgs words a wrong ids for the model.
func (StatusArgs) WordArgs(e *toolargs.Error) string {
	if e.Problem == toolargs.WrongType && e.Field == "ids" {
		return idsMessage
	}
	return ""
}

// WordArgs words a wrong ids or timeoutMs for the model.
func (WaitArgs) WordArgs(e *toolargs.Error) string {
	switch {
	case e.Problem != toolargs.WrongType:
		return ""
	case e.Field == "ids":
		return idsMessage
	case e.Field == "timeoutMs":
		return waitTimeoutMessage(string(e.Got))
	}
	return ""
}

// WordArgs words a missing or wrong id for the model.
func (CancelArgs) WordArgs(e *toolargs.Error) string {
	switch e.Problem {
	case toolargs.Missing:
		return "id is required: the child session id from the task call that started it"
	case toolargs.WrongType:
		return "id must be a string: the child session id from the task call that started it"
	}
	return ""
}

func waitTimeoutMessage(got string) string {
	return fmt.Sprintf("timeoutMs must be a whole number of milliseconds, 0 or more (0 reports what has ended without waiting); got %s", got)
}

// idList checks the optional ids argument: at most MaxIDs child ids; it
// drops repeats.
func idList(tool string, ids []string) ([]string, error) {
	if len(ids) > MaxIDs {
		return nil, &Error{Tool: tool, Msg: fmt.Sprintf("ids names %d children; name at most %d, or leave ids out for every child", len(ids), MaxIDs)}
	}
	seen := map[string]bool{}
	var out []string
	for _, id := range ids {
		if err := checkChildID(tool, "ids", id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// checkChildID reports what is wrong with a child id given to field.
func checkChildID(tool, field, id string) error {
	bad := func(why string) error {
		return &Error{Tool: tool, Msg: fmt.Sprintf("%s: %q is not a child session id (%s); give the id from the task call that started the child", field, id, why)}
	}
	switch {
	case strings.TrimSpace(id) == "":
		return &Error{Tool: tool, Msg: fmt.Sprintf("%s: a blank id; give the child session id from the task call that started the child", field)}
	case strings.Contains(id, "/") || strings.Contains(id, ".."):
		return bad("ids are lowercase letters, digits and -, never paths")
	case len(id) > MaxIDLen:
		return bad(fmt.Sprintf("it has %d characters and ids have at most %d", len(id), MaxIDLen))
	case !idPattern().MatchString(id):
		return bad("ids are lowercase letters, digits and -")
	}
	return nil
}
