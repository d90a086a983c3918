package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// agentRun is one agent (main, shell parent or child) during one attempt.
type agentRun struct {
	label      string
	sessionID  string
	transcript string
	// childrenOf is the transcript whose children/ directory holds this
	// agent's children and the children it may resume: its own transcript,
	// except for a shell parent resuming a child of another session.
	childrenOf string
	// found, when set, is the lookup that found the child this agent
	// resumes under childrenOf (see useOwner): the resume takes it as is.
	found   *Resumed
	depth   int
	binding model.Binding
	system  string
	// base is what system was built from; a child's system is built from
	// its parent's base with the child's own tools.
	base      promptBase
	files     []session.FileRef // the instruction files in system, for launch records
	tools     []string
	cwd, root string
	// gitDir, when root is one of ink's worktrees (the agent's own, or
	// its parent's that it shares), is that worktree's private git
	// directory: bash may write its git state (AttemptSpec.WorktreeGitDir).
	gitDir string
	agent  string
	// thinking is the thinking level of this agent's requests; a child
	// without a level of its own inherits it.
	thinking string
	// shell marks a parent that is a person at a shell (`ink task`), whose
	// hints must be shell commands.
	shell bool

	// onLaunch, when set, runs before each child is launched, after every
	// rejection check passed (a shell parent writes its session and the
	// task call only then, so a rejected `ink task` leaves no file).
	onLaunch func(call taskCall, args TaskArgs) error
	// launchReady, when set, must succeed before a child of this agent is
	// sent its attempt; it runs beside the child's worker start (a shell
	// parent's sync of the call that starts the child).
	launchReady func() error

	// track, on a child, is its entry in its parent's registry, fed with
	// its events.
	track *trackedChild
	// onAccept, when set, runs once when this agent's worker sends its
	// first event: it has taken the lease and accepted the attempt.
	onAccept func() error

	mu sync.Mutex
	// labelled counts the children labelled so far: the next one is
	// label/labelled+1.
	labelled int
	// reg is the registry of this agent's children (made on first use).
	reg *childRegistry
}

// registry is the agent's registry of children (made on first use).
func (ar *agentRun) registry() *childRegistry {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.reg == nil {
		ar.reg = &childRegistry{}
	}
	return ar.reg
}

// withOwner returns a view of ar whose children to resume live under
// found's owner (another session's), sharing ar's registry and hooks. A
// shell-like parent uses it to resume a child it did not start; ok says
// the lookup found the child resumable, so that the resume need not look
// again.
func (ar *agentRun) withOwner(found Resumed, ok bool) *agentRun {
	reg := ar.registry()
	ar.mu.Lock()
	defer ar.mu.Unlock()
	v := &agentRun{
		label: ar.label, sessionID: ar.sessionID, transcript: ar.transcript,
		depth: ar.depth, binding: ar.binding, system: ar.system, base: ar.base, files: ar.files, tools: ar.tools,
		cwd: ar.cwd, root: ar.root, agent: ar.agent, shell: ar.shell, onLaunch: ar.onLaunch,
		labelled: ar.labelled, reg: reg,
	}
	v.useOwner(found, ok)
	return v
}

// useOwner makes found's owner the session whose children this agent
// resumes; ok says the lookup found the child resumable, so that the
// resume takes found as is rather than looking again. It is called before
// the agent's first task call.
func (ar *agentRun) useOwner(found Resumed, ok bool) {
	ar.childrenOf = found.OwnerPath
	ar.found = nil
	if ok {
		ar.found = &found
	}
}

// nextChildLabel is the display label of this agent's next child.
func (ar *agentRun) nextChildLabel() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.labelled++
	return fmt.Sprintf("%s/%d", ar.label, ar.labelled)
}

// owner is the transcript whose children/ directory holds this agent's
// children: childrenOf when set, else its own transcript.
func (ar *agentRun) owner() string {
	if ar.childrenOf != "" {
		return ar.childrenOf
	}
	return ar.transcript
}

// attemptResult is how a worker's attempt ended, as the supervisor saw it.
type attemptResult struct {
	Status Status
	// Code says why a refused attempt was refused (StatusRefused only).
	Code      session.Code
	Reason    string
	Text      string
	Turns     int
	Usage     model.Usage
	AttemptID string
	Epoch     int64
	Pid       int
	Health    []string
	Capped    session.Cap
	// Launched is false when no worker process ever started.
	Launched bool
}

