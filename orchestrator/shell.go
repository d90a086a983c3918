package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TaskOptions are the inputs of `ink task`.
type TaskOptions struct {
	Args TaskArgs
	// Parent names the shell session that owns the child to resume;
	// default: the most recent session of this cwd that owns it.
	Parent string
}

// TaskResult is how `ink task` ended.
type TaskResult struct {
	Content string // the composed task result, as a parent model would see it
	IsError bool
	Status  string // the TaskRecord status (rejected included)
	Record  session.TaskRecord
	// ParentSession is the shell session that owns the child.
	ParentSession string
}

// ErrBadInput marks errors caused by the user's input (exit code 2).
var ErrBadInput = errors.New("bad input")

// Task runs one child from the shell, with no main agent. The orchestrator
// writes the parent: a shell session holding the task call and its result,
// under that session's lease, and only once the child is launched, so a
// rejected task leaves no file behind.
func (o *Orchestrator) Task(ctx context.Context, opts TaskOptions) (TaskResult, error) {
	tools := o.mainTools()
	parent := &agentRun{label: "shell", depth: 0, binding: o.cfg.Binding, tools: tools, cwd: o.cfg.Cwd, root: o.cfg.Cwd}
	// The shell parent's system prompt is what a main agent would have, so
	// children launched from the shell and from `ink run` look alike.
	files := projectContext(o.cfg.Cwd)
	parent.system = mainSystem(o.cfg.Cwd, time.Now(), tools, o.profileSet(), files...)
	parent.files = contextRefs(files)
	var existing bool
	if opts.Args.Resume != nil {
		path, id, err := o.findOwner(*opts.Args.Resume, opts.Parent)
		if err != nil {
			res := TaskResult{Status: "rejected", Content: err.Error() + "\nStart a new task instead.", IsError: true}
			o.emit("shell", "", "run.end", map[string]any{"status": res.Status, "reason": res.Content, "text": ""})
			return res, nil
		}
		parent.sessionID, parent.transcript, existing = id, path, true
	} else {
		if opts.Parent != "" {
			return TaskResult{}, fmt.Errorf("%w: --parent only goes with --resume", ErrBadInput)
		}
		id := session.NewID()
		parent.sessionID, parent.transcript = id, session.MainPath(o.cfg.InkHome, o.cfg.Cwd, id)
	}

	callID := "shell-" + session.NewID()
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
				var err error
				if !existing {
					if err := mkdirFor(parent.transcript); err != nil {
						return err
					}
				}
				l, err = lease.Acquire(parent.transcript, lease.Owner{AttemptID: callID, Agent: "shell", SessionID: parent.sessionID})
				if err != nil {
					if existing && errors.Is(err, lease.ErrBusy) {
						return fmt.Errorf("cannot resume child %q: still-running: the session that owns it is busy, another ink is continuing it: %w. Start a new task instead.", *opts.Args.Resume, err)
					}
					return err
				}
				l.StartHeartbeat(o.cfg.HeartbeatInterval)
				if existing {
					w, err = session.OpenWriter(parent.transcript)
				} else {
					w, err = session.Create(parent.transcript, session.Header{Type: "session", Version: session.Version, ID: parent.sessionID, CreatedAt: time.Now().UTC(), Cwd: o.cfg.Cwd})
				}
				if err != nil {
					return err
				}
				args, _ := json.Marshal(opts.Args)
				redacted, _ := o.redact.Redact(string(args))
				_, err = w.AppendMessage(model.Message{Role: model.RoleAssistant, Model: "shell", ToolCalls: []model.ToolCall{{ID: callID, Name: "task", Args: json.RawMessage(redacted)}}})
				return err
			}()
		})
		return setErr
	}

	o.emit("shell", parent.sessionID, "run.start", map[string]any{"transcript": parent.transcript, "model": o.cfg.Binding.String(), "cwd": o.cfg.Cwd})
	ans := o.task(ctx, parent, callID, opts.Args, parent.nextChildLabel())
	if w != nil {
		rec, _ := json.Marshal(ans.Record)
		content, _ := o.redact.Redact(ans.Content)
		m := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: callID, ToolName: "task", Content: content, IsError: ans.IsError}}, TaskRecord: rec}
		if l.Check() == nil {
			if _, err := w.AppendMessage(m); err != nil {
				o.cfg.Logger.Error("Shell session write failed", "err", err)
			}
		}
	}
	res := TaskResult{Content: ans.Content, IsError: ans.IsError, Status: ans.Record.Status, Record: ans.Record, ParentSession: parent.sessionID}
	end := map[string]any{"status": res.Status, "text": ans.Result.Text, "usage": o.usage.snapshot()}
	if res.IsError {
		end["reason"] = res.Content
	}
	o.emit("shell", parent.sessionID, "run.end", end)
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
