package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

// MaxReasonRunes bounds a TaskRecord's reason, in characters.
const MaxReasonRunes = 300

// TaskRecord is stored beside the toolResult message of a `task` call in
// the parent's transcript and is never sent to a model. Absent fields are
// omitted from its JSON.
type TaskRecord struct {
	Version         int    `json:"version"`
	AttemptID       string `json:"attemptId"`
	TaskToolCallID  string `json:"taskToolCallId,omitempty"`
	ParentSessionID string `json:"parentSessionId,omitempty"`
	// ChildID is the child's header id; absent for rejections.
	ChildID  string         `json:"childId,omitempty"`
	Launched bool           `json:"launched,omitempty"`
	Agent    string         `json:"agent,omitempty"`
	Binding  *model.Binding `json:"binding,omitempty"`
	Cwd      string         `json:"cwd,omitempty"`
	Tools    []string       `json:"tools,omitempty"`
	// TimeoutMs is the attempt's time limit; 0 means none.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Status is one of completed, aborted, timeout, crash, interrupted,
	// rejected (Status.OfTaskRecord).
	Status Status `json:"status"`
	// Reason says why, in at most MaxReasonRunes characters.
	Reason      string           `json:"reason,omitempty"`
	Turns       int              `json:"turns,omitempty"`
	TextPresent bool             `json:"textPresent,omitempty"`
	Transcript  *TranscriptRef   `json:"transcript,omitempty"`
	Worktree    *WorktreeOutcome `json:"worktree,omitempty"`
	Usage       *model.Usage     `json:"usage,omitempty"`
	// Capped says that the child was stopped by a cap and its text is a
	// wrap-up answer, not a confirmed completion: CappedTurns (its turn
	// cap) or CappedBudget (the tree's token budget).
	Capped Cap `json:"capped,omitempty"`
	// Health lists what the health watch observed during the attempt (a
	// call repeated turn after turn, edits failing again and again, a tool
	// open too long), one line each. Observations, not verdicts.
	Health []string `json:"health,omitempty"`
}

// TranscriptRef says where the child's transcript is, or why there is none.
type TranscriptRef struct {
	Present bool   `json:"present"`
	Path    string `json:"path,omitempty"`
	Why     string `json:"why,omitempty"`
}

// WorktreeOutcome says what became of a child's worktree after the attempt.
type WorktreeOutcome struct {
	Path   string `json:"path"`
	Branch string `json:"branch,omitempty"`
	// Disposition is one of worktree.Disposition's values (removed,
	// kept-work, …), kept as text: session sits below worktree.
	Disposition string `json:"disposition"`
	Detail      string `json:"detail,omitempty"`
}

// ParseTaskRecord decodes and validates a TaskRecord (see Validate).
// Unknown fields are ignored.
func ParseTaskRecord(raw []byte) (TaskRecord, error) {
	var r TaskRecord
	if err := strictDecode(raw, &r); err != nil {
		return TaskRecord{}, fmt.Errorf("task record: %w", err)
	}
	if err := r.Validate(); err != nil {
		return TaskRecord{}, err
	}
	return r, nil
}

// Validate checks r: version 1, an attempt id, valid ids, a known status, a
// reason of at most 300 characters, absolute paths, a valid binding, unique
// tool names, no negative counts, a transcript with a path when present and
// a why when not; a launched record names its child; a rejected record is
// not launched, has no turns and carries no child id, usage or binding.
func (r TaskRecord) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Version != 1 {
		bad("version %d is not supported (want 1)", r.Version)
	}
	if !ValidID(r.AttemptID) {
		bad("attemptId %q is not a valid id", r.AttemptID)
	}
	if r.ParentSessionID != "" && !ValidID(r.ParentSessionID) {
		bad("parentSessionId %q is not a valid id", r.ParentSessionID)
	}
	if r.ChildID != "" && !ValidID(r.ChildID) {
		bad("childId %q is not a valid id", r.ChildID)
	}
	if !r.Status.OfTaskRecord() {
		bad("status %q is not one of completed, aborted, timeout, crash, interrupted, rejected", r.Status)
	}
	if n := utf8.RuneCountInString(r.Reason); n > MaxReasonRunes {
		bad("reason is %d characters long (at most %d)", n, MaxReasonRunes)
	}
	if r.Binding != nil {
		if err := validateBinding(*r.Binding); err != nil {
			bad("%v", err)
		}
	}
	if r.Cwd != "" && !filepath.IsAbs(r.Cwd) {
		bad("cwd %q is not an absolute path", r.Cwd)
	}
	if err := validateToolNames(r.Tools, false); err != nil {
		bad("%v", err)
	}
	if r.TimeoutMs < 0 || r.Turns < 0 {
		bad("negative timeoutMs or turns")
	}
	if t := r.Transcript; t != nil {
		switch {
		case t.Present && !filepath.IsAbs(t.Path):
			bad("transcript path %q is not an absolute path", t.Path)
		case t.Present && t.Why != "":
			bad("a present transcript has a why")
		case !t.Present && (t.Path != "" || strings.TrimSpace(t.Why) == ""):
			bad("an absent transcript needs a why and no path")
		}
	}
	if w := r.Worktree; w != nil {
		if !filepath.IsAbs(w.Path) {
			bad("worktree path %q is not an absolute path", w.Path)
		}
		if strings.TrimSpace(w.Disposition) == "" {
			bad("worktree has no disposition")
		}
	}
	if u := r.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0) {
		bad("usage has a negative count")
	}
	if !r.Capped.Known() {
		bad("capped %q is not one of turns, budget", r.Capped)
	}
	for _, h := range r.Health {
		if strings.TrimSpace(h) == "" {
			bad("health holds a blank line")
			break
		}
	}
	if r.Launched && r.ChildID == "" {
		bad("a launched record has no childId")
	}
	if r.Status == StatusRejected {
		if r.Launched || r.Turns != 0 || r.ChildID != "" || r.Usage != nil || r.Binding != nil || r.Capped != "" || len(r.Health) > 0 {
			bad("a rejected record must not be launched and has no turns, childId, usage, binding, capped or health")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("task record: %w", errors.Join(errs...))
	}
	return nil
}

// Encode validates r and returns its JSON, ready for model.Message.TaskRecord.
func (r TaskRecord) Encode() (json.RawMessage, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	line, err := marshalLine(r)
	if err != nil {
		return nil, fmt.Errorf("task record: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(line, []byte("\n"))), nil
}

// TaskRecordsOf returns every TaskRecord message m carries, in order: the
// record of its own task result, then those of the background children it
// collects (a task_wait result, or ink's closing note to an agent). A
// record that does not parse is left out; every reader of records (resume,
// recovery, listings) goes through here so that both places count.
func TaskRecordsOf(m model.Message) []TaskRecord {
	var out []TaskRecord
	if len(m.TaskRecord) > 0 {
		if r, err := ParseTaskRecord(m.TaskRecord); err == nil {
			out = append(out, r)
		}
	}
	for _, raw := range m.TaskRecords {
		if r, err := ParseTaskRecord(raw); err == nil {
			out = append(out, r)
		}
	}
	return out
}
