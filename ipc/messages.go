package ipc

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// HostMsg is a message from the host (the supervisor) to a worker on an
// attempt stream: Run, Cancel, TaskAnswer or Ack. The set is closed.
type HostMsg interface{ isHostMsg() }

// Run starts the attempt; it is the first message of every stream.
type Run struct {
	Spec AttemptSpec
}

// Cancel asks the worker to stop at its next safe point and end the attempt
// with Status (aborted, timeout, or crash for a worker the supervisor
// found hung) and Reason. Status interrupted stops it as host lost: the
// worker ends exactly as if its supervisor had died (Reason HostLost),
// leaving its open task calls to be answered from its children's
// transcripts when it is resumed. Any other status is not sent (an error
// on either end).
type Cancel struct {
	Status session.Status
	Reason string
}

// CancelStatus reports whether a Cancel may carry s.
func CancelStatus(s session.Status) bool {
	switch s {
	case session.StatusAborted, session.StatusTimeout, session.StatusCrash, session.StatusInterrupted:
		return true
	}
	return false
}

// TaskAnswer answers the TaskRequest with the same CorrelationID: the
// composed result, the TaskRecord to store beside it (a task call's) or
// the TaskRecords of the background children it collects (task_wait,
// task_cancel), and for op "pending" the children still to collect.
type TaskAnswer struct {
	CorrelationID string
	Content       string
	IsError       bool
	Record        *session.TaskRecord
	Records       []session.TaskRecord
	// Running names the caller's background children that still run or
	// whose results it has not collected (op "pending").
	Running []string
}

// Ack acknowledges the worker's Outcome: the worker may end the stream and
// exit.
type Ack struct{}

// Budget tells the worker how many tokens the whole tree of agents may
// still spend (negative when overspent); the supervisor sends it whenever
// the tree's spending changes.
type Budget struct {
	Remaining int64
}

func (Budget) isHostMsg()     {}
func (Run) isHostMsg()        {}
func (Cancel) isHostMsg()     {}
func (TaskAnswer) isHostMsg() {}
func (Ack) isHostMsg()        {}

// WorkerMsg is a message from a worker to its host: Event, TaskRequest or
// Outcome. The set is closed.
type WorkerMsg interface{ isWorkerMsg() }

// Event is one progress event of the attempt, numbered by the worker from 1.
type Event struct {
	Seq  uint64
	Body event.Event
}

// TaskRequest asks the host to run (or resume) a child for a `task` call
// (Op "" or OpTask), or to report on (OpStatus), wait for (OpWait) or stop
// (OpCancel) the caller's children; OpPending asks which background
// children the caller must still collect. Args are the call's JSON
// arguments as the model gave them.
type TaskRequest struct {
	CorrelationID string
	ToolCallID    string
	Args          json.RawMessage
	Op            string
}

// Ops of a TaskRequest.
const (
	OpTask    = "task"
	OpStatus  = "status"
	OpWait    = "wait"
	OpCancel  = "cancel"
	OpPending = "pending"
)

// Outcome ends the attempt; the host answers it with Ack.
type Outcome struct {
	// Status is one that ends an attempt (session.Status.EndsAttempt), or
	// refused: the attempt never ran and nothing was written.
	Status session.Status
	// Code says why a refused attempt was refused (one of
	// session.RefusalCodes); it is empty for every other status. Reason
	// says it in words, without the code.
	Code      session.Code
	Reason    string
	Text      string // this attempt's final assistant text
	Turns     int
	Usage     model.Usage
	AttemptID string
	Epoch     int64
	// Health holds the attempt's health observations, one line each.
	Health []string
	// Capped says which cap wrapped the attempt up before it was done, or
	// is empty.
	Capped session.Cap
}

// Validate checks o's closed sets: a status an outcome may carry, a
// refusal code exactly when it is refused, and a known cap.
func (o Outcome) Validate() error {
	switch {
	case !o.Status.EndsAttempt() && o.Status != session.StatusRefused:
		return fmt.Errorf("outcome has status %q, want completed, aborted, timeout, crash, interrupted or refused", o.Status)
	case o.Status == session.StatusRefused && !o.Code.RefusalCode():
		return fmt.Errorf("refused outcome has refusal code %q, want one of %s", o.Code, codeList(session.RefusalCodes))
	case o.Status != session.StatusRefused && o.Code != "":
		return fmt.Errorf("%s outcome carries refusal code %q; only a refused one has a code", o.Status, o.Code)
	case !o.Capped.Known():
		return fmt.Errorf("outcome has cap %q, want turns, budget or none", o.Capped)
	}
	return nil
}

// codeList is cs joined for a message.
func codeList(cs []session.Code) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func (Event) isWorkerMsg()       {}
func (TaskRequest) isWorkerMsg() {}
func (Outcome) isWorkerMsg()     {}

// Append asks the host to write entries to the transcript of a remote
// worker's attempt (protocol 5): one batch, numbered from 1 without gaps,
// of lines encoded with session.EncodeEntries. The host answers Appended;
// the worker sends an entry's event only after that. Snapshot, when not 0,
// is the WorkspaceDelta the host must have applied before it writes the
// batch.
type Append struct {
	Seq       uint64
	AttemptID string
	Epoch     int64
	Lines     [][]byte
	Durable   bool
	Snapshot  uint64
}

// WorkspaceDelta is one piece of snapshot Seq of a remote child's
// worktree; Last marks the snapshot's last piece.
type WorkspaceDelta struct {
	Seq  uint64
	Data []byte
	Last bool
}

func (Append) isWorkerMsg()         {}
func (WorkspaceDelta) isWorkerMsg() {}

// Appended answers the Append with the same Seq: where its lines landed,
// or why it was refused. Fenced ends the attempt: the worker writes
// nothing more and stops as a fenced worker does.
type Appended struct {
	Seq     uint64
	Offsets []int64
	Fenced  bool
	Error   string
}

// WorkspaceChunk is one piece of a remote child's baseline, sent right
// after Run; Last marks the last piece.
type WorkspaceChunk struct {
	Data []byte
	Last bool
}

func (Appended) isHostMsg()       {}
func (WorkspaceChunk) isHostMsg() {}

// MaxChunk bounds the data of one WorkspaceChunk or WorkspaceDelta.
const MaxChunk = 1 << 20