// loopWindow is the worker's default window over a message's safe calls.
const loopWindow = 8

// taskCall is one task call of a parent: its tool call id, its display
// label and its place in the window's queue.
type taskCall struct {
	id     string
	label  string
	ticket uint64
	// background marks a call answered at once; its child is collected
	// later (task_wait).
	background bool
	// registered, when set, is called with the child's registry entry once
	// every rejection check passed, just before it queues for the window.
	registered func(*trackedChild)
}

// supervise starts a worker for spec and supervises it to the end: it
// forwards events, answers task requests, cancels on ctx or timeout, kills
// after the grace, and detects a hung or dead worker. onStart is called
// with the worker's pid once it runs.
func (o *Orchestrator) supervise(ctx context.Context, ar *agentRun, spec ipc.AttemptSpec, timeout time.Duration, onStart func(pid int)) attemptResult {
	res := attemptResult{AttemptID: spec.AttemptID}
	o.arm(&spec)
	launcher := o.launcher
	switch {
	case spec.Remote != nil:
		launcher = o.remote
	case spec.Depth == 0 && o.pool != nil:
		// The main agent is no task call: it takes no pool worker (it
		// starts fresh, or on the first worker), and the pool waits for
		// its first task call (noteTaskCalls).
		launcher = o.pool.fresh
	}
	if spec.Remote == nil {
		if idle := o.first.take(ctx); idle != nil {
			launcher = prestarted{idle: idle, next: launcher}
		}
	}
	w, err := launchReady(ctx, launcher, spec, ar.launchReady)
	if err != nil {
		res.Status, res.Reason = StatusCrash, fmt.Sprintf("could not start the worker: %v", err)
		if ctx.Err() != nil {
			res.Status, res.Reason = StatusAborted, "cancelled before the worker started"
		}
		return res
	}
	if !o.live.add(w) {
		w.Kill()
		res.Status, res.Reason = StatusAborted, "killed by the user before it started"
		return res
	}
	defer o.live.remove(w)
	res.Launched, res.Pid = true, w.Pid()
	if onStart != nil {
		onStart(res.Pid)
	}

	msgs := make(chan ipc.WorkerMsg)
	recvErr := make(chan error, 1)
	stopRecv := make(chan struct{})
	var stopOnce sync.Once
	stopReceiving := func() { stopOnce.Do(func() { close(stopRecv) }) }
	defer stopReceiving()
	go func() {
		for {
			m, err := w.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-stopRecv:
				return
			}
		}
	}()

	childCtx, cancelChildren := context.WithCancelCause(context.Background())
	defer cancelChildren(nil)
	var tasks sync.WaitGroup
	// Children — background ones too — end before their parent's worker is
	// closed or killed.
	endChildren := func() {
		tasks.Wait()
		ar.registry().wait()
	}
	defer endChildren()

	var timeoutC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	hung := time.NewTicker(o.cfg.HeartbeatInterval)
	defer hung.Stop()
	beats := w.Beats()
	live := newLiveness(spec.HeartbeatInterval, time.Now())
	check := time.NewTicker(livenessCheck)
	defer check.Stop()
	var grace <-chan time.Time
	var cancelStatus Status
	cancelReason := ""
	cancel := func(status Status, reason string) {
		if cancelStatus != "" {
			return
		}
		cancelStatus, cancelReason = status, reason
		if err := w.Send(ipc.Cancel{Status: status, Reason: reason}); err != nil {
			o.cfg.Logger.Debug("Cancel not sent", "agent", ar.label, "err", err)
		}
		if status == StatusInterrupted {
			// Host lost reaches the whole subtree.
			cancelChildren(ErrHostLost)
		} else {
			cancelChildren(errors.New(reason))
		}
		grace = time.After(o.cfg.Grace)
	}
	done := ctx.Done()
	calls := map[string]taskCall{} // task calls of this agent, by tool call id
	defer func() {
		for _, c := range calls {
			o.window.forget(c.ticket)
		}
	}()
	var sent atomic.Bool

	for {
		select {
		case m := <-msgs:
			switch m := m.(type) {
			case ipc.Event:
				if accept := ar.onAccept; accept != nil {
					ar.onAccept = nil
					if err := accept(); err != nil {
						cancel(StatusCrash, fmt.Sprintf("the task call could not be recorded: %v", err))
					}
				}
				o.pub.publish(event.Envelope{Agent: ar.label, Session: ar.sessionID, WorkerSeq: m.Seq, Body: m.Body})
				o.noteTaskCalls(ar, m.Body, calls)
				if end, ok := m.Body.(event.ToolEnd); ok && end.Name == "task" {
					// A call the worker answered without asking (bad
					// arguments, cancelled before it ran) frees its place.
					if c, ok := calls[end.ID]; ok {
						o.window.forget(c.ticket)
					}
				}
				if msg, ok := m.Body.(event.Message); ok && msg.Message.Usage != nil {
					o.noteUsage(*msg.Message.Usage)
				}
				if ar.track != nil {
					ar.track.observe(m.Body)
				}
			case ipc.TaskRequest:
				var call taskCall
				if m.Op == "" || m.Op == ipc.OpTask {
					var ok bool
					if call, ok = calls[m.ToolCallID]; !ok {
						call = taskCall{id: m.ToolCallID, label: ar.nextChildLabel(), ticket: o.pub.ticket()}
					}
				}
				tasks.Add(1)
				go func() {
					defer tasks.Done()
					ans := o.handleRequest(childCtx, ar, call, m)
					ans.CorrelationID = m.CorrelationID
					if err := w.Send(ans); err != nil {
						o.cfg.Logger.Debug("Task answer not sent", "agent", ar.label, "err", err)
					}
				}()
			case ipc.Outcome:
				res.Status, res.Code, res.Reason, res.Text = m.Status, m.Code, m.Reason, m.Text
				res.Turns, res.Epoch, res.Usage = m.Turns, m.Epoch, m.Usage
				res.Health, res.Capped = m.Health, m.Capped
				if m.Capped == session.CappedBudget {
					o.budget.land()
				}
				cancelChildren(errors.New("the parent attempt ended"))
				if sent.CompareAndSwap(false, true) {
					if err := w.Send(ipc.Ack{}); err != nil {
						o.cfg.Logger.Debug("Ack not sent", "agent", ar.label, "err", err)
					}
				}
				endChildren()
				stopReceiving()
				w.Close()
				return res
			}
		case err := <-recvErr:
			cancelChildren(errors.New("the parent worker died"))
			res.Status, res.Reason = StatusCrash, o.deathReason(w, err)
			if cancelStatus != "" {
				res.Status = cancelStatus
			}
			endChildren()
			w.Kill()
			return res
		case <-done:
			done = nil
			status, reason := cancelOutcome(ctx)
			if status == StatusAborted && reason == userCancel {
				reason = cancelledWhy(ctx, ar.depth > 0)
			}
			cancel(status, reason)
		case <-timeoutC:
			cancel(StatusTimeout, fmt.Sprintf("timed out after %s", timeout))
		case <-grace:
			w.Kill()
			res.Status = cancelStatus
			res.Reason = fmt.Sprintf("%s; the worker did not stop within %s of the cancel, so its process group was killed", cancelReason, o.cfg.Grace)
			return res
		case hb, ok := <-beats:
			if !ok {
				beats = nil // the beats stopped: the checks below judge
				continue
			}
			live.beat(hb, time.Now())
		case <-check.C:
			if !live.lost(time.Now()) {
				continue
			}
			if _, exited := w.Exit(0); exited {
				if _, remote := w.(lostKiller); !remote {
					continue // it died: its stream's end says how
				}
				// A remote worker outlives the command that reached it
				// (a wrapper that forked): only its beats say it lives.
			}
			stopReceiving()
			return o.lose(ar, spec, w, live, res, func() {
				cancelChildren(ErrHostLost)
				endChildren()
			})
		case <-hung.C:
			st, err := o.store.Probe(spec.Transcript)
			if err == nil && st.State == lease.Hung && cancelStatus == "" {
				o.pub.emit(ar.label, ar.sessionID, event.Warning{Text: fmt.Sprintf("worker pid %d is hung (heartbeat %s ago); cancelling it", res.Pid, st.HeartbeatAge.Round(time.Millisecond))})
				cancel(StatusCrash, fmt.Sprintf("the worker hung (no heartbeat for %s)", st.HeartbeatAge.Round(time.Millisecond)))
			}
		}
	}
}

