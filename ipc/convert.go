package ipc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc/internal/pb"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// This file is the only one that turns ipc's typed messages into protobuf
// and back.

func hostToPB(m HostMsg) (*pb.HostMsg, error) {
	switch v := m.(type) {
	case Run:
		spec, err := json.Marshal(v.Spec)
		if err != nil {
			return nil, fmt.Errorf("encode run: %w", err)
		}
		return &pb.HostMsg{Msg: &pb.HostMsg_Run{Run: &pb.Run{Spec: spec}}}, nil
	case Cancel:
		if !CancelStatus(v.Status) {
			return nil, fmt.Errorf("ipc: a cancel cannot carry status %q (want aborted, timeout, crash or interrupted)", v.Status)
		}
		return &pb.HostMsg{Msg: &pb.HostMsg_Cancel{Cancel: &pb.Cancel{Status: statusToPB[v.Status], Reason: v.Reason}}}, nil
	case TaskAnswer:
		var rec []byte
		if v.Record != nil {
			b, err := json.Marshal(v.Record)
			if err != nil {
				return nil, fmt.Errorf("encode task record: %w", err)
			}
			rec = b
		}
		var recs [][]byte
		for _, r := range v.Records {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("encode task record: %w", err)
			}
			recs = append(recs, b)
		}
		return &pb.HostMsg{Msg: &pb.HostMsg_Answer{Answer: &pb.TaskAnswer{
			CorrelationId: v.CorrelationID, Content: v.Content, IsError: v.IsError, Record: rec,
			Records: recs, Running: v.Running,
		}}}, nil
	case Ack:
		return &pb.HostMsg{Msg: &pb.HostMsg_Ack{Ack: &pb.Ack{}}}, nil
	case Budget:
		return &pb.HostMsg{Msg: &pb.HostMsg_Budget{Budget: &pb.Budget{Remaining: v.Remaining}}}, nil
	case Appended:
		return &pb.HostMsg{Msg: &pb.HostMsg_Appended{Appended: &pb.Appended{Seq: v.Seq, Offsets: v.Offsets, Fenced: v.Fenced, Error: v.Error}}}, nil
	case WorkspaceChunk:
		if len(v.Data) > MaxChunk {
			return nil, fmt.Errorf("ipc: a workspace chunk of %d bytes is over %d", len(v.Data), MaxChunk)
		}
		return &pb.HostMsg{Msg: &pb.HostMsg_Workspace{Workspace: &pb.WorkspaceChunk{Data: v.Data, Last: v.Last}}}, nil
	}
	return nil, fmt.Errorf("ipc: cannot send %T to a worker", m)
}

func hostFromPB(m *pb.HostMsg) (HostMsg, error) {
	switch v := m.GetMsg().(type) {
	case *pb.HostMsg_Run:
		var spec AttemptSpec
		if err := json.Unmarshal(v.Run.GetSpec(), &spec); err != nil {
			return nil, fmt.Errorf("decode run: %w", err)
		}
		return Run{Spec: spec}, nil
	case *pb.HostMsg_Cancel:
		st, err := statusFromPB(v.Cancel.GetStatus())
		if err != nil {
			return nil, fmt.Errorf("decode cancel: %w", err)
		}
		if !CancelStatus(st) {
			return nil, fmt.Errorf("decode cancel: status %s cannot stop an attempt (want aborted, timeout, crash or interrupted)", st)
		}
		return Cancel{Status: st, Reason: v.Cancel.GetReason()}, nil
	case *pb.HostMsg_Answer:
		a := TaskAnswer{CorrelationID: v.Answer.GetCorrelationId(), Content: v.Answer.GetContent(), IsError: v.Answer.GetIsError()}
		if raw := v.Answer.GetRecord(); len(raw) > 0 {
			rec, err := session.ParseTaskRecord(raw)
			if err != nil {
				return nil, fmt.Errorf("decode task answer: %w", err)
			}
			a.Record = &rec
		}
		for _, raw := range v.Answer.GetRecords() {
			rec, err := session.ParseTaskRecord(raw)
			if err != nil {
				return nil, fmt.Errorf("decode task answer: %w", err)
			}
			a.Records = append(a.Records, rec)
		}
		a.Running = v.Answer.GetRunning()
		return a, nil
	case *pb.HostMsg_Ack:
		return Ack{}, nil
	case *pb.HostMsg_Budget:
		return Budget{Remaining: v.Budget.GetRemaining()}, nil
	case *pb.HostMsg_Appended:
		a := v.Appended
		return Appended{Seq: a.GetSeq(), Offsets: a.GetOffsets(), Fenced: a.GetFenced(), Error: a.GetError()}, nil
	case *pb.HostMsg_Workspace:
		if len(v.Workspace.GetData()) > MaxChunk {
			return nil, fmt.Errorf("ipc: a workspace chunk of %d bytes is over %d", len(v.Workspace.GetData()), MaxChunk)
		}
		return WorkspaceChunk{Data: v.Workspace.GetData(), Last: v.Workspace.GetLast()}, nil
	}
	return nil, fmt.Errorf("ipc: the host sent a message this worker does not know (%T); the ink binary may have changed underneath", m.GetMsg())
}

