package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/connect"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/tools"
)

// errHostLost is the cancellation cause when the orchestrator disappears;
// interrupted tool calls are recorded as "interrupted: the supervisor was lost".
var errHostLost = errors.New("the supervisor was lost")

// outcome is how an attempt ended.
type outcome struct {
	Status session.Status
	Code   session.Code // why a refused attempt was refused
	Reason string
	Text   string
	Turns  int
	Usage  model.Usage
	Epoch  int64
	Capped session.Cap // a cap wrapped the attempt up: Text is a wrap-up answer
	Health []string    // the loop's health observations
}

// capOf is the session.Cap of a loop result's Capped (loop.CappedTurns,
// loop.CappedBudget or ""): the loop names its caps with the same words.
func capOf(loopCap string) session.Cap {
	return session.Cap(loopCap)
}

// stopReason is the first reason an attempt was asked to stop; later ones
// are ignored so the outcome says what really happened.
type stopReason struct {
	once   sync.Once
	status session.Status
	reason string
}

func (s *stopReason) set(status session.Status, reason string) {
	s.once.Do(func() { s.status, s.reason = status, reason })
}

// hostConn is the worker's end of the attempt stream (*ipc.WorkerStream).
type hostConn interface {
	Send(ipc.WorkerMsg) error
	Recv() (ipc.HostMsg, error)
}

// attempt runs one attempt of one agent on one stream.
type attempt struct {
	spec   ipc.AttemptSpec
	stream hostConn
	log    *slog.Logger

	seq atomic.Uint64

	cancel context.CancelCauseFunc
	stop   stopReason
	// terminated carries why the process was told to stop (SIGTERM of a
	// remote worker: its pod is being deleted); the attempt then ends
	// interrupted with that reason.
	terminated chan string

	pendingMu sync.Mutex
	pending   map[string]chan ipc.TaskAnswer
	nextCorr  atomic.Uint64

	// reserved are the call ids of the transcript being continued: calls of
	// a compacted part are not in the model's history, but new calls must
	// not reuse their ids.
	reserved []string
	// budget is the run's token budget, nil when it has none.
	budget *treeBudget

	// lifetime sums the transcript's attempts, this one's start included;
	// its end entry records the sum with this attempt's usage.
	lifetime session.Lifetime

	// acked is closed when the host acknowledges the outcome.
	acked   chan struct{}
	ackOnce sync.Once
	redact  *redaction

	// fsys is what the transcript and the lease are written through: the
	// real filesystem, or a crashing one in tests.
	fsys durable.FS
	// transcript is the attempt's sink once it is open; a task request
	// is sent only once the message that holds its call is durable.
	transcript atomic.Value // sink
	// remote is the sink of a remote attempt (nil for a local one); chunks
	// carries its workspace's baseline, sent right after Run.
	remote *remoteSink
	chunks chan ipc.WorkspaceChunk
	// hostGone is closed when the host's stream broke.
	hostGone     chan struct{}
	hostGoneOnce sync.Once
	// syncDirs syncs the directories made for a new transcript.
	syncDirs func() error
	// held is the attempt's lease once taken; its progress goes into the
	// worker's heartbeats.
	held atomic.Pointer[lease.Lease]
}

// progressSeq is the attempt's progress sequence: its lease's, 0 before
// the lease is taken.
func (a *attempt) progressSeq() int64 {
	if l := a.held.Load(); l != nil {
		return l.ProgressSeq()
	}
	return 0
}

// newAttempt prepares the attempt of sp on stream; its log lines have the
// attempt's secrets redacted.
func newAttempt(sp ipc.AttemptSpec, stream hostConn, log *slog.Logger) *attempt {
	a := &attempt{spec: sp, stream: stream, pending: map[string]chan ipc.TaskAnswer{}, acked: make(chan struct{}), fsys: durable.OS,
		hostGone: make(chan struct{}), chunks: make(chan ipc.WorkspaceChunk, 16), terminated: make(chan string, 1)}
	if sp.Remote != nil {
		a.remote = newRemoteSink(a, sp.AttemptID, sp.Remote.Epoch)
	}
	if sp.Budget > 0 {
		a.budget = &treeBudget{remaining: sp.BudgetRemaining}
	}
	a.redact = newRedaction(sp, func(text string) { a.event(event.Warning{Text: text}) })
	a.log = slog.New(secret.LogHandler(log.Handler(), a.redact.r)).With("session", sp.SessionID, "attempt", sp.AttemptID, "agent", sp.Label)
	return a
}

