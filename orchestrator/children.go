package orchestrator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// ErrHostLost, as the cause of a cancelled context, stops the children
// under it as if their supervisor had died: each records interrupted /
// "host lost" and stays resumable. `ink mcp` uses it when its client goes
// away.
var ErrHostLost = errors.New("the client went away (host lost)")

// stopCause is the cause of a cancelled context that says how the children
// under it end.
type stopCause struct {
	status Status
	reason string
}

func (c *stopCause) Error() string { return c.reason }

// StopCause returns an error that, as the cause of a cancelled context,
// ends the children under it with status (StatusAborted or StatusTimeout)
// and reason, e.g. "cancelled by the MCP client".
func StopCause(status Status, reason string) error {
	return &stopCause{status: status, reason: reason}
}

// cancelOutcome is how a worker whose ctx ended is asked to stop: host
// lost, a stop cause's status and reason, or aborted by the user.
func cancelOutcome(ctx context.Context) (status Status, reason string) {
	cause := context.Cause(ctx)
	var sc *stopCause
	switch {
	case errors.Is(cause, ErrHostLost):
		return StatusInterrupted, HostLost
	case errors.As(cause, &sc):
		return sc.status, sc.reason
	}
	return StatusAborted, userCancel
}

// HostLost is the reason recorded by a child whose supervisor or client
// went away.
const HostLost = ipc.HostLost

// States of a child in its parent's registry: starting (its worker is
// being started), queued (waiting for a slot in the window), running, and
// ended.
const (
	ChildStarting = "starting"
	ChildQueued   = "queued"
	ChildRunning  = "running"
	ChildEnded    = "ended"
)

// ChildStatus is one child as task_status reports it.
type ChildStatus struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Agent string `json:"agent,omitempty"`
	// State is ChildStarting, ChildQueued, ChildRunning or ChildEnded; Status is the
	// outcome once ended (completed, aborted, timeout, crash, interrupted,
	// rejected).
	State      string      `json:"state"`
	Status     Status      `json:"status,omitempty"`
	Background bool        `json:"background"`
	ElapsedMs  int64       `json:"elapsedMs"`
	Turns      int         `json:"turns"`
	Usage      model.Usage `json:"usage"`
	// Tool is the tool the child is running now.
	Tool     string `json:"tool,omitempty"`
	Worktree string `json:"worktree,omitempty"`
	Pid      int    `json:"pid,omitempty"`
	// Collected says the child's result was handed to its parent.
	Collected bool   `json:"collected,omitempty"`
	Prompt    string `json:"prompt"`
}

// trackedChild is one child in its parent's registry: who it is, live
// progress fed from its events, and once it ended the answer its task call
// got. It is safe for concurrent use.
type trackedChild struct {
	id, label, agent, prompt, callID, worktree string
	background                                 bool
	// ticket is the call's place in call order.
	ticket uint64
	// cancel stops the child (task_cancel) with its cause.
	cancel context.CancelCauseFunc
	// done is closed once the child ended and its answer is set.
	done chan struct{}

	mu        sync.Mutex
	start     time.Time
	state     string
	pid       int
	turns     int
	usage     model.Usage
	tool      string
	toolID    string
	ended     time.Time
	answer    taskAnswer
	collected bool
	watchers  []func(ChildStatus)
}

// watch calls f with the child's status whenever it changes (a turn, a
// tool, tokens, its start and end). f runs on the supervisor's goroutines,
// never under the child's lock, and must not block.
func (t *trackedChild) watch(f func(ChildStatus)) {
	t.mu.Lock()
	t.watchers = append(t.watchers, f)
	t.mu.Unlock()
	f(t.status())
}

// changed tells the watchers.
func (t *trackedChild) changed() {
	t.mu.Lock()
	ws := append([]func(ChildStatus){}, t.watchers...)
	t.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	st := t.status()
	for _, f := range ws {
		f(st)
	}
}

// queued records that the child waits for a slot in the window.
func (t *trackedChild) queued() {
	t.mu.Lock()
	t.state = ChildQueued
	t.mu.Unlock()
	t.changed()
}

// running records the child's worker start.
func (t *trackedChild) running(pid int) {
	t.mu.Lock()
	t.state, t.pid, t.start = ChildRunning, pid, time.Now()
	t.mu.Unlock()
	t.changed()
}

