// Package event owns ink's one vocabulary of progress events: what a worker
// reports about its attempt (messages, turns, tools, warnings, compactions)
// and what the supervisor reports about the tree (runs, children queued,
// started and ended). Every kind is a struct here; the set is closed (the
// Event interface has an unexported method), so the worker that makes an
// event, the wire that carries it, the `--json` writer and the live display
// all agree on its fields, and a type switch dispatches on it.
//
// An Envelope adds what the supervisor knows about every event: its place
// in the run's sequence, its time and the agent it is about. Its JSON form
// is one line of the `--json` stream:
//
//	{"v":1,"seq":7,"time":"…","agent":"main/2","session":"…","type":"task.end", …the kind's fields}
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// Event is one kind of progress event. Implementations are the structs of
// this package only.
type Event interface {
	// Kind is the event's "type" in the JSON stream, e.g. "task.start".
	Kind() string
	isEvent()
}

// Kinds every event: worker-made first, then supervisor-made.
const (
	KindMessage     = "message"
	KindTurnStart   = "turn.start"
	KindToolStart   = "tool.start"
	KindToolEnd     = "tool.end"
	KindWarning     = "warning"
	KindCompaction  = "compaction"
	KindRunStart    = "run.start"
	KindWorkerStart = "worker.start"
	KindTaskQueued  = "task.queued"
	KindTaskStart   = "task.start"
	KindTaskEnd     = "task.end"
	KindRunEnd      = "run.end"
)

// Message reports one message an agent appended to its transcript (the
// transcript has it before the event is sent).
type Message struct {
	Message model.Message `json:"message"`
}

// TurnStart reports that an agent asks its model for turn Turn (1-based,
// within the attempt).
type TurnStart struct {
	Turn int `json:"turn"`
}

// ToolStart reports a tool call about to run.
type ToolStart struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ToolEnd reports a tool call that finished.
type ToolEnd struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	IsError    bool   `json:"isError,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
}

// Warning is something the user should know that stops nothing: a retried
// request, a repaired transcript, a redacted secret, a health observation.
type Warning struct {
	Text string `json:"text"`
}

// Compaction reports that an agent's history was summarised to fit its
// model's context window: why (Trigger: the threshold was near, or the
// provider refused the request as too long), the estimated tokens before
// and after, the window, how many messages were kept and replaced, the id
// of the first kept entry and the summary call's usage. The summary itself
// is in the transcript.
type Compaction struct {
	Trigger      string       `json:"trigger"`
	TokensBefore int64        `json:"tokensBefore"`
	TokensAfter  int64        `json:"tokensAfter"`
	Window       int64        `json:"window,omitempty"`
	Kept         int          `json:"kept"`
	Replaced     int          `json:"replaced"`
	FirstKept    string       `json:"firstKept,omitempty"`
	Usage        *model.Usage `json:"usage,omitempty"`
}

// RunStart opens a run: `ink run` (agent "main") or `ink task` (agent
// "shell"), once its session exists.
type RunStart struct {
	Transcript  string `json:"transcript"`
	Model       string `json:"model"`
	Cwd         string `json:"cwd"`
	Continued   bool   `json:"continued,omitempty"`
	MaxParallel int    `json:"maxParallel,omitempty"`
	MaxDepth    int    `json:"maxDepth,omitempty"`
}

// WorkerStart reports the main agent's worker process.
type WorkerStart struct {
	Pid       int    `json:"pid"`
	AttemptID string `json:"attemptId"`
}

// TaskQueued reports a child waiting for a slot in the window of parallel
// children. Child is the child's display label.
type TaskQueued struct {
	ChildID    string `json:"childId,omitempty"`
	AgentName  string `json:"agentName,omitempty"`
	Child      string `json:"child"`
	ToolCallID string `json:"toolCallId,omitempty"`
	// Background marks a child started with background: true; its parent
	// went on working and collects it later.
	Background bool `json:"background,omitempty"`
}

// TaskStart reports a child's worker process started (a new child or a
// resumed one): Sandbox is the mode its bash runs under, and Network says
// that bash may reach the network.
type TaskStart struct {
	ChildID    string `json:"childId"`
	AgentName  string `json:"agentName"`
	Child      string `json:"child"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Worktree   string `json:"worktree"`
	AttemptID  string `json:"attemptId"`
	Pid        int    `json:"pid"`
	Resumed    bool   `json:"resumed"`
	Sandbox    string `json:"sandbox,omitempty"`
	Network    bool   `json:"network,omitempty"`
	Background bool   `json:"background,omitempty"`
}