func workerToPB(m WorkerMsg) (*pb.WorkerMsg, error) {
	switch v := m.(type) {
	case Event:
		if v.Body == nil {
			return nil, fmt.Errorf("ipc: event %d has no body", v.Seq)
		}
		data, err := json.Marshal(v.Body)
		if err != nil {
			return nil, fmt.Errorf("encode %s event: %w", v.Body.Kind(), err)
		}
		return &pb.WorkerMsg{Msg: &pb.WorkerMsg_Event{Event: &pb.Event{Seq: v.Seq, Type: v.Body.Kind(), Data: data}}}, nil
	case TaskRequest:
		return &pb.WorkerMsg{Msg: &pb.WorkerMsg_Task{Task: &pb.TaskRequest{
			CorrelationId: v.CorrelationID, ToolCallId: v.ToolCallID, Args: v.Args, Op: v.Op,
		}}}, nil
	case Outcome:
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("ipc: %w", err)
		}
		u := v.Usage
		return &pb.WorkerMsg{Msg: &pb.WorkerMsg_Outcome{Outcome: &pb.Outcome{
			Status: statusToPB[v.Status], Code: codeToPB[v.Code], Reason: v.Reason, Text: v.Text, Turns: int64(v.Turns),
			Usage:     &pb.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Incomplete: u.Incomplete},
			AttemptId: v.AttemptID, Epoch: v.Epoch, Health: v.Health, Capped: capToPB[v.Capped],
		}}}, nil
	case Append:
		return &pb.WorkerMsg{Msg: &pb.WorkerMsg_Append{Append: &pb.Append{
			Seq: v.Seq, AttemptId: v.AttemptID, Epoch: v.Epoch, Lines: v.Lines, Durable: v.Durable, Snapshot: v.Snapshot,
		}}}, nil
	case WorkspaceDelta:
		if len(v.Data) > MaxChunk {
			return nil, fmt.Errorf("ipc: a workspace delta of %d bytes is over %d", len(v.Data), MaxChunk)
		}
		return &pb.WorkerMsg{Msg: &pb.WorkerMsg_Delta{Delta: &pb.WorkspaceDelta{Seq: v.Seq, Data: v.Data, Last: v.Last}}}, nil
	}
	return nil, fmt.Errorf("ipc: cannot send %T to the host", m)
}