// observe feeds one of the child's own events into its live status.
func (t *trackedChild) observe(body event.Event) {
	t.mu.Lock()
	switch b := body.(type) {
	case event.TurnStart:
		t.turns = b.Turn
	case event.ToolStart:
		t.tool, t.toolID = b.Name, b.ID
	case event.ToolEnd:
		if b.ID == t.toolID {
			t.tool, t.toolID = "", ""
		}
	case event.Message:
		if u := b.Message.Usage; u != nil && b.Message.Role == model.RoleAssistant {
			t.usage = t.usage.Add(*u)
		} else {
			t.mu.Unlock()
			return
		}
	default:
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.changed()
}

// end records the child's answer and wakes its waiters. A child that runs
// in the foreground is collected by its own task call.
func (t *trackedChild) end(ans taskAnswer) {
	t.mu.Lock()
	t.state, t.ended, t.answer = ChildEnded, time.Now(), ans
	t.tool, t.toolID = "", ""
	if ans.Result.Turns > 0 {
		t.turns = ans.Result.Turns
	}
	if u := ans.Result.Usage; u != (model.Usage{}) {
		t.usage = u
	}
	if !t.background {
		t.collected = true
	}
	t.mu.Unlock()
	close(t.done)
	t.changed()
}

// collect hands out the child's TaskRecord the first time it is asked for
// after the child ended: every record lands on exactly one result.
func (t *trackedChild) collect() (session.TaskRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != ChildEnded || t.collected {
		return session.TaskRecord{}, false
	}
	t.collected = true
	return t.answer.Record, true
}

// ended reports whether the child ended, and its answer if so.
func (t *trackedChild) result() (taskAnswer, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answer, t.state == ChildEnded
}

// status is the child's status now.
func (t *trackedChild) status() ChildStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := ChildStatus{
		ID: t.id, Label: t.label, Agent: t.agent, State: t.state, Background: t.background,
		Turns: t.turns, Usage: t.usage, Tool: t.tool, Worktree: t.worktree, Pid: t.pid,
		Collected: t.collected && t.background, Prompt: FirstRunes(t.prompt, 200),
	}
	switch t.state {
	case ChildEnded:
		s.Status = t.answer.Record.Status
		if !t.start.IsZero() {
			s.ElapsedMs = t.ended.Sub(t.start).Milliseconds()
		}
	case ChildRunning:
		s.ElapsedMs = time.Since(t.start).Milliseconds()
	}
	return s
}

// childRegistry holds the children of one parent attempt (or shell-like
// parent) in the order of their task calls (their tickets), and waits for those
// running in the background. It is safe for concurrent use.
type childRegistry struct {
	mu   sync.Mutex
	list []*trackedChild
	byID map[string]*trackedChild
	// background counts the goroutines of background children.
	background sync.WaitGroup
}

// track registers the child of e and returns it with a context that
// task_cancel can cancel. The child's live status is fed by its
// supervisor (agentRun.track).
func (r *childRegistry) track(ctx context.Context, e childAttempt) (context.Context, *trackedChild) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := &trackedChild{
		id: e.child.sessionID, label: e.child.label, agent: e.child.agent, prompt: e.args.Prompt,
		callID: e.call.id, background: e.call.background, ticket: e.call.ticket, cancel: cancel, done: make(chan struct{}),
		state: ChildStarting, start: time.Now(),
	}
	if e.wt != nil {
		t.worktree = e.wt.Path
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]*trackedChild{}
	}
	// A child resumed twice in one session keeps one entry: its newest.
	if old := r.byID[t.id]; old != nil {
		for i, x := range r.list {
			if x == old {
				r.list = append(r.list[:i], r.list[i+1:]...)
				break
			}
		}
	}
	// In call order, whatever order the calls' checks finished in.
	i := len(r.list)
	for i > 0 && r.list[i-1].ticket > t.ticket {
		i--
	}
	r.list = append(r.list[:i], append([]*trackedChild{t}, r.list[i:]...)...)
	r.byID[t.id] = t
	return ctx, t
}

// recovered registers t, a child of an earlier run of this session, as
// ended (at ended) with ans and not yet collected (see recoverBackground).
// It comes before every child started by this run.
func (r *childRegistry) recovered(t *trackedChild, ended time.Time, ans taskAnswer) {
	t.done = make(chan struct{})
	t.cancel = func(error) {}
	t.state = ChildStarting
	t.end(ans)
	t.ended = ended // when it ended then, not now
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]*trackedChild{}
	}
	r.list = append(r.list, t)
	r.byID[t.id] = t
}

// get returns the child with id, or nil.
func (r *childRegistry) get(id string) *trackedChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// all returns every child, in call order.
func (r *childRegistry) all() []*trackedChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*trackedChild(nil), r.list...)
}

// running reports whether the child with id is queued or running here.
func (r *childRegistry) running(id string) bool {
	t := r.get(id)
	if t == nil {
		return false
	}
	select {
	case <-t.done:
		return false
	default:
		return true
	}
}

// wait waits for every background child to end.
func (r *childRegistry) wait() { r.background.Wait() }
