package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/taskargs"
)

// ParentOptions configure a shell-like parent (NewParent).
type ParentOptions struct {
	// Label is the parent's display label and the model name its recorded
	// calls carry: "shell" for `ink task`, "mcp" for an MCP connection.
	Label string
	// Shell gives results hints for a person at a shell
	// (`ink task --resume ID`) rather than for a model (task({resume: …})).
	Shell bool
}

// Parent is a shell-like parent: the parent of children started by a front
// end rather than by an agent — `ink task` on the command line, or one
// connection of `ink mcp`. It owns a shell session, a transcript that only
// it writes, under that session's lease, created when its first child
// launches (a call rejected before that leaves no file). The session
// records every task call and its result, and every task_wait or
// task_cancel that collects background children; the children's own
// transcripts live under it. Children that continue a child of another
// session are looked up there, but recorded here.
//
// A Parent is safe for concurrent use: calls run at once, in the window of
// the orchestrator. Close ends it: it stops what still runs, waits for it
// and releases the session.
type Parent struct {
	o  *Orchestrator
	ar *agentRun
	// ctx is the context of every child; Close cancels it with its cause.
	ctx  context.Context
	stop context.CancelCauseFunc

	mu      sync.Mutex
	w       SessionWriter // the session, once a child launched
	openErr error
	opened  bool
	front   map[string]*frontCall // by call id
	closed  bool
	calls   sync.WaitGroup

	closeOnce sync.Once
	closeDone chan struct{}
}

// frontCall is one call of the front end as its session records it.
type frontCall struct {
	id      string
	tool    string
	args    json.RawMessage
	written bool
}

// Call is one task call of a front end: one child, or several run at once
// (a batch), each answered in order; in the foreground (the call returns
// once they all ended) or the background (it returns their ids at once).
type Call struct {
	Tasks      []TaskArgs
	Background bool
	// Batch records the call as a tasks list even when it holds one task.
	Batch bool
	// Progress, when set, is called with a foreground child's status each
	// time it changes (turn, tool, tokens, start, end). It is called from
	// the supervisor's goroutines, concurrently for different children, and
	// must not block.
	Progress func(ChildStatus)
}

// CallResult answers one front-end call.
type CallResult struct {
	// Content is what the caller reads: for one task, exactly what ink's
	// own task tool returns.
	Content string
	IsError bool
	// Tasks are the task results in order (task), or those of the children
	// that ended (task_wait, task_cancel).
	Tasks []TaskResult
	// Children are the children reported on (task_status) or still
	// running when a wait ended.
	Children []ChildStatus
	// Summary is the first line of Content, before any child's result:
	// what a batch or a wait came to ("" for one task). Next, when a wait
	// ended with children still running, says why and what to do.
	Summary, Next string
}

// NewParent returns a shell-like parent in the orchestrator's cwd, with the
// system prompt a main agent would have, so that its children look like
// those of `ink run`. Close it when done.
func (o *Orchestrator) NewParent(opts ParentOptions) *Parent {
	label := opts.Label
	if label == "" {
		label = "shell"
	}
	tools := o.mainTools()
	id := session.NewID()
	ar := &agentRun{
		label: label, sessionID: id, transcript: session.MainPath(o.cfg.InkHome, o.cfg.Cwd, id),
		depth: 0, binding: o.cfg.Binding, tools: tools, cwd: o.cfg.Cwd, root: o.cfg.Cwd, shell: opts.Shell,
	}
	files := agents.ProjectContext(o.cfg.Cwd)
	ar.base = promptBase{cwd: o.cfg.Cwd, date: time.Now(), set: o.profileSet(), files: files}
	ar.system = ar.base.system(tools)
	ar.files = contextRefs(files)
	ctx, stop := context.WithCancelCause(context.Background())
	p := &Parent{o: o, ar: ar, ctx: ctx, stop: stop, front: map[string]*frontCall{}, closeDone: make(chan struct{})}
	ar.onLaunch = p.onLaunch
	ar.launchReady = p.syncCalls
	return p
}

// SessionID is the id of the parent's session (its file exists once a
// child launched).
func (p *Parent) SessionID() string { return p.ar.sessionID }

// Transcript is the session's path, or "" while no child launched.
func (p *Parent) Transcript() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return ""
	}
	return p.ar.transcript
}

// ErrParentClosed is the error of a call made after Close.
var ErrParentClosed = errors.New("this session has ended; start a new one")