// lose ends the attempt of a worker that sent no heartbeat for too long:
// it kills the worker (for a local one, SIGKILL of its process group and
// session) and waits until it is gone, so that nothing it does can land
// after what follows; then it records the attempt's end in the transcript
// (interrupted, worker lost), has the worker's children stop as host lost
// (endChildren) and returns the result the parent is answered with.
func (o *Orchestrator) lose(ar *agentRun, spec ipc.AttemptSpec, w Worker, live *liveness, res attemptResult, endChildren func()) attemptResult {
	reason := live.lostReason()
	o.pub.emit(ar.label, ar.sessionID, event.Warning{Text: fmt.Sprintf("worker pid %d sent no heartbeat for %s: it is lost; killing it and recording its attempt as interrupted", res.Pid, live.after)})
	o.cfg.Logger.Warn("Worker lost", "agent", ar.label, "pid", res.Pid, "silentFor", live.after.String(), "progressSeq", live.progress)
	if rl, ok := w.(lostKiller); ok {
		rl.KillLost(reason) // it holds the lease, and records the end itself
	} else {
		w.Kill()
	}
	res.Status, res.Reason = StatusInterrupted, reason
	if _, gone := w.Exit(5 * time.Second); !gone {
		// Not provably stopped: nothing is written; a resume records the
		// end once the lease proves the worker gone.
		o.cfg.Logger.Warn("Lost worker did not exit after SIGKILL; its attempt's end is left to a resume", "agent", ar.label, "pid", res.Pid)
	} else {
		owner := lease.Owner{AttemptID: spec.AttemptID, Agent: spec.Label, SessionID: spec.SessionID}
		if err := o.recordLost(spec.Transcript, spec.AttemptID, owner, reason); err != nil && !errors.Is(err, errEndRecorded) {
			o.cfg.Logger.Warn("Lost attempt's end not recorded; a resume records it", "agent", ar.label, "err", err)
		}
	}
	endChildren()
	return res
}

