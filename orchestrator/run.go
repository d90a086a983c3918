package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// MainTools are the tools of a main agent, in the order shown to a model.
var MainTools = []string{"read", "grep", "find", "ls", "edit", "write", "bash", "task"}

// RunOptions are the inputs of `ink run`.
type RunOptions struct {
	Prompt string
	// SessionID continues an existing main session of this cwd.
	SessionID string
}

// RunResult is how `ink run` ended.
type RunResult struct {
	Status     Status // completed | aborted | timeout | crash | interrupted | refused
	Reason     string
	Text       string // the main agent's final text of this attempt
	SessionID  string
	Transcript string
	Turns      int
	Usage      model.Usage            // main agent
	PerAgent   map[string]model.Usage // every agent by label, main included
}

// mainTools is the main agent's pool for the configured depth.
func (o *Orchestrator) mainTools() []string {
	if o.cfg.MaxDepth >= 1 {
		return MainTools
	}
	return MainTools[:len(MainTools)-1]
}

// Run runs the main agent (depth 0) as a worker and supervises its children
// until it finishes. ctx cancellation cancels every agent (Ctrl-C once);
// KillAll kills them (twice). A problem with the options (an unknown or
// foreign session) is an error and nothing is written.
func (o *Orchestrator) Run(ctx context.Context, opts RunOptions) (RunResult, error) {
	defer o.Close() // the warm pool ends with the run
	tools := o.mainTools()
	files := agents.ProjectContext(o.cfg.Cwd)
	base := promptBase{cwd: o.cfg.Cwd, date: time.Now(), set: o.profileSet(), files: files}
	system := base.system(tools)
	ar := &agentRun{label: "main", depth: 0, binding: o.cfg.Binding, system: system, base: base, files: contextRefs(files), tools: tools, cwd: o.cfg.Cwd, root: o.cfg.Cwd}
	spec := ipc.AttemptSpec{
		InkHome: o.cfg.InkHome, AttemptID: session.NewID(), Label: "main",
		Binding: o.cfg.Binding, System: system, Tools: tools, Cwd: o.cfg.Cwd, Root: o.cfg.Cwd,
		Prompt: opts.Prompt, HeartbeatInterval: o.cfg.HeartbeatInterval,
	}
	box, err := o.sandboxFor("main", "", tools, nil, o.cfg.Cwd)
	if err != nil {
		return RunResult{}, err
	}
	o.limits(&spec)
	box.apply(&spec)
	if opts.SessionID != "" {
		path, err := o.findMain(opts.SessionID)
		if err != nil {
			return RunResult{}, err
		}
		tr, err := o.store.Open(path, true)
		if err != nil {
			return RunResult{}, fmt.Errorf("continue session %s: %w", opts.SessionID, err)
		}
		if tr.Header.Parent != "" || tr.Header.Launch != nil {
			return RunResult{}, fmt.Errorf("session %s is a child session; continue it with `ink task --resume %s \"…\"`", opts.SessionID, opts.SessionID)
		}
		if tr.Header.Cwd != o.cfg.Cwd {
			return RunResult{}, fmt.Errorf("session %s belongs to %s; run ink from there (or pass --cwd %s)", opts.SessionID, tr.Header.Cwd, tr.Header.Cwd)
		}
		hdr, _ := json.Marshal(tr.Header)
		ar.sessionID, ar.transcript = tr.Header.ID, path
		spec.SessionID, spec.Transcript, spec.ExpectHeader, spec.Repair = tr.Header.ID, path, hdr, true
		spec.Answers = o.childAnswers(ctx, tr)
		o.recoverBackground(tr, ar)
	} else {
		id := session.NewID()
		ar.sessionID, ar.transcript = id, session.MainPath(o.cfg.InkHome, o.cfg.Cwd, id)
		spec.SessionID, spec.Transcript = id, ar.transcript
		spec.Create = &session.Header{Type: "session", Version: session.Version, ID: id, CreatedAt: time.Now().UTC(), Cwd: o.cfg.Cwd}
	}
	o.pub.emit("main", ar.sessionID, event.RunStart{
		Transcript: ar.transcript, Model: o.cfg.Binding.String(), Cwd: o.cfg.Cwd,
		Continued: opts.SessionID != "", MaxParallel: o.cfg.MaxParallel, MaxDepth: o.cfg.MaxDepth,
	})
	res := o.supervise(ctx, ar, spec, 0, func(pid int) {
		o.pub.emit("main", ar.sessionID, event.WorkerStart{Pid: pid, AttemptID: spec.AttemptID})
	})
	res = o.fromTranscript(res, ar.transcript)
	o.usage.add("main", res.Usage)
	out := RunResult{
		Status: res.Status, Reason: res.Reason, Text: res.Text, SessionID: ar.sessionID,
		Transcript: ar.transcript, Turns: res.Turns, Usage: res.Usage, PerAgent: o.usage.snapshot(),
	}
	o.pub.emit("main", ar.sessionID, event.RunEnd{
		Status: out.Status, Reason: out.Reason, Text: out.Text, Turns: out.Turns,
		Usage: out.PerAgent, Transcript: out.Transcript, Rejected: int(o.pub.rejected.Load()), Budget: o.budget.report(),
	})
	return out, nil
}

// findMain locates a main session by id, in this cwd's directory first.
func (o *Orchestrator) findMain(id string) (string, error) {
	return findMain(o.store, o.cfg.InkHome, o.cfg.Cwd, id)
}

// usageOf returns u or the zero usage.
func usageOf(u *model.Usage) model.Usage {
	if u == nil {
		return model.Usage{}
	}
	return *u
}