// newRedaction builds the attempt's redaction from its spec: its own
// credentials by value, every other configured secret by fingerprint.
func newRedaction(sp ipc.AttemptSpec, warn func(string)) *redaction {
	var own []secret.Secret
	for k, v := range sp.Credentials {
		own = append(own, secret.Secret{Name: k, Value: v})
	}
	return &redaction{r: secret.NewRedactor(own, sp.Redact), warn: warn}
}

// getenv is the environment the attempt's provider is opened with: the
// spec's credentials and settings over the process environment, which
// holds no provider variable.
func (a *attempt) getenv(k string) string {
	if v, ok := a.spec.Credentials[k]; ok {
		return v
	}
	if v, ok := a.spec.Settings[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// send writes one message to the host; after the host is gone it fails
// quietly, since the receiver goroutine has already stopped the attempt.
func (a *attempt) send(m ipc.WorkerMsg) {
	if err := a.stream.Send(m); err != nil {
		a.log.Debug("Send to host failed", "err", err)
	}
}

// event streams one numbered event.
func (a *attempt) event(body event.Event) {
	a.send(ipc.Event{Seq: a.seq.Add(1), Body: body})
}

// receive reads host messages until the stream ends: cancels stop the
// attempt with the host's status, answers complete task calls, and a broken
// stream means the host is lost.
func (a *attempt) receive(ctx context.Context) {
	for {
		m, err := a.stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("Host stream broke", "err", err)
			}
			a.stop.set(session.StatusInterrupted, ipc.HostLost)
			a.cancel(errHostLost)
			a.hostGoneOnce.Do(func() { close(a.hostGone) })
			return
		}
		switch m := m.(type) {
		case ipc.Appended:
			if a.remote != nil {
				a.remote.deliver(m)
			}
		case ipc.WorkspaceChunk:
			select {
			case a.chunks <- m:
			case <-ctx.Done():
			}
		case ipc.Cancel:
			if m.Status == session.StatusInterrupted {
				// The supervisor stops this worker as host lost (its client
				// went away): end exactly as if it had died.
				a.stop.set(session.StatusInterrupted, ipc.HostLost)
				a.cancel(errHostLost)
				continue
			}
			status := m.Status
			if status != session.StatusTimeout {
				status = session.StatusAborted
			}
			reason := m.Reason
			if reason == "" {
				reason = "cancelled by the supervisor"
			}
			a.stop.set(status, reason)
			a.cancel(errors.New(reason))
		case ipc.TaskAnswer:
			a.pendingMu.Lock()
			ch := a.pending[m.CorrelationID]
			delete(a.pending, m.CorrelationID)
			a.pendingMu.Unlock()
			if ch != nil {
				ch <- m
			}
		case ipc.Ack:
			a.ackOnce.Do(func() { close(a.acked) })
		case ipc.Budget:
			if a.budget != nil {
				a.budget.update(m.Remaining)
			}
		}
	}
}

// RunTask implements tools.TaskRunner: it forwards a task call to the host
// and waits for the answer.
func (a *attempt) RunTask(ctx context.Context, callID string, args json.RawMessage) tools.Result {
	return toolResult(a.request(ctx, ipc.OpTask, callID, args))
}

// ControlTask implements tools.TaskController: it forwards a task_status,
// task_wait or task_cancel call to the host and waits for the answer.
func (a *attempt) ControlTask(ctx context.Context, tool, callID string, args json.RawMessage) tools.Result {
	op := map[string]string{tools.TaskStatusTool: ipc.OpStatus, tools.TaskWaitTool: ipc.OpWait, tools.TaskCancelTool: ipc.OpCancel}[tool]
	if op == "" {
		return tools.Result{Content: fmt.Sprintf("ink: %s is not a tool this worker forwards", tool), IsError: true}
	}
	return toolResult(a.request(ctx, op, callID, args))
}

// toolResult turns a host's answer into a tool result with its records.
func toolResult(ans ipc.TaskAnswer) tools.Result {
	res := tools.Result{Content: ans.Content, IsError: ans.IsError}
	if ans.Record != nil {
		res.Record, _ = json.Marshal(ans.Record)
	}
	for _, r := range ans.Records {
		raw, _ := json.Marshal(r)
		res.Records = append(res.Records, raw)
	}
	return res
}

