package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TaskOptions are the inputs of `ink task`.
type TaskOptions struct {
	Args TaskArgs
	// Parent names the session that owns the child to resume; default: the
	// most recent session of this cwd that owns it.
	Parent string
}

// TaskResult is how `ink task` ended.
type TaskResult struct {
	Content string // the composed task result, as a parent model would see it
	IsError bool
	Status  string // the TaskRecord status (rejected included)
	Record  session.TaskRecord
	// ParentSession is the shell session this command recorded its task
	// call in ("" when it was refused before writing anything).
	ParentSession string
}

// ErrBadInput marks errors caused by the user's input (exit code 2).
var ErrBadInput = errors.New("bad input")

// Task runs one child from the shell, with no main agent. The orchestrator
// writes its parent: a new shell session holding this command's task call
// and its result, under that session's lease, created only once the child
// is launched, so a rejected task leaves no file behind. A resumed child
// lives in the session that owns it (found with --parent, or the newest
// owner in this directory), but its resume is recorded here, never in the
// owner's transcript, which only the owner's own worker writes.
func (o *Orchestrator) Task(ctx context.Context, opts TaskOptions) (TaskResult, error) {
	tools := o.mainTools()
	id := session.NewID()
	parent := &agentRun{
		label: "shell", sessionID: id, transcript: session.MainPath(o.cfg.InkHome, o.cfg.Cwd, id),
		depth: 0, binding: o.cfg.Binding, tools: tools, cwd: o.cfg.Cwd, root: o.cfg.Cwd, shell: true,
	}
	// The shell parent's system prompt is what a main agent would have, so
	// children launched from the shell and from `ink run` look alike.
	files := projectContext(o.cfg.Cwd)
	parent.system = mainSystem(o.cfg.Cwd, time.Now(), tools, o.profileSet(), files...)
	parent.files = contextRefs(files)
	call := taskCall{id: "shell-" + session.NewID(), label: parent.nextChildLabel(), ticket: o.pub.ticket()}
	if opts.Args.Resume != nil {
		path, _, err := o.findOwner(*opts.Args.Resume, opts.Parent)
		if err != nil {
			res := TaskResult{Status: StatusRejected, Content: err.Error() + "\nStart a new task instead.", IsError: true}
			o.pub.emit(call.label, "", event.TaskEnd{Status: StatusRejected, Reason: res.Content, ToolCallID: call.id})
			o.pub.emit("shell", "", event.RunEnd{Status: res.Status, Reason: res.Content, Rejected: 1})
			return res, nil
		}
		parent.childrenOf = path
	} else if opts.Parent != "" {
		return TaskResult{}, fmt.Errorf("%w: --parent only goes with --resume", ErrBadInput)
	}

	var (
		w      *session.Writer
		l      *lease.Lease
		once   sync.Once
		setErr error
	)
	defer func() {
		if w != nil {
			w.Close()
		}
		if l != nil {
			l.Release()
		}
	}()
	parent.onLaunch = func() error {
		once.Do(func() {
			setErr = func() error {
				if err := mkdirFor(parent.transcript); err != nil {
					return err
				}
				// The session, its lease record and the task call become
				// durable together: creating the transcript syncs the
				// directory that holds both.
				var err error
				l, err = lease.AcquireWith(parent.transcript, lease.Owner{AttemptID: call.id, Agent: "shell", SessionID: parent.sessionID},
					lease.Options{Heartbeat: o.cfg.HeartbeatInterval, DeferDirSync: true})
				if err != nil {
					return err
				}
				l.StartHeartbeat(o.cfg.HeartbeatInterval)
				args, _ := json.Marshal(opts.Args)
				redacted, _ := o.redact.Redact(string(args))
				callMsg := model.Message{Role: model.RoleAssistant, Model: "shell", ToolCalls: []model.ToolCall{{ID: call.id, Name: "task", Args: json.RawMessage(redacted)}}}
				w, _, err = session.CreateWith(parent.transcript, session.Header{Type: "session", Version: session.Version, ID: parent.sessionID, CreatedAt: time.Now().UTC(), Cwd: o.cfg.Cwd},
					session.Entry{Message: &callMsg})
				if err == nil {
					o.pub.emit("shell", parent.sessionID, event.RunStart{Transcript: parent.transcript, Model: o.cfg.Binding.String(), Cwd: o.cfg.Cwd})
				}
				return err
			}()
		})
		return setErr
	}

	ans := o.task(ctx, parent, call, opts.Args)
	res := TaskResult{Content: ans.Content, IsError: ans.IsError, Status: ans.Record.Status, Record: ans.Record}
	if w != nil {
		res.ParentSession = parent.sessionID
		rec, _ := json.Marshal(ans.Record)
		content, _ := o.redact.Redact(ans.Content)
		m := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: call.id, ToolName: "task", Content: content, IsError: ans.IsError}}, TaskRecord: rec}
		if l.Check() == nil {
			if _, err := w.AppendMessage(m); err != nil {
				o.cfg.Logger.Error("Shell session write failed", "err", err)
			}
		}
	}
	end := event.RunEnd{Status: res.Status, Text: ans.Result.Text, Turns: ans.Result.Turns, Usage: o.usage.snapshot(), Rejected: int(o.pub.rejected.Load())}
	if res.IsError {
		end.Reason = res.Content
	}
	if w != nil {
		end.Transcript = parent.transcript
	}
	o.pub.emit("shell", res.ParentSession, end)
	return res, nil
}

// findOwner finds the session that owns childID: the named parent, or the
// most recent session of this cwd with a transcript for that child. A
// session whose children directory holds the child in any form (even one
// that cannot be resumed) owns it, so that the resume names the real
// problem (malformed, not-owned, …) rather than not-found.
func (o *Orchestrator) findOwner(childID, parentID string) (path, id string, err error) {
	if parentID != "" {
		p, err := o.findMain(parentID)
		if err != nil {
			return "", "", fmt.Errorf("cannot resume child %q: --parent %s: %v", childID, parentID, err)
		}
		return p, parentID, nil
	}
	sessions, err := session.ListSessions(o.cfg.InkHome, o.cfg.Cwd)
	if err != nil {
		return "", "", fmt.Errorf("cannot resume child %q: %v", childID, err)
	}
	var known []string
	for _, s := range sessions {
		if s.ID == "" {
			continue
		}
		_, err := session.FindChild(s.Path, s.ID, childID)
		var le *session.LookupError
		if err == nil || !errors.As(err, &le) || le.Code != session.CodeNotFound {
			return s.Path, s.ID, nil
		}
		for _, k := range le.Children {
			if k.ID == "" || k.Problem != "" {
				continue
			}
			st := k.LastStatus
			if st == "" {
				st = "never ran"
			}
			known = append(known, fmt.Sprintf("%s (%s, session %s)", k.ID, st, s.ID))
		}
	}
	msg := fmt.Sprintf("cannot resume child %q: not-found: no session of %s has a child with that id", childID, o.cfg.Cwd)
	switch {
	case len(known) > 0:
		msg += ". Children of this directory's sessions: " + strings.Join(known, ", ")
	case len(sessions) == 0:
		msg += " (this directory has no sessions)"
	default:
		msg += " (its sessions have no children)"
	}
	return "", "", fmt.Errorf("%s; run ink from the directory the child was started in, or name its session with --parent (see `ink sessions ls`)", msg)
}