// lostKiller is a Worker whose launcher holds the attempt's lease (a
// remote one): KillLost kills it and records its end with reason.
type lostKiller interface {
	KillLost(reason string)
}

// userCancel is the reason of an agent cancelled by the user (Ctrl-C).
const userCancel = "cancelled by the user"

// cancelledWhy words why ctx ended: the user's cancel, or for a child the
// reason its parent stopped (its worker died, it timed out, …), so that a
// child is never reported as cancelled by a user who did nothing.
func cancelledWhy(ctx context.Context, child bool) string {
	cause := context.Cause(ctx)
	if !child || cause == nil || errors.Is(cause, context.Canceled) || cause.Error() == userCancel {
		return userCancel
	}
	return "cancelled because its parent stopped: " + cause.Error()
}

// deathReason explains a worker whose stream broke before its outcome,
// naming the signal that killed it when there was one.
func (o *Orchestrator) deathReason(w Worker, streamErr error) string {
	if st, ok := w.Exit(3 * time.Second); ok {
		return st.Describe(w.Pid())
	}
	return fmt.Sprintf("lost the worker's stream: %v", streamErr)
}

// noteTaskCalls gives each task call of an assistant message its child
// label and its ticket in the window, in call order. The worker streams the
// message before it runs the calls, so both are known before the task
// requests arrive, whatever order those arrive in.
func (o *Orchestrator) noteTaskCalls(ar *agentRun, body event.Event, calls map[string]taskCall) {
	m, ok := body.(event.Message)
	if !ok || m.Message.Role != model.RoleAssistant {
		return
	}
	for _, c := range m.Message.ToolCalls {
		if c.Name == "task" {
			calls[c.ID] = taskCall{id: c.ID, label: ar.nextChildLabel(), ticket: o.pub.ticket()}
			o.window.expect(calls[c.ID].ticket)
			if o.pool != nil {
				o.pool.nudge() // the pool grows to the calls announced
			}
		}
	}
}