// request sends one request about this agent's children to the host and
// waits for its answer; when ctx ends first, the answer says the call was
// interrupted.
func (a *attempt) request(ctx context.Context, op, callID string, args json.RawMessage) ipc.TaskAnswer {
	if w, _ := a.transcript.Load().(sink); op == ipc.OpTask && w != nil {
		// Durable before visible: the child this request starts writes
		// its own transcript at once, so the call that started it must
		// survive a crash of the machine first, or the child would be an
		// orphan that a continued session never answers for.
		if err := w.Sync(); err != nil {
			return ipc.TaskAnswer{Content: fmt.Sprintf("ink: the task call was not started: its message could not be made durable (%v); check the disk holding INK_HOME", err), IsError: true}
		}
	}
	corr := fmt.Sprintf("%s-%d", a.spec.AttemptID, a.nextCorr.Add(1))
	ch := make(chan ipc.TaskAnswer, 1)
	a.pendingMu.Lock()
	a.pending[corr] = ch
	a.pendingMu.Unlock()
	a.send(ipc.TaskRequest{CorrelationID: corr, ToolCallID: callID, Args: args, Op: op})
	select {
	case ans := <-ch:
		return ans
	case <-ctx.Done():
		a.pendingMu.Lock()
		delete(a.pending, corr)
		a.pendingMu.Unlock()
		return ipc.TaskAnswer{Content: "interrupted: " + context.Cause(ctx).Error(), IsError: true}
	}
}

// terminate ends the attempt as interrupted for why, from any goroutine,
// before or while it runs.
func (a *attempt) terminate(why string) {
	select {
	case a.terminated <- why:
	default:
	}
}

var (
	_ tools.TaskRunner     = (*attempt)(nil)
	_ tools.TaskController = (*attempt)(nil)
)