// begin counts a front-end call in, or refuses it after Close.
func (p *Parent) begin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrParentClosed
	}
	p.calls.Add(1)
	return nil
}

// Task runs one front-end task call and returns its result. In the
// foreground its children run under ctx (cancelling it aborts them) and
// the call returns once all ended; in the background they run under the
// parent and the call returns their ids at once.
func (p *Parent) Task(ctx context.Context, c Call) CallResult {
	if len(c.Tasks) == 0 {
		return CallResult{Content: "task: no task given; give prompt, or tasks with at least one item", IsError: true}
	}
	if err := p.begin(); err != nil {
		return CallResult{Content: "task: " + err.Error(), IsError: true}
	}
	defer p.calls.Done()
	f := &frontCall{id: fmt.Sprintf("%s-%s", p.ar.label, session.NewID()), tool: "task", args: c.json()}
	p.mu.Lock()
	p.front[f.id] = f
	p.mu.Unlock()

	runCtx, stop := joinCancel(ctx, p.ctx)
	defer stop()
	answers := make([]taskAnswer, len(c.Tasks))
	calls := make([]taskCall, len(c.Tasks))
	for i := range c.Tasks {
		calls[i] = taskCall{id: f.id, label: p.ar.nextChildLabel(), ticket: p.o.pub.ticket()}
		if c.Progress != nil && !c.Background {
			calls[i].registered = func(t *trackedChild) { t.watch(c.Progress) }
		}
	}
	var wg sync.WaitGroup
	for i, args := range c.Tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner, refused := p.ownerFor(args)
			switch {
			case refused != "":
				answers[i] = p.o.reject(p.ar, calls[i], args, refused)
			case c.Background:
				answers[i] = p.o.startBackground(p.ctx, owner, calls[i], args)
			default:
				answers[i] = p.o.task(runCtx, owner, calls[i], args)
			}
		}()
	}
	wg.Wait()

	res := CallResult{}
	for _, a := range answers {
		tr := a.result()
		if c.Background && !a.IsError {
			tr.Status = StatusStarted
		}
		res.Tasks = append(res.Tasks, tr)
	}
	if len(answers) == 1 && !c.Batch {
		res.Content, res.IsError = answers[0].Content, answers[0].IsError
	} else {
		res.Content, res.IsError = batchContent(answers, calls, c.Background)
		res.Summary = firstLine(res.Content)
	}
	var recs []session.TaskRecord
	for _, a := range answers {
		if a.Record.Version != 0 {
			recs = append(recs, a.Record)
		}
	}
	if p.recordResult(f, res.Content, res.IsError, recs, len(answers) == 1 && !c.Batch) {
		for i := range res.Tasks {
			res.Tasks[i].ParentSession = p.ar.sessionID
		}
	}
	return res
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// json is the call's arguments as its session records them.
func (c Call) json() json.RawMessage {
	if len(c.Tasks) == 1 && !c.Batch {
		return c.Tasks[0].JSON()
	}
	items := make([]json.RawMessage, len(c.Tasks))
	for i, t := range c.Tasks {
		t.Background = false
		items[i] = t.JSON()
	}
	b, _ := json.Marshal(struct {
		Tasks      []json.RawMessage `json:"tasks"`
		Background bool              `json:"background,omitempty"`
	}{items, c.Background})
	return b
}

// batchContent renders the answers of a batch in order, each under a
// header naming its task, child and status.
func batchContent(answers []taskAnswer, calls []taskCall, background bool) (string, bool) {
	var b strings.Builder
	failed := 0
	for _, a := range answers {
		if a.IsError {
			failed++
		}
	}
	verb := "ran at once; their results follow in order"
	if background {
		verb = "were started in the background; collect them with task_wait({})"
	}
	fmt.Fprintf(&b, "task: %d tasks %s", len(answers), verb)
	if failed > 0 {
		fmt.Fprintf(&b, " (%d failed or were refused)", failed)
	}
	b.WriteString(".")
	for i, a := range answers {
		status := a.Record.Status
		switch {
		case background && !a.IsError:
			status = StatusStarted
		case status == "":
			status = session.StatusFailed
		}
		child := ""
		if a.Record.ChildID != "" {
			child = " child " + a.Record.ChildID
		}
		fmt.Fprintf(&b, "\n\n── task %d of %d (%s%s): %s ──\n%s", i+1, len(answers), calls[i].label, child, status, a.Content)
	}
	return b.String(), failed == len(answers)
}

