package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/session"
)

// TaskOptions are the inputs of `ink task`.
type TaskOptions struct {
	Args TaskArgs
	// Parent names the session that owns the child to resume; default: the
	// most recent session of this cwd that owns it.
	Parent string
	// Found, when the caller already looked the child up (FindResumed,
	// with the same Resume and Parent), is what it found; the supervisor
	// then does not look again. The worker still checks, under the lease,
	// that the transcript's header is the one found.
	Found *Resumed
}

// TaskResult is how one task call ended (`ink task`, or one task of a
// front-end call).
type TaskResult struct {
	Content string // the composed task result, as a parent model would see it
	IsError bool
	Status  Status // the TaskRecord status (rejected included); StatusStarted for a background start
	Record  session.TaskRecord
	// ParentSession is the shell session this command recorded its task
	// call in ("" when it was refused before writing anything).
	ParentSession string
	// Text is the child's final text of this attempt; Turns its turns.
	Text  string
	Turns int
	// Answer is the child's answer as Content shows it, first thing in it
	// (Text, cut to its last 50KB with a note when longer; "" when Content
	// carries no answer); Notes is the rest of Content: what went wrong,
	// what became of its worktree, its usage, how to continue it. Content
	// is Answer, a blank line, then Notes (or Notes alone).
	Answer, Notes string
	// ChildID is the child's id, also for a background start, whose
	// Record is written only once it ends ("" for a call refused before a
	// child existed); Agent its agent profile.
	ChildID, Agent string
}

// ErrBadInput marks errors caused by the user's input (exit code 2).
var ErrBadInput = errors.New("bad input")

// Task runs one child from the shell, with no main agent, through a
// shell-like Parent: a new shell session holds this command's task call
// and its result, under that session's lease, created only once the child
// is launched, so a rejected task leaves no file behind. A resumed child
// lives in the session that owns it (found with --parent, or the newest
// owner in this directory), but its resume is recorded here, never in the
// owner's transcript, which only the owner's own worker writes.
func (o *Orchestrator) Task(ctx context.Context, opts TaskOptions) (TaskResult, error) {
	if opts.Args.Resume == nil && opts.Parent != "" {
		return TaskResult{}, fmt.Errorf("%w: --parent only goes with --resume", ErrBadInput)
	}
	if w := opts.Args.Worktree; w == nil || !*w {
		// The child's sandbox decision needs it; it runs beside the
		// shell session's creation and the child's worker start.
		o.probeAhead(o.cfg.Cwd)
	}
	p := o.NewParent(ParentOptions{Label: "shell", Shell: true})
	defer p.Close(nil)
	if id := opts.Args.Resume; id != nil {
		found, err := opts.Found, error(nil)
		if found == nil || found.Child.Header.ID != *id {
			var r Resumed
			r, err = locate(o.store, o.cfg.InkHome, o.cfg.Cwd, *id, opts.Parent)
			found = &r
		}
		if found.OwnerPath == "" {
			res := TaskResult{Status: StatusRejected, Content: ownerRefusal(*id, err), IsError: true}
			o.pub.emit("shell/1", "", event.TaskEnd{Status: StatusRejected, Reason: res.Content})
			o.pub.emit("shell", "", event.RunEnd{Status: res.Status, Reason: res.Content, Rejected: 1})
			return res, nil
		}
		// A child found but refused is refused again by the resume itself,
		// in the words of every resume's refusal.
		p.ar.useOwner(*found, err == nil)
	}
	out := p.Task(ctx, Call{Tasks: []TaskArgs{opts.Args}})
	res := out.Tasks[0]
	end := event.RunEnd{Status: res.Status, Text: res.Text, Turns: res.Turns, Usage: o.usage.snapshot(), Rejected: int(o.pub.rejected.Load())}
	if res.IsError {
		end.Reason = res.Content
	}
	if res.ParentSession != "" {
		end.Transcript = p.ar.transcript
	}
	o.pub.emit("shell", res.ParentSession, end)
	return res, nil
}