// run executes the attempt and returns its outcome. Every message is on disk
// before its event is sent; the attempt's start and end are recorded in the
// transcript unless the attempt was refused or fenced.
func (a *attempt) run(hostCtx context.Context) outcome {
	sp := a.spec
	ctx, cancel := context.WithCancelCause(context.Background())
	a.cancel = cancel
	defer cancel(nil)
	go func() {
		select {
		case <-hostCtx.Done():
			a.stop.set(session.StatusInterrupted, ipc.HostLost)
			cancel(errHostLost)
		case why := <-a.terminated:
			a.stop.set(session.StatusInterrupted, why)
			cancel(errors.New(why))
		case <-ctx.Done():
		}
	}()
	go a.receive(ctx)
	if a.remote == nil {
		// A remote worker's parent is whatever ran it (sshd, a container's
		// init); its stream alone says whether its host lives.
		go watchParent(ctx, func() {
			a.stop.set(session.StatusInterrupted, ipc.HostLost)
			cancel(errHostLost)
		})
	}

	// A remote child's tools work in its workspace, which must be made
	// first; the host wrote its start entry, so a failure is recorded.
	var early *outcome
	if a.remote != nil && sp.Remote.Workspace != nil {
		if err := a.materialise(ctx); err != nil {
			early = &outcome{Status: session.StatusCrash, Reason: err.Error(), Epoch: sp.Remote.Epoch}
		}
	}
	// The tools and the provider are built while the lease and the
	// transcript wait on the disk: neither needs the other.
	prep := a.prepare()
	defer prep.release()

	var (
		w     sink
		l     holder
		view  *session.View
		epoch int64
	)
	if a.remote != nil {
		// A remote attempt: the host holds the lease and wrote the start
		// entry and the prompt; every later entry goes through it.
		rs := a.remote
		w, l, view, epoch = rs, rs, session.ViewFrom(sp.Remote.History), sp.Remote.Epoch
		a.reserved, a.lifetime = sp.Remote.Reserved, sp.Remote.Lifetime.WithEnded(sp.Remote.LifetimeEnded)
		go func() {
			select {
			case <-rs.Fenced():
				if err := rs.Check(); errors.Is(err, errFenced) {
					a.stop.set(session.StatusCrash, err.Error())
					cancel(err)
				}
			case <-ctx.Done():
			}
		}()
		a.transcript.Store(sink(rs))
		if n := len(sp.Remote.History); n > 0 {
			a.event(event.Message{Message: sp.Remote.History[n-1].Message})
		}
		if early != nil {
			return a.end(w, l, *early)
		}
	} else {
		lw, ll, lview, out := a.openLocal(ctx, cancel)
		if out != nil {
			return *out
		}
		defer func() {
			lw.Close()
			if err := ll.Release(); err != nil {
				a.log.Error("Lease release failed", "err", err)
			}
		}()
		w, l, view, epoch = lw, ll, lview, ll.Epoch()
	}

	pool, provider, err := prep.take()
	if err != nil {
		return a.end(w, l, outcome{Status: session.StatusCrash, Reason: err.Error(), Epoch: epoch})
	}
	// Read the window off the provider itself, before wrappers hide it.
	window := contextWindow(sp, provider)
	if !a.redact.r.Empty() {
		provider = &redactingProvider{Provider: provider, x: a.redact}
	}

	var turnBase atomic.Int64
	run := func() (loop.Result, error) {
		return loop.Run(ctx, loop.Options{
			Provider: &turnShift{Provider: provider, base: int(turnBase.Load())},
			Request: model.Request{
				System: sp.System, Model: sp.Binding.Model, MaxTokens: sp.MaxTokens,
				Thinking: sp.Thinking, Agent: sp.Agent, Depth: sp.Depth,
			},
			Tools:           pool,
			History:         view.Messages(),
			ReservedCallIDs: a.reserved,
			MaxParallel:     sp.MaxParallel,
			ContextWindow:   window,
			MaxTurns:        sp.MaxTurns,
			Budget:          a.loopBudget(),
			Health:          loop.HealthOptions{Off: os.Getenv("INK_HEALTH") == "0"},
			OnMessage: func(m model.Message) error {
				if err := l.Check(); err != nil {
					return err
				}
				if unansweredTask(ctx, m) {
					// The supervisor died before the child's answer came: leave
					// the call open so that continuing this session answers it
					// from the child's own transcript, naming the child.
					a.log.Info("Task call left open: the supervisor was lost before its answer")
					_ = view.Apply(session.Entry{Type: session.EntryMessage, Message: &m})
					return nil
				}
				e, err := w.AppendMessage(m)
				if err != nil {
					return fmt.Errorf("transcript write: %w", err)
				}
				_ = view.Apply(e)
				l.Progress()
				a.event(event.Message{Message: m})
				return nil
			},
			OnCompaction: func(c loop.Compaction) error {
				if err := l.Check(); err != nil {
					return err
				}
				first, err := view.FirstKept(c.Kept)
				if err != nil {
					return err
				}
				u := c.Usage
				e, err := w.AppendCompaction(session.CompactionEntry{Summary: c.Summary, FirstKept: first, TokensBefore: c.TokensBefore, Trigger: c.Trigger, Usage: &u})
				if err != nil {
					return fmt.Errorf("transcript write: %w", err)
				}
				if err := view.Apply(e); err != nil {
					return err
				}
				l.Progress()
				a.event(event.Compaction{Trigger: c.Trigger, TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, Window: c.Window, Kept: c.Kept, Replaced: c.Replaced, FirstKept: first, Usage: &u})
				return nil
			},
			OnEvent: a.loopEvent(l, &turnBase),
		})
	}
	res, runErr := run()
	if runErr == nil && slices.Contains(sp.Tools, "task") {
		res, runErr = a.collectBackground(ctx, w, l, view, res, &turnBase, run)
	}
	out := outcome{Text: res.FinalText, Turns: res.Turns, Usage: res.Usage, Epoch: epoch, Status: session.StatusCompleted, Capped: capOf(res.Capped), Health: res.Health}
	if runErr != nil {
		switch {
		case ctx.Err() != nil && a.stop.status != "":
			out.Status, out.Reason = a.stop.status, a.stop.reason
		case errors.Is(runErr, context.Canceled):
			out.Status, out.Reason = session.StatusAborted, runErr.Error()
		default:
			out.Status, out.Reason = session.StatusCrash, runErr.Error()
		}
	}
	if l.Check() != nil {
		// Another holder owns the transcript now: write nothing more.
		out.Status, out.Reason = session.StatusCrash, l.Check().Error()
		return out
	}
	return a.end(w, l, out)
}