// ownerFor is the parent a task call runs under: this one, or for a resume
// of a child this session did not start, a view whose children are those
// of the session that owns it (the newest of this directory), so that it
// continues from its own transcript while this session records the call.
// refused explains a child found nowhere.
func (p *Parent) ownerFor(args TaskArgs) (*agentRun, string) {
	if args.Resume == nil || p.ar.childrenOf != "" {
		return p.ar, ""
	}
	id := *args.Resume
	if p.ar.registry().get(id) != nil {
		return p.ar, ""
	}
	if p.o.store.Exists(session.ChildPath(p.ar.transcript, id)) {
		return p.ar, ""
	}
	found, err := locate(p.o.store, p.o.cfg.InkHome, p.o.cfg.Cwd, id, "")
	if found.OwnerPath == "" {
		return nil, ownerRefusal(id, err)
	}
	if found.OwnerPath == p.ar.transcript {
		return p.ar, ""
	}
	return p.ar.withOwner(found, err == nil), ""
}

// onLaunch runs before each child launches: it creates the session on the
// first launch, then records the front-end call of this child (once per
// call, however many children it holds). syncCalls makes it durable before
// the child is sent its attempt.
func (p *Parent) onLaunch(call taskCall, _ TaskArgs) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.front[call.id]
	if !p.opened {
		return p.openLocked(f)
	}
	if p.openErr != nil {
		return p.openErr
	}
	if f == nil || f.written {
		return nil
	}
	return p.writeCallLocked(f)
}

// syncCalls makes the session's calls durable: it runs while a child's
// worker starts and before the child is sent its attempt, since a child
// whose start survived a crash of the machine must find its call in this
// session, or nothing would answer for it.
func (p *Parent) syncCalls() error {
	p.mu.Lock()
	w := p.w
	p.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Sync()
}

// openLocked creates the session under its lease, once, with the call of
// its first child (f, unless nil) as its first entry: the session, its
// lease record and that call become durable together, as creating the
// transcript syncs the directories it made, the record and then the
// directory that holds them, in the background, waited for before the
// child is sent its attempt (syncCalls). p.mu is held.
func (p *Parent) openLocked(f *frontCall) error {
	p.opened = true
	p.openErr = func() error {
		var first []session.Entry
		if f != nil && !f.written {
			m := p.callMessage(f)
			first = append(first, session.Entry{Message: &m})
		}
		owner := lease.Owner{AttemptID: session.NewID(), Agent: p.ar.label, SessionID: p.ar.sessionID}
		h := session.Header{Type: "session", Version: session.Version, ID: p.ar.sessionID, CreatedAt: time.Now().UTC(), Cwd: p.o.cfg.Cwd}
		w, err := p.o.store.CreateSession(p.ar.transcript, owner, h, first...)
		if err != nil {
			return err
		}
		if len(first) > 0 {
			f.written = true
		}
		p.w = w
		p.o.pub.emit(p.ar.label, p.ar.sessionID, event.RunStart{Transcript: p.ar.transcript, Model: p.o.cfg.Binding.String(), Cwd: p.o.cfg.Cwd, MaxParallel: p.o.cfg.MaxParallel, MaxDepth: p.o.cfg.MaxDepth})
		return nil
	}()
	return p.openErr
}

// writeCallLocked records a front-end call as an assistant message of the
// session; p.mu is held and the session open.
func (p *Parent) writeCallLocked(f *frontCall) error {
	if err := p.w.AppendMessage(p.callMessage(f)); err != nil {
		return err
	}
	f.written = true
	return nil
}

// callMessage is a front-end call as the session records it: an assistant
// message holding the call, its arguments redacted.
func (p *Parent) callMessage(f *frontCall) model.Message {
	redacted, _ := p.o.redact.Redact(string(f.args))
	return model.Message{Role: model.RoleAssistant, Model: p.ar.label, ToolCalls: []model.ToolCall{{ID: f.id, Name: f.tool, Args: json.RawMessage(redacted)}}}
}