func workerFromPB(m *pb.WorkerMsg) (WorkerMsg, error) {
	switch v := m.GetMsg().(type) {
	case *pb.WorkerMsg_Event:
		body, err := event.Decode(v.Event.GetType(), v.Event.GetData())
		if err != nil {
			return nil, fmt.Errorf("worker event %d: %w", v.Event.GetSeq(), err)
		}
		return Event{Seq: v.Event.GetSeq(), Body: body}, nil
	case *pb.WorkerMsg_Task:
		return TaskRequest{CorrelationID: v.Task.GetCorrelationId(), ToolCallID: v.Task.GetToolCallId(), Args: v.Task.GetArgs(), Op: v.Task.GetOp()}, nil
	case *pb.WorkerMsg_Outcome:
		o := v.Outcome
		u := o.GetUsage()
		st, err := statusFromPB(o.GetStatus())
		if err != nil {
			return nil, fmt.Errorf("decode outcome: %w", err)
		}
		code, err := codeFromPB(o.GetCode())
		if err != nil {
			return nil, fmt.Errorf("decode outcome: %w", err)
		}
		capped, err := capFromPB(o.GetCapped())
		if err != nil {
			return nil, fmt.Errorf("decode outcome: %w", err)
		}
		out := Outcome{
			Status: st, Code: code, Reason: o.GetReason(), Text: o.GetText(), Turns: int(o.GetTurns()),
			Usage:     model.Usage{Input: u.GetInput(), Output: u.GetOutput(), CacheRead: u.GetCacheRead(), CacheWrite: u.GetCacheWrite(), Incomplete: u.GetIncomplete()},
			AttemptID: o.GetAttemptId(), Epoch: o.GetEpoch(), Health: o.GetHealth(), Capped: capped,
		}
		if err := out.Validate(); err != nil {
			return nil, fmt.Errorf("decode outcome: %w", err)
		}
		return out, nil
	case *pb.WorkerMsg_Append:
		a := v.Append
		return Append{Seq: a.GetSeq(), AttemptID: a.GetAttemptId(), Epoch: a.GetEpoch(), Lines: a.GetLines(), Durable: a.GetDurable(), Snapshot: a.GetSnapshot()}, nil
	case *pb.WorkerMsg_Delta:
		d := v.Delta
		if len(d.GetData()) > MaxChunk {
			return nil, fmt.Errorf("ipc: a workspace delta of %d bytes is over %d", len(d.GetData()), MaxChunk)
		}
		return WorkspaceDelta{Seq: d.GetSeq(), Data: d.GetData(), Last: d.GetLast()}, nil
	}
	return nil, fmt.Errorf("ipc: the worker sent a message this host does not know (%T); the ink binary may have changed underneath", m.GetMsg())
}

// statusToPB maps each Status that travels on the wire (an outcome's or a
// cancel's) to its enum value; a status missing here is never sent.
var statusToPB = map[session.Status]pb.Status{
	session.StatusCompleted:   pb.Status_STATUS_COMPLETED,
	session.StatusAborted:     pb.Status_STATUS_ABORTED,
	session.StatusTimeout:     pb.Status_STATUS_TIMEOUT,
	session.StatusCrash:       pb.Status_STATUS_CRASH,
	session.StatusInterrupted: pb.Status_STATUS_INTERRUPTED,
	session.StatusRefused:     pb.Status_STATUS_REFUSED,
}

// codeToPB maps each refusal code a worker may send to its enum value.
var codeToPB = map[session.Code]pb.RefusalCode{
	session.CodeStillRunning:  pb.RefusalCode_REFUSAL_CODE_STILL_RUNNING,
	session.CodeMalformed:     pb.RefusalCode_REFUSAL_CODE_MALFORMED,
	session.CodeHeaderChanged: pb.RefusalCode_REFUSAL_CODE_HEADER_CHANGED,
	session.CodeCreateFailed:  pb.RefusalCode_REFUSAL_CODE_CREATE_FAILED,
}

// statusFromPB is the Status of a wire value; unspecified and values this
// ink does not know are errors.
func statusFromPB(v pb.Status) (session.Status, error) {
	if v == pb.Status_STATUS_UNSPECIFIED {
		return "", errors.New("no status (the peer left it unspecified)")
	}
	return fromPB(statusToPB, v, "status")
}

// codeFromPB is the refusal code of a wire value: "" for unspecified, an
// error for a value this ink does not know.
func codeFromPB(v pb.RefusalCode) (session.Code, error) {
	if v == pb.RefusalCode_REFUSAL_CODE_UNSPECIFIED {
		return "", nil
	}
	return fromPB(codeToPB, v, "refusal code")
}

// capToPB maps each cap to its enum value ("" is CAP_NONE).
var capToPB = map[session.Cap]pb.Cap{
	"":                   pb.Cap_CAP_NONE,
	session.CappedTurns:  pb.Cap_CAP_TURNS,
	session.CappedBudget: pb.Cap_CAP_BUDGET,
}

// capFromPB is the cap of a wire value; a value this ink does not know is
// an error.
func capFromPB(v pb.Cap) (session.Cap, error) {
	return fromPB(capToPB, v, "cap")
}

// fromPB is the Go value that toPB maps to the enum value v, or an error
// naming what (a status, a cap) when none does.
func fromPB[G ~string, P ~int32](toPB map[G]P, v P, what string) (G, error) {
	for g, p := range toPB {
		if p == v {
			return g, nil
		}
	}
	return "", fmt.Errorf("unknown %s %d on the wire; the ink binary may have changed underneath", what, int32(v))
}