// openLocal takes the transcript's lease, starts its heartbeat and opens
// the transcript for a local attempt, with its start entry and prompt
// written. A non-nil outcome means the attempt is refused or could not
// start (the lease released); else the caller closes the writer and then
// releases the lease.
func (a *attempt) openLocal(ctx context.Context, cancel context.CancelCauseFunc) (*session.Writer, *lease.Lease, *session.View, *outcome) {
	sp := a.spec
	// The directories a new child needs are synced into their parents in
	// the background, with its transcript (openTranscript).
	syncDirs, err := durable.MkdirAllLater(a.fsys, filepath.Dir(sp.Transcript), 0o700)
	if err != nil {
		return nil, nil, nil, &outcome{Status: session.StatusCrash, Reason: fmt.Sprintf("transcript directory: %v", err)}
	}
	a.syncDirs = syncDirs
	heartbeat := sp.HeartbeatInterval
	if heartbeat <= 0 {
		heartbeat = lease.DefaultHeartbeat
	}
	// A new transcript is created in the lease's directory; the sync of its
	// creation, run beside the first model request, syncs the lease's
	// record first and then that directory: the record becomes durable
	// with the transcript, before anything else is written under it.
	l, err := lease.AcquireWith(sp.Transcript, lease.Owner{AttemptID: sp.AttemptID, Agent: sp.Label, SessionID: sp.SessionID},
		lease.Options{Heartbeat: heartbeat, SyncLater: sp.Create != nil, FS: a.fsys})
	if err != nil {
		// Busy, or a lease file that is a symlink or directory: nothing ran
		// and nothing was written, so the attempt is refused.
		if errors.Is(err, lease.ErrBusy) {
			return nil, nil, nil, &outcome{Status: session.StatusRefused, Code: session.CodeStillRunning, Reason: err.Error()}
		}
		if errors.Is(err, lease.ErrBadLeaseFile) {
			return nil, nil, nil, &outcome{Status: session.StatusRefused, Code: session.CodeMalformed, Reason: err.Error()}
		}
		return nil, nil, nil, &outcome{Status: session.StatusCrash, Reason: err.Error()}
	}
	a.held.Store(l)
	release := func() {
		if err := l.Release(); err != nil {
			a.log.Error("Lease release failed", "err", err)
		}
	}
	if a.budget != nil {
		// What is left of the tree's budget goes into the lease record,
		// for `ink status`.
		a.budget.reportTo(func(left int64) { l.SetBudget(sp.Budget, left) })
	}
	l.StartHeartbeat(heartbeat)
	epoch := l.Epoch()
	go func() {
		select {
		case <-l.Fenced():
			a.stop.set(session.StatusCrash, l.FenceErr().Error())
			cancel(l.FenceErr())
		case <-ctx.Done():
		}
	}()

	// The attempt's start entry and its prompt are written with the header
	// of a new transcript, or with the repairs of a continued one: one
	// durable point, one sync (for a new transcript, run beside the first
	// model request).
	start := session.AttemptEntry{Phase: session.PhaseStart, AttemptID: sp.AttemptID, Epoch: epoch, Pid: os.Getpid(), Time: time.Now().UTC()}
	prompt := a.redact.message(model.UserText(sp.Prompt), "the task's prompt")
	w, view, refused := a.openTranscript(l, start, prompt)
	if refused != nil {
		refused.Epoch = epoch
		release()
		return nil, nil, nil, refused
	}
	a.transcript.Store(sink(w))
	a.event(event.Message{Message: prompt})
	return w, l, view, nil
}

// contextWindow is the attempt's context window: the one the user set
// (--context-window), else the one the provider reports (a script's
// contextWindow:), else the model's.
func contextWindow(sp ipc.AttemptSpec, p model.Provider) int64 {
	if sp.ContextWindow > 0 {
		return sp.ContextWindow
	}
	if wr, ok := p.(model.WindowReporter); ok && wr.ContextWindow() > 0 {
		return wr.ContextWindow()
	}
	return model.ContextWindow(sp.Binding)
}

// loopBudget is the budget the loop lands against, or nil without one (a
// nil *treeBudget must not become a non-nil interface).
func (a *attempt) loopBudget() loop.Budget {
	if a.budget == nil {
		return nil
	}
	return a.budget
}

