package session

import (
	"fmt"
	"strings"
)

// Status is how an attempt or a task ended, or where a task stands: the one
// closed set every package of ink uses (transcripts, task records, the
// worker wire, events, the MCP tools, the console). It is a string on disk
// and in JSON, so a transcript written before it was a type reads the same.
// Decoding a value outside the set is an error (*UnknownStatusError); each
// place that carries a Status says which of the values it allows.
type Status string

// The statuses. The first five end an attempt (AttemptEntry, Outcome); a
// TaskRecord carries those or StatusRejected; the rest say where a task
// stands without ending an attempt.
const (
	// StatusCompleted: the agent gave its final answer.
	StatusCompleted Status = "completed"
	// StatusAborted: stopped on request (the user, the parent, a client).
	StatusAborted Status = "aborted"
	// StatusTimeout: stopped by its time limit.
	StatusTimeout Status = "timeout"
	// StatusCrash: the worker failed, hung or died.
	StatusCrash Status = "crash"
	// StatusInterrupted: its supervisor or host was lost; the attempt can
	// be resumed.
	StatusInterrupted Status = "interrupted"
	// StatusRefused: the worker refused the attempt before it ran (Outcome
	// only, with a Code); the transcript was left as it was.
	StatusRefused Status = "refused"
	// StatusRejected: the task call was refused before a child ran
	// (TaskRecord, task results).
	StatusRejected Status = "rejected"
	// StatusStarted: a background child was started and still runs (task
	// results only).
	StatusStarted Status = "started"
	// StatusUnfinished: a transcript's last attempt started and recorded no
	// end (listings only): it runs, or its worker died.
	StatusUnfinished Status = "unfinished"
	// StatusFailed: a task of a tasks list that produced no record of its
	// own (a batch's summary lines, MCP results).
	StatusFailed Status = "failed"
)

// Statuses lists every Status, in the order above.
var Statuses = []Status{
	StatusCompleted, StatusAborted, StatusTimeout, StatusCrash, StatusInterrupted,
	StatusRefused, StatusRejected, StatusStarted, StatusUnfinished, StatusFailed,
}

// Known reports whether s is one of Statuses.
func (s Status) Known() bool {
	switch s {
	case StatusCompleted, StatusAborted, StatusTimeout, StatusCrash, StatusInterrupted,
		StatusRefused, StatusRejected, StatusStarted, StatusUnfinished, StatusFailed:
		return true
	}
	return false
}

// EndsAttempt reports whether s may end an attempt (an AttemptEntry of
// phase end): completed, aborted, timeout, crash or interrupted.
func (s Status) EndsAttempt() bool {
	switch s {
	case StatusCompleted, StatusAborted, StatusTimeout, StatusCrash, StatusInterrupted:
		return true
	}
	return false
}

// OfTaskRecord reports whether a TaskRecord may carry s: an attempt's end
// or rejected.
func (s Status) OfTaskRecord() bool {
	return s.EndsAttempt() || s == StatusRejected
}

// UnmarshalText accepts "" (no status) and every known status, and refuses
// anything else with an *UnknownStatusError.
func (s *Status) UnmarshalText(text []byte) error {
	v := Status(text)
	if v != "" && !v.Known() {
		return &UnknownStatusError{Value: string(text)}
	}
	*s = v
	return nil
}

// UnknownStatusError is a status this ink does not know, read from a file or
// the wire.
type UnknownStatusError struct {
	Value string
}

// Error says what was read and what ink knows.
func (e *UnknownStatusError) Error() string {
	return fmt.Sprintf("unknown status %q (this ink knows %s); was it written by another version of ink?", e.Value, statusList(Statuses))
}

// statusList is ss joined for a message.
func statusList(ss []Status) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Cap says which cap stopped an agent early, so that its text is a wrap-up
// answer and not a confirmed completion (TaskRecord.Capped,
// AttemptEntry.Capped, ipc.Outcome.Capped); "" when none did. Like Status it
// is the same string on disk it always was, and an unknown one does not
// decode (*UnknownCapError).
type Cap string

// The caps.
const (
	// CappedTurns: the agent reached its turn cap.
	CappedTurns Cap = "turns"
	// CappedBudget: the tree's token budget was nearly spent.
	CappedBudget Cap = "budget"
)

// Known reports whether c is "" (no cap) or one of the caps.
func (c Cap) Known() bool {
	return c == "" || c == CappedTurns || c == CappedBudget
}

// UnmarshalText accepts "" and every cap, and refuses anything else with an
// *UnknownCapError.
func (c *Cap) UnmarshalText(text []byte) error {
	v := Cap(text)
	if !v.Known() {
		return &UnknownCapError{Value: string(text)}
	}
	*c = v
	return nil
}

// UnknownCapError is a cap this ink does not know, read from a file or the
// wire.
type UnknownCapError struct {
	Value string
}

// Error says what was read and what ink knows.
func (e *UnknownCapError) Error() string {
	return fmt.Sprintf("unknown capped value %q (this ink knows %s, %s); was it written by another version of ink?", e.Value, CappedTurns, CappedBudget)
}