// TaskEnd reports how a task call ended: a child's attempt, or a rejection
// (Status "rejected", nothing launched).
type TaskEnd struct {
	ChildID    string                   `json:"childId,omitempty"`
	Status     session.Status           `json:"status"`
	Reason     string                   `json:"reason,omitempty"`
	Turns      int                      `json:"turns"`
	Usage      *model.Usage             `json:"usage,omitempty"`
	Transcript string                   `json:"transcript,omitempty"`
	ToolCallID string                   `json:"toolCallId,omitempty"`
	AttemptID  string                   `json:"attemptId,omitempty"`
	Worktree   *session.WorktreeOutcome `json:"worktree,omitempty"`
	Health     []string                 `json:"health,omitempty"`
	Background bool                     `json:"background,omitempty"`
	// Capped is the cap that stopped the child, if one did: its answer is
	// a wrap-up, not a confirmed completion (as its TaskRecord).
	Capped session.Cap `json:"capped,omitempty"`
}

// RunEnd closes a run. Usage holds every agent's, by display label.
type RunEnd struct {
	Status     session.Status         `json:"status"`
	Reason     string                 `json:"reason,omitempty"`
	Text       string                 `json:"text"`
	Turns      int                    `json:"turns"`
	Usage      map[string]model.Usage `json:"usage,omitempty"`
	Transcript string                 `json:"transcript,omitempty"`
	// Rejected counts the task calls refused before anything ran.
	Rejected int `json:"rejected,omitempty"`
	// Budget is the run's token budget and what the tree spent of it,
	// when the run had one.
	Budget *Budget `json:"budget,omitempty"`
}

// Budget is a run's token budget (--budget) and the tokens the whole tree
// spent, counted as model.Usage.Total counts them.
type Budget struct {
	Limit int64 `json:"limit"`
	Spent int64 `json:"spent"`
}

func (Message) Kind() string     { return KindMessage }
func (TurnStart) Kind() string   { return KindTurnStart }
func (ToolStart) Kind() string   { return KindToolStart }
func (ToolEnd) Kind() string     { return KindToolEnd }
func (Warning) Kind() string     { return KindWarning }
func (Compaction) Kind() string  { return KindCompaction }
func (RunStart) Kind() string    { return KindRunStart }
func (WorkerStart) Kind() string { return KindWorkerStart }
func (TaskQueued) Kind() string  { return KindTaskQueued }
func (TaskStart) Kind() string   { return KindTaskStart }
func (TaskEnd) Kind() string     { return KindTaskEnd }
func (RunEnd) Kind() string      { return KindRunEnd }

func (Message) isEvent()     {}
func (TurnStart) isEvent()   {}
func (ToolStart) isEvent()   {}
func (ToolEnd) isEvent()     {}
func (Warning) isEvent()     {}
func (Compaction) isEvent()  {}
func (RunStart) isEvent()    {}
func (WorkerStart) isEvent() {}
func (TaskQueued) isEvent()  {}
func (TaskStart) isEvent()   {}
func (TaskEnd) isEvent()     {}
func (RunEnd) isEvent()      {}