// unansweredTask reports whether m is the result of a task call that the
// supervisor never answered because it was lost: such a call is left
// without a result in the transcript (docs/architecture.md, "Host loss").
func unansweredTask(ctx context.Context, m model.Message) bool {
	if m.Role != model.RoleToolResult || len(m.TaskRecord) > 0 || len(m.Results) != 1 || m.Results[0].ToolName != "task" {
		return false
	}
	return errors.Is(context.Cause(ctx), errHostLost)
}

// end records the attempt's end entry and returns out.
func (a *attempt) end(w sink, l holder, out outcome) outcome {
	if l.Check() != nil {
		return out
	}
	u := out.Usage
	life := a.lifetime.With(&u)
	err := w.AppendAttempt(session.AttemptEntry{
		Phase: "end", AttemptID: a.spec.AttemptID, Epoch: out.Epoch, Pid: os.Getpid(), Time: time.Now().UTC(),
		Status: out.Status, Reason: out.Reason, Turns: out.Turns, Usage: &u,
		FinalTextLen: len(out.Text), FinalText: session.FinalTextTail(out.Text), Capped: out.Capped, Health: out.Health,
		Lifetime: &life,
	})
	if err != nil {
		a.log.Error("Attempt end entry not written", "err", err)
		if out.Status == session.StatusCompleted {
			out.Status, out.Reason = session.StatusCrash, fmt.Sprintf("transcript write: %v", err)
		}
	}
	return out
}

// openTranscript creates or continues the transcript under the lease,
// writes the attempt's start entry and its prompt (after the repairs of a
// continued transcript) as one durable point, and returns the writer and
// the model's history to seed the loop with, rebuilt from the last
// compaction and kept in step with every entry written. A non-nil outcome
// means the attempt is refused or could not start; a refusal wrote
// nothing.
func (a *attempt) openTranscript(l *lease.Lease, start session.AttemptEntry, prompt model.Message) (*session.Writer, *session.View, *outcome) {
	sp := a.spec
	req := session.OpenRequest{
		FS: a.fsys, Path: sp.Transcript, Create: sp.Create, ExpectHeader: sp.ExpectHeader, Repair: sp.Repair,
		Start: start, Prompt: prompt,
		Lost: func(lost session.AttemptEntry) (string, bool) {
			// Its worker died without recording how the attempt ended —
			// every process killed at once, or the machine stopped — and
			// the lease this worker holds proves it gone: write the end it
			// missed.
			return l.LostAttempt(lost.AttemptID)
		},
	}
	for _, ans := range sp.Answers {
		req.Answers = append(req.Answers, ans.WithRecord())
	}
	if sp.Create != nil {
		// The model request needs nothing on disk: the creation's sync
		// runs beside it, and the next entry waits for it.
		req.SyncBefore = l.SyncRecord
		if a.syncDirs != nil {
			req.SyncBefore = func() error {
				if err := a.syncDirs(); err != nil {
					return err
				}
				return l.SyncRecord()
			}
		}
	}
	opened, refusal, err := session.OpenAttempt(req)
	switch {
	case err != nil:
		return nil, nil, &outcome{Status: session.StatusCrash, Reason: err.Error()}
	case refusal != nil:
		return nil, nil, &outcome{Status: session.StatusRefused, Code: refusal.Code, Reason: refusal.Reason}
	}
	a.reserved, a.lifetime = opened.Reserved, opened.Lifetime
	if opened.Repaired > 0 {
		a.event(event.Warning{Text: fmt.Sprintf("transcript repaired: %d interrupted tool call(s) answered", opened.Repaired)})
	}
	for _, c := range opened.Clipped {
		a.event(event.Warning{Text: fmt.Sprintf("transcript line %d is %s, over ink's resume line bound of %s: the model sees the start and end of each of its parts; the transcript keeps it whole",
			c.Line, model.SizeString(c.Bytes), model.SizeString(session.MaxResumeLine))})
	}
	if o := opened.Omitted; o != nil {
		a.event(event.Warning{Text: fmt.Sprintf("the history since the last compaction is over ink's resume history bound of %s: the model sees its most recent messages after a note that %d earlier ones (%s) were left out; the transcript keeps them",
			model.SizeString(session.MaxResumeHistory), o.Messages, model.SizeString(o.Bytes))})
	}
	return opened.Writer, opened.View, nil
}

