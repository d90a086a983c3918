package taskargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
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
	IDs []string `json:"ids,omitempty"`
}

// WaitArgs are the arguments of task_wait. IDs names the children to wait
// for; none means every background child whose result was not collected
// yet. TimeoutMs bounds the wait (0: do not wait, report what has ended);
// nil waits until they all end.
type WaitArgs struct {
	IDs       []string `json:"ids,omitempty"`
	TimeoutMs *int64   `json:"timeoutMs,omitempty"`
}

// CancelArgs are the arguments of task_cancel: the child to stop.
type CancelArgs struct {
	ID string `json:"id"`
}

// ParseStatus decodes and checks the arguments of task_status.
func ParseStatus(raw json.RawMessage) (StatusArgs, error) {
	fields, err := object(StatusTool, raw, "ids")
	if err != nil {
		return StatusArgs{}, err
	}
	ids, err := idList(StatusTool, fields)
	return StatusArgs{IDs: ids}, err
}

// ParseWait decodes and checks the arguments of task_wait.
func ParseWait(raw json.RawMessage) (WaitArgs, error) {
	fields, err := object(WaitTool, raw, "ids", "timeoutMs")
	if err != nil {
		return WaitArgs{}, err
	}
	var a WaitArgs
	if a.IDs, err = idList(WaitTool, fields); err != nil {
		return WaitArgs{}, err
	}
	if v, ok := fields["timeoutMs"]; ok && !bytes.Equal(v, []byte("null")) {
		var f float64
		if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || json.Unmarshal(v, &f) != nil ||
			f != math.Trunc(f) || f < 0 || f > maxTimeoutMs {
			return WaitArgs{}, &Error{Tool: WaitTool, Msg: fmt.Sprintf("timeoutMs must be a whole number of milliseconds, 0 or more (0 reports what has ended without waiting); got %s", v)}
		}
		ms := int64(f)
		a.TimeoutMs = &ms
	}
	return a, nil
}

// ParseCancel decodes and checks the arguments of task_cancel.
func ParseCancel(raw json.RawMessage) (CancelArgs, error) {
	fields, err := object(CancelTool, raw, "id")
	if err != nil {
		return CancelArgs{}, err
	}
	v, ok := fields["id"]
	if !ok || bytes.Equal(v, []byte("null")) {
		return CancelArgs{}, &Error{Tool: CancelTool, Msg: "id is required: the child session id from the task call that started it"}
	}
	var id string
	if v[0] != '"' || json.Unmarshal(v, &id) != nil {
		return CancelArgs{}, &Error{Tool: CancelTool, Msg: "id must be a string: the child session id from the task call that started it"}
	}
	if err := checkChildID(CancelTool, "id", id); err != nil {
		return CancelArgs{}, err
	}
	return CancelArgs{ID: id}, nil
}

// object decodes raw as a JSON object with only the names allowed. An
// empty raw is an empty object: these tools have no required argument in
// common.
func object(tool string, raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	takes := fmt.Sprintf("%s takes: %s", tool, strings.Join(allowed, ", "))
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, &Error{Tool: tool, Msg: "the arguments must be a JSON object; " + takes}
	}
	var unknown []string
	for k := range fields {
		if !contains(allowed, k) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &Error{Tool: tool, Msg: fmt.Sprintf("unknown argument %s; %s", strings.Join(unknown, ", "), takes)}
	}
	return fields, nil
}

// idList reads the optional "ids" argument: a list of distinct child ids.
func idList(tool string, fields map[string]json.RawMessage) ([]string, error) {
	v, ok := fields["ids"]
	if !ok || bytes.Equal(v, []byte("null")) {
		return nil, nil
	}
	var ids []string
	if v[0] != '[' || json.Unmarshal(v, &ids) != nil {
		return nil, &Error{Tool: tool, Msg: `ids must be a list of child session ids, e.g. ["01k…"]; leave it out for every child`}
	}
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