// decoders build an empty event of each kind.
var decoders = map[string]func() Event{
	KindMessage:     func() Event { return &Message{} },
	KindTurnStart:   func() Event { return &TurnStart{} },
	KindToolStart:   func() Event { return &ToolStart{} },
	KindToolEnd:     func() Event { return &ToolEnd{} },
	KindWarning:     func() Event { return &Warning{} },
	KindCompaction:  func() Event { return &Compaction{} },
	KindRunStart:    func() Event { return &RunStart{} },
	KindWorkerStart: func() Event { return &WorkerStart{} },
	KindTaskQueued:  func() Event { return &TaskQueued{} },
	KindTaskStart:   func() Event { return &TaskStart{} },
	KindTaskEnd:     func() Event { return &TaskEnd{} },
	KindRunEnd:      func() Event { return &RunEnd{} },
}

// Decode builds the event of kind from its JSON fields. An unknown kind or
// a body that does not fit the kind is an error.
func Decode(kind string, data []byte) (Event, error) {
	mk, ok := decoders[kind]
	if !ok {
		return nil, fmt.Errorf("event %q: unknown kind", kind)
	}
	p := mk()
	if len(data) > 0 {
		if err := json.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("event %q: %w", kind, err)
		}
	}
	return deref(p), nil
}

// deref turns the pointer Decode filled into the value kind every producer
// uses, so a type switch needs one case per kind.
func deref(e Event) Event {
	switch v := e.(type) {
	case *Message:
		return *v
	case *TurnStart:
		return *v
	case *ToolStart:
		return *v
	case *ToolEnd:
		return *v
	case *Warning:
		return *v
	case *Compaction:
		return *v
	case *RunStart:
		return *v
	case *WorkerStart:
		return *v
	case *TaskQueued:
		return *v
	case *TaskStart:
		return *v
	case *TaskEnd:
		return *v
	case *RunEnd:
		return *v
	}
	return e
}

// Envelope is an event as the supervisor publishes it: numbered in the
// run's order, timed, and tied to an agent (its display label, "main",
// "main/2", "shell/1") and that agent's session.
type Envelope struct {
	Seq     uint64
	Time    time.Time
	Agent   string
	Session string
	// WorkerSeq is the worker's own number for a forwarded worker event
	// (0 for the supervisor's events).
	WorkerSeq uint64
	Body      Event
}

// MarshalJSON renders one line of the `--json` stream: the common fields
// and then the body's fields.
func (e Envelope) MarshalJSON() ([]byte, error) {
	body, err := marshalRaw(e.Body)
	if err != nil {
		return nil, err
	}
	head := struct {
		V         int    `json:"v"`
		Seq       uint64 `json:"seq"`
		Time      string `json:"time"`
		Agent     string `json:"agent"`
		Session   string `json:"session"`
		Type      string `json:"type"`
		WorkerSeq uint64 `json:"workerSeq,omitempty"`
	}{1, e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Agent, e.Session, e.Body.Kind(), e.WorkerSeq}
	out, err := marshalRaw(head)
	if err != nil {
		return nil, err
	}
	if len(body) > 2 { // more than "{}"
		out = append(out[:len(out)-1], ',')
		out = append(out, body[1:]...)
	}
	return out, nil
}

// marshalRaw is json.Marshal without HTML escaping, so that the `--json`
// stream shows "<", ">" and "&" (common in shell commands) as they are.
func marshalRaw(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads a line of the `--json` stream back.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	var head struct {
		Seq       uint64    `json:"seq"`
		Time      time.Time `json:"time"`
		Agent     string    `json:"agent"`
		Session   string    `json:"session"`
		Type      string    `json:"type"`
		WorkerSeq uint64    `json:"workerSeq"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	body, err := Decode(head.Type, data)
	if err != nil {
		return err
	}
	*e = Envelope{Seq: head.Seq, Time: head.Time, Agent: head.Agent, Session: head.Session, WorkerSeq: head.WorkerSeq, Body: body}
	return nil
}