// prepared is what an attempt builds before its first turn that needs
// nothing on disk: its tools and its provider.
type prepared struct {
	done     chan struct{}
	pool     []tools.Tool
	closer   io.Closer
	provider model.Provider
	err      error
}

// prepare builds the attempt's tools and provider in the background; the
// attempt takes them with take, and closeUnused (deferred) closes the
// tools when the attempt ends, taken or not.
func (a *attempt) prepare() *prepared {
	p := &prepared{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.pool, p.closer, p.err = a.toolPool()
		if p.err != nil {
			return
		}
		p.provider, p.err = connect.Open(a.spec.Binding, a.getenv)
	}()
	return p
}

// take waits for the tools and the provider; a failure of either is the
// attempt's crash reason.
func (p *prepared) take() ([]tools.Tool, model.Provider, error) {
	<-p.done
	return p.pool, p.provider, p.err
}

// release waits for prepare to finish and closes the tools it built.
func (p *prepared) release() {
	<-p.done
	if p.closer != nil {
		p.closer.Close()
	}
}

// toolPool builds the tools of the launch pool; a tool outside it does not
// exist in this worker. The caller closes the returned closer when the
// attempt ends. The edit locks live in the tools' host-wide default place,
// so workers of every INK_HOME exclude one another.
func (a *attempt) toolPool() ([]tools.Tool, io.Closer, error) {
	sp := a.spec
	exe, err := os.Executable() // bash re-executes it to apply its sandbox
	if err != nil {
		return nil, nil, fmt.Errorf("tools: find the ink binary for the bash sandbox: %w", err)
	}
	var mode sandbox.Mode // empty: the tools' default
	if sp.Sandbox != "" {
		if mode, err = sandbox.ParseMode(sp.Sandbox); err != nil {
			return nil, nil, fmt.Errorf("tools: %w", err)
		}
	}
	all, closer, err := tools.Builtins(tools.Env{Root: sp.Root, Cwd: sp.Cwd,
		Sandbox: mode, SandboxExplicit: sp.SandboxExplicit, Writable: sp.Writable, SandboxExe: exe,
		Network: sp.Network, NetworkExplicit: sp.NetworkExplicit, AllowGitWrites: sp.AllowGitWrites,
		Namespaces: sandbox.Namespaces(sp.Namespaces), WorktreeGitDir: sp.WorktreeGitDir})
	if err != nil {
		return nil, nil, fmt.Errorf("tools: %w", err)
	}
	all = append(all, tools.NewTask(a))
	pool, err := tools.Select(all, sp.Tools)
	if err != nil {
		closer.Close()
		return nil, nil, fmt.Errorf("tool pool: %w", err)
	}
	if slices.Contains(sp.Tools, "task") {
		// An agent that may delegate follows its children too.
		pool = append(pool, tools.NewTaskControls(a)...)
	}
	if !a.redact.r.Empty() {
		for i, t := range pool {
			pool[i] = &redactingTool{Tool: t, x: a.redact}
		}
	}
	return pool, closer, nil
}

// loopEvent turns loop progress into host events and lease progress. Turns
// are numbered within the attempt: base holds the turns of the loop runs
// before this one.
func (a *attempt) loopEvent(l holder, base *atomic.Int64) func(loop.Event) {
	return func(e loop.Event) {
		switch e.Type {
		case loop.EventTurnStart:
			l.Progress()
			a.event(event.TurnStart{Turn: int(base.Load()) + e.Turn})
		case loop.EventDelta:
			if e.Delta != nil && e.Delta.Type == "retry" {
				a.event(event.Warning{Text: a.redact.text(e.Delta.Text, "a provider warning")})
			}
		case loop.EventWarning:
			a.event(event.Warning{Text: e.Text})
		case loop.EventToolStart:
			if e.Call != nil {
				a.event(event.ToolStart{ID: e.Call.ID, Name: e.Call.Name, Args: e.Call.Args})
			}
		case loop.EventToolEnd:
			l.Progress()
			if e.Call != nil && e.Result != nil {
				a.event(event.ToolEnd{ID: e.Call.ID, Name: e.Call.Name, IsError: e.Result.IsError, DurationMs: e.Duration.Milliseconds()})
			}
		}
	}
}