// recordResult records the result of a front-end call whose call message
// is in the session, with the records it carries: one task's on its own
// (single), or a list. It reports whether the result was written.
func (p *Parent) recordResult(f *frontCall, content string, isErr bool, recs []session.TaskRecord, single bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.front, f.id)
	if !f.written || p.w == nil {
		return false
	}
	redacted, _ := p.o.redact.Redact(content)
	m := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: f.id, ToolName: f.tool, Content: redacted, IsError: isErr}}}
	if single && len(recs) == 1 {
		m.TaskRecord, _ = json.Marshal(recs[0])
	} else {
		for _, r := range recs {
			raw, _ := json.Marshal(r)
			m.TaskRecords = append(m.TaskRecords, raw)
		}
	}
	if err := p.w.AppendMessage(m); err != nil {
		p.o.cfg.Logger.Error("Shell session write failed", "session", p.ar.sessionID, "err", err)
		return false
	}
	return true
}

// recordControl records a task_wait or task_cancel call that collected
// records, with its result, when the session exists.
func (p *Parent) recordControl(tool string, args any, ans controlAnswer) {
	if len(ans.Records) == 0 {
		return
	}
	raw, _ := json.Marshal(args)
	f := &frontCall{id: fmt.Sprintf("%s-%s", p.ar.label, session.NewID()), tool: tool, args: raw}
	p.mu.Lock()
	if p.w == nil {
		p.mu.Unlock()
		return
	}
	err := p.writeCallLocked(f)
	p.mu.Unlock()
	if err != nil {
		p.o.cfg.Logger.Error("Shell session write failed", "session", p.ar.sessionID, "err", err)
		return
	}
	p.recordResult(f, ans.Content, ans.IsError, ans.Records, false)
}

// Status reports on the named children of this session, or on all.
func (p *Parent) Status(a taskargs.StatusArgs) CallResult {
	ans := p.o.childrenStatus(p.ar, a.IDs)
	return CallResult{Content: ans.Content, IsError: ans.IsError, Children: ans.Children, Summary: firstLine(ans.Content)}
}

// Wait waits for background children (task_wait) and returns the results
// of those that ended, in call order; the records it collects are written
// to the session. Cancelling ctx ends the wait, not the children.
func (p *Parent) Wait(ctx context.Context, a taskargs.WaitArgs) CallResult {
	if err := p.begin(); err != nil {
		return CallResult{Content: "task_wait: " + err.Error(), IsError: true}
	}
	defer p.calls.Done()
	waitCtx, stop := joinCancel(ctx, p.ctx)
	defer stop()
	ans := p.o.waitChildren(waitCtx, p.ar, a)
	p.recordControl(taskargs.WaitTool, a, ans)
	return CallResult{Content: ans.Content, IsError: ans.IsError, Tasks: ans.Ended, Children: ans.Children, Summary: ans.Summary, Next: ans.Next}
}

// Cancel stops one child (task_cancel) and returns its result; it stays
// resumable.
func (p *Parent) Cancel(ctx context.Context, a taskargs.CancelArgs) CallResult {
	if err := p.begin(); err != nil {
		return CallResult{Content: "task_cancel: " + err.Error(), IsError: true}
	}
	defer p.calls.Done()
	ans := p.o.cancelChild(ctx, p.ar, a.ID)
	p.recordControl(taskargs.CancelTool, a, ans)
	return CallResult{Content: ans.Content, IsError: ans.IsError, Tasks: ans.Ended, Children: ans.Children, Summary: ans.Summary, Next: ans.Next}
}

// Close ends the parent: it refuses new calls, stops every child still
// running with cause (ErrHostLost: they record interrupted / host lost and
// stay resumable; nil: aborted), waits for them and for the calls in
// flight, and releases the session. It is idempotent and safe to call
// from any goroutine; every caller returns once the parent is closed.
func (p *Parent) Close(cause error) {
	p.closeOnce.Do(func() {
		defer close(p.closeDone)
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		if cause == nil {
			cause = StopCause(StatusAborted, "the session ended")
		}
		p.stop(cause)
		p.calls.Wait()
		p.ar.registry().wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.w != nil {
			if err := p.w.Close(); err != nil {
				p.o.cfg.Logger.Warn("Shell session not closed cleanly", "session", p.ar.sessionID, "err", err)
			}
		}
	})
	<-p.closeDone
}

// joinCancel returns a context done when ctx or also is, with the cause of
// whichever ended first. stop releases it.
func joinCancel(ctx, also context.Context) (context.Context, func()) {
	out, cancel := context.WithCancelCause(ctx)
	release := context.AfterFunc(also, func() { cancel(context.Cause(also)) })
	return out, func() { release(); cancel(nil) }
}
