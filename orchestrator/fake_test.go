package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// This file holds the fake Launcher the supervisor is tested through: each
// "worker" is a goroutine that plays a script written by the test. A script
// speaks the typed wire (ipc.Event, ipc.TaskRequest, ipc.Outcome out;
// ipc.Cancel, ipc.TaskAnswer, ipc.Ack in) and, like a real worker, takes the
// transcript's lease and writes the transcript — in the harness's in-memory
// Store (memstore_test.go), encoded by package session as a real worker's
// file would hold it, so the supervisor reads it with the rules of a file
// while no test touches a file, a flock or git.

// waitLong bounds every wait of a test: generous, so that a loaded machine
// never fails a correct test, and finite, so that a broken one fails.
const waitLong = 20 * time.Second

// eventually waits, inside a synctest bubble and on its goroutine, until
// cond holds: each round lets every goroutine of the bubble run until it
// blocks, then lets the bubble's fake clock move on to its next timer. It
// fails the test when cond does not hold within waitLong of fake time.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for synctest.Wait(); !cond(); synctest.Wait() {
		if !time.Now().Before(deadline) {
			t.Fatalf("not %s within %s", what, waitLong)
		}
		time.Sleep(time.Millisecond) // the bubble's clock: no real time passes
	}
}

// settleAfter lets d pass on the bubble's fake clock and waits until every
// goroutine of the bubble is blocked: whatever was due within d has
// happened, and nothing else is under way. Call it from the bubble's
// goroutine.
func settleAfter(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// testBinding is the main agent's model in these tests; no model runs.
var testBinding = model.Binding{Provider: "script", Model: "/ink-test/main.yaml"}

// play is the script of one worker; it runs in its own goroutine.
type play func(w *fakeWorker)

// fakeLauncher is a Launcher whose workers are scripted goroutines. It is
// safe for concurrent use. Its cleanup (registered by newFakeLauncher)
// fails the test when a worker was neither closed nor killed, or when a
// script is still running.
type fakeLauncher struct {
	t     testing.TB
	play  play
	store *memStore // where the workers' transcripts and leases live
	// fail, when set, makes Launch fail for each spec it returns an error
	// for; nothing is started then.
	fail func(spec ipc.AttemptSpec) error

	mu      sync.Mutex
	workers []*fakeWorker
	pid     int
	live    int // launched children not yet ended
	maxLive int
	scripts sync.WaitGroup
}

var _ Launcher = (*fakeLauncher)(nil)

func newFakeLauncher(t testing.TB, store *memStore, p play) *fakeLauncher {
	l := &fakeLauncher{t: t, play: p, pid: 90000, store: store}
	t.Cleanup(l.check)
	return l
}

// Launch starts the script for spec. Like the real launcher it fails when
// ctx is already done.
func (l *fakeLauncher) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if l.fail != nil {
		if err := l.fail(spec); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	l.pid++
	w := &fakeWorker{
		l: l, Spec: spec, pid: l.pid,
		out: make(chan ipc.WorkerMsg), in: make(chan ipc.HostMsg, 256),
		stream: make(chan struct{}), gone: make(chan struct{}), done: make(chan struct{}),
		silent: make(chan struct{}),
	}
	w.beats = beatEvery(spec.HeartbeatInterval, w.gone, w.silent, w.noteBeat)
	l.workers = append(l.workers, w)
	if spec.Depth > 0 {
		l.live++
		l.maxLive = max(l.maxLive, l.live)
	}
	l.mu.Unlock()
	l.scripts.Add(1)
	go func() {
		defer l.scripts.Done()
		defer close(w.done)
		defer w.release()
		defer w.markGone(ExitState{})
		l.play(w)
	}()
	return w, nil
}

// all returns every worker launched so far, in launch order.
func (l *fakeLauncher) all() []*fakeWorker {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*fakeWorker(nil), l.workers...)
}

// byLabel returns the last worker launched with label, or nil.
func (l *fakeLauncher) byLabel(label string) *fakeWorker {
	ws := l.all()
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].Spec.Label == label {
			return ws[i]
		}
	}
	return nil
}

// byPrompt returns the last worker launched with prompt, or nil.
func (l *fakeLauncher) byPrompt(prompt string) *fakeWorker {
	ws := l.all()
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].Spec.Prompt == prompt {
			return ws[i]
		}
	}
	return nil
}

// peak is the largest number of children that ran at once.
func (l *fakeLauncher) peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxLive
}

// check fails the test when the supervisor left a worker running or a
// script did not end.
func (l *fakeLauncher) check() {
	ended := make(chan struct{})
	go func() { l.scripts.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(waitLong):
		l.t.Errorf("fake worker scripts still running %s after the test", waitLong)
		return
	}
	for _, w := range l.all() {
		closes, kills := w.ends()
		if closes+kills == 0 {
			l.t.Errorf("worker %s (pid %d) was neither closed nor killed by the supervisor", w.Spec.Label, w.pid)
		}
	}
}

// fakeWorker is one scripted worker. The Worker methods are the
// supervisor's side; the exported-looking script methods (Start, Say,
// Task, Finish, …) run in the script's goroutine only.
type fakeWorker struct {
	l    *fakeLauncher
	Spec ipc.AttemptSpec
	pid  int

	out    chan ipc.WorkerMsg // worker -> host
	in     chan ipc.HostMsg   // host -> worker
	stream chan struct{}      // closed when the stream is broken
	gone   chan struct{}      // closed when the "process" ended
	done   chan struct{}      // closed when the script returned and cleaned up
	silent chan struct{}      // closed when the worker stops beating
	beats  <-chan ipc.Heartbeat
	beatMu sync.Mutex
	// lastBeat is when the worker last beat; killedAt when it was killed;
	// endAtKill whether the transcript held its attempt's end by then.
	lastBeat, killedAt time.Time
	endAtKill          bool

	mu         sync.Mutex
	sent       []ipc.HostMsg
	closes     int
	kills      int
	exit       ExitState
	isGone     bool
	streamOver bool
	lingering  bool // the stream broke but the process lives on

	// Script-goroutine state.
	seq     uint64
	pending []ipc.HostMsg
	epoch   int64 // the lease's epoch while the worker holds it, else 0
	writing bool  // the transcript is open for the attempt
	usage   model.Usage
	turns   int
}

var _ Worker = (*fakeWorker)(nil)

// Pid is the fake process id.
func (w *fakeWorker) Pid() int { return w.pid }

// Send records m and hands it to the script; it fails once the worker is
// gone, as a real stream would.
func (w *fakeWorker) Send(m ipc.HostMsg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.isGone {
		return errors.New("rpc error: code = Unavailable desc = transport is closing")
	}
	w.sent = append(w.sent, m)
	select {
	case w.in <- m:
	default:
		w.l.t.Errorf("worker %s: host message queue full", w.Spec.Label)
	}
	return nil
}

// Recv returns the script's next message, or an error once the stream
// broke: io.EOF after a clean exit, a transport error otherwise.
func (w *fakeWorker) Recv() (ipc.WorkerMsg, error) {
	select {
	case m := <-w.out:
		return m, nil
	case <-w.stream:
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.isGone && w.exit == (ExitState{}) && w.closes > 0 {
			return nil, io.EOF
		}
		return nil, errors.New("rpc error: code = Unavailable desc = error reading from server: EOF")
	}
}

// Close ends an acknowledged worker: the process exits cleanly and the
// script is waited for.
func (w *fakeWorker) Close() {
	w.mu.Lock()
	w.closes++
	w.mu.Unlock()
	w.markGone(ExitState{})
	w.waitDone("Close")
}

// Beats are the worker's heartbeats, one per heartbeat interval from its
// launch until it is gone or StopBeating.
func (w *fakeWorker) Beats() <-chan ipc.Heartbeat { return w.beats }

// noteBeat records when the worker beat.
func (w *fakeWorker) noteBeat(at time.Time) {
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	w.lastBeat = at
}

// beatTimes returns when the worker last beat and when it was killed
// (zero: never), and whether its attempt's end was in the transcript then.
func (w *fakeWorker) beatTimes() (lastBeat, killedAt time.Time, endAtKill bool) {
	w.beatMu.Lock()
	defer w.beatMu.Unlock()
	return w.lastBeat, w.killedAt, w.endAtKill
}

// Kill "SIGKILLs" the worker and waits for its script to end.
func (w *fakeWorker) Kill() {
	w.mu.Lock()
	w.kills++
	first := w.kills == 1
	w.mu.Unlock()
	if first {
		ended := false
		if tr, err := w.l.store.Open(w.Spec.Transcript, false); err == nil {
			for _, a := range tr.Attempts() {
				ended = ended || (a.Phase == session.PhaseEnd && a.AttemptID == w.Spec.AttemptID)
			}
		}
		w.beatMu.Lock()
		w.killedAt, w.endAtKill = time.Now(), ended
		w.beatMu.Unlock()
	}
	w.markGone(ExitState{Signal: "SIGKILL"})
	w.waitDone("Kill")
}

// Exit waits up to d for the process to end. A lingering worker (its
// stream broke, its process lives) answers at once that it still runs.
func (w *fakeWorker) Exit(d time.Duration) (ExitState, bool) {
	w.mu.Lock()
	linger := w.lingering && !w.isGone
	w.mu.Unlock()
	if linger {
		return ExitState{}, false
	}
	select {
	case <-w.gone:
	default:
		select {
		case <-w.gone:
		case <-time.After(d):
			return ExitState{}, false
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exit, true
}

// beatEvery plays a worker's Beats stream: a beat every interval (the
// default when 0), noted with note (unless nil), until gone or silent is
// closed; then the channel is closed, as a broken stream closes it.
func beatEvery(interval time.Duration, gone, silent <-chan struct{}, note func(time.Time)) <-chan ipc.Heartbeat {
	if interval <= 0 {
		interval = ipc.DefaultBeatInterval
	}
	out := make(chan ipc.Heartbeat, 1)
	go func() {
		defer close(out)
		t := time.NewTicker(interval)
		defer t.Stop()
		for seq := int64(1); ; seq++ {
			select {
			case <-gone:
				return
			case <-silent:
				return
			case <-t.C:
			}
			select {
			case out <- ipc.Heartbeat{ProgressSeq: seq}:
				if note != nil {
					note(time.Now())
				}
			case <-gone:
				return
			case <-silent:
				return
			}
		}
	}()
	return out
}

// StopBeating makes the worker send no more heartbeats, as a frozen
// process or a lost machine does; it keeps running.
func (w *fakeWorker) StopBeating() { close(w.silent) }

func (w *fakeWorker) waitDone(op string) {
	select {
	case <-w.done:
	case <-time.After(waitLong):
		w.l.t.Errorf("worker %s: script did not end within %s of %s", w.Spec.Label, waitLong, op)
	}
}

// markGone ends the process with st (the first end wins) and breaks the
// stream.
func (w *fakeWorker) markGone(st ExitState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.isGone {
		w.isGone, w.exit = true, st
		close(w.gone)
		if w.Spec.Depth > 0 {
			w.l.mu.Lock()
			w.l.live--
			w.l.mu.Unlock()
		}
	}
	w.breakStreamLocked()
}

func (w *fakeWorker) breakStreamLocked() {
	if !w.streamOver {
		w.streamOver = true
		close(w.stream)
	}
}

// release does what the kernel does for a dead worker: its file is closed
// and its lease lock freed.
func (w *fakeWorker) release() {
	w.writing = false
	if w.epoch != 0 {
		w.l.store.release(w.Spec.Transcript, w.epoch)
		w.epoch = 0
	}
}

// write appends entries to the transcript, as the worker's writer does.
func (w *fakeWorker) write(entries ...session.Entry) bool {
	if !w.writing {
		w.l.t.Errorf("worker %s: write with no transcript open", w.Spec.Label)
		return false
	}
	if err := w.l.store.append(w.Spec.Transcript, entries...); err != nil {
		w.l.t.Errorf("worker %s: %v", w.Spec.Label, err)
		return false
	}
	return true
}

// ends reports how often the supervisor closed and killed the worker.
func (w *fakeWorker) ends() (closes, kills int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closes, w.kills
}

// hostMsgs returns what the supervisor sent, in order.
func (w *fakeWorker) hostMsgs() []ipc.HostMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ipc.HostMsg(nil), w.sent...)
}

// answers returns the TaskAnswers the supervisor sent, by correlation id.
func (w *fakeWorker) answers() map[string]ipc.TaskAnswer {
	out := map[string]ipc.TaskAnswer{}
	for _, m := range w.hostMsgs() {
		if a, ok := m.(ipc.TaskAnswer); ok {
			out[a.CorrelationID] = a
		}
	}
	return out
}

// answer returns the TaskAnswer to the call callID, failing when there is
// none.
func (w *fakeWorker) answer(t testing.TB, callID string) ipc.TaskAnswer {
	t.Helper()
	a, ok := w.answers()[corr(callID)]
	if !ok {
		t.Fatalf("worker %s got no answer to %s; it got %v", w.Spec.Label, callID, w.hostMsgs())
	}
	return a
}

// count returns how many host messages of the type of like were sent.
func count[T ipc.HostMsg](w *fakeWorker) int {
	n := 0
	for _, m := range w.hostMsgs() {
		if _, ok := m.(T); ok {
			n++
		}
	}
	return n
}

// --- The script's side. ---

func corr(callID string) string { return "corr-" + callID }

// send hands m to the supervisor; false once the worker is gone.
func (w *fakeWorker) send(m ipc.WorkerMsg) bool {
	select {
	case w.out <- m:
		return true
	case <-w.gone:
		return false
	}
}

// Event sends one progress event, numbered like a real worker's.
func (w *fakeWorker) Event(body event.Event) bool {
	w.seq++
	return w.send(ipc.Event{Seq: w.seq, Body: body})
}

// await returns the first host message match accepts, keeping the others
// for later awaits; false once the worker is gone.
func (w *fakeWorker) await(match func(ipc.HostMsg) bool) (ipc.HostMsg, bool) {
	for i, m := range w.pending {
		if match(m) {
			w.pending = append(w.pending[:i], w.pending[i+1:]...)
			return m, true
		}
	}
	for {
		select {
		case m := <-w.in:
			if match(m) {
				return m, true
			}
			w.pending = append(w.pending, m)
		case <-w.gone:
			return nil, false
		}
	}
}

// AwaitCancel waits for the supervisor's Cancel.
func (w *fakeWorker) AwaitCancel() (ipc.Cancel, bool) {
	m, ok := w.await(func(m ipc.HostMsg) bool { _, ok := m.(ipc.Cancel); return ok })
	if !ok {
		return ipc.Cancel{}, false
	}
	return m.(ipc.Cancel), true
}

// Wait blocks until ch is closed or the worker is gone.
func (w *fakeWorker) Wait(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-w.gone:
		return false
	}
}

// Hang does nothing until the worker is killed.
func (w *fakeWorker) Hang() { <-w.gone }

// Die ends the process by signal sig without an outcome (its lease is
// freed, its transcript keeps what was written). The script must return
// after it.
func (w *fakeWorker) Die(sig string) {
	w.release()
	w.markGone(ExitState{Signal: sig})
}

// ExitWith ends the process with code without an outcome.
func (w *fakeWorker) ExitWith(code int) {
	w.release()
	w.markGone(ExitState{Code: code})
}

// BreakStream breaks the stream while the process lives on; the script
// should then Hang.
func (w *fakeWorker) BreakStream() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lingering = true
	w.breakStreamLocked()
}

// Start does what a real worker does before its first turn: it takes the
// transcript's lease and starts its heartbeat, creates the transcript (or
// opens it, appending the answers the spec carries and an unknown-outcome
// result for any other open call), records the attempt's start and
// appends the prompt. When the lease is busy it reports a refused outcome,
// as a real worker does, and returns false.
func (w *fakeWorker) Start() bool { return w.start() }

// StartHung is Start by a worker whose heartbeat stops at once: its
// lease says it last beat long ago.
func (w *fakeWorker) StartHung() bool {
	if !w.start() {
		return false
	}
	w.l.store.stall(w.Spec.Transcript, 250*time.Millisecond)
	return true
}

func (w *fakeWorker) start() bool {
	sp := w.Spec
	epoch, err := w.l.store.acquire(sp.Transcript, lease.Owner{AttemptID: sp.AttemptID, Agent: sp.Label, SessionID: sp.SessionID}, w.pid)
	if err != nil {
		w.Finish(ipc.Outcome{Status: StatusRefused, Code: session.CodeStillRunning, Reason: err.Error()})
		return false
	}
	w.epoch = epoch
	start := session.AttemptEntry{Phase: session.PhaseStart, AttemptID: sp.AttemptID, Epoch: epoch, Pid: w.pid}
	prompt := model.UserText(sp.Prompt)
	if sp.Create != nil {
		if err := w.l.store.create(sp.Transcript, *sp.Create, session.Entry{Attempt: &start}, session.Entry{Message: &prompt}); err != nil {
			w.l.t.Errorf("worker %s: create transcript: %v", sp.Label, err)
			return false
		}
		w.writing = true
	} else if !w.continueTranscript() || !w.write(session.Entry{Attempt: &start}, session.Entry{Message: &prompt}) {
		return false
	}
	return w.Event(event.Message{Message: prompt})
}

// continueTranscript opens an existing transcript, refusing (like a real
// worker) one whose header is not the one the supervisor validated, and
// appends the answers the spec carries and an unknown-outcome result for
// any other open call.
func (w *fakeWorker) continueTranscript() bool {
	sp := w.Spec
	tr, err := w.l.store.Open(sp.Transcript, false)
	if err != nil {
		w.l.t.Errorf("worker %s: %v", sp.Label, err)
		return false
	}
	if len(sp.ExpectHeader) > 0 {
		var want session.Header
		if json.Unmarshal(sp.ExpectHeader, &want) != nil || want.ID != tr.Header.ID {
			w.release()
			w.Finish(ipc.Outcome{Status: StatusRefused, Code: session.CodeHeaderChanged, Reason: "the transcript changed since it was validated"})
			return false
		}
	}
	msgs := slices.Clone(tr.Messages)
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, r := range m.Results {
			answered[r.ToolCallID] = true
		}
	}
	var answers []model.Message
	for _, a := range sp.Answers {
		m := a.WithRecord()
		if len(m.Results) != 1 || answered[m.Results[0].ToolCallID] {
			continue
		}
		answered[m.Results[0].ToolCallID] = true
		answers = append(answers, m)
	}
	msgs = append(msgs, answers...)
	scan := session.ScanPairs(msgs)
	if scan.State == session.Refused {
		// Like a real worker, it refuses a history it cannot continue
		// before it writes anything.
		w.release()
		w.Finish(ipc.Outcome{Status: StatusRefused, Code: session.CodeMalformed, Reason: fmt.Sprintf("the transcript %s cannot be continued: %s", sp.Transcript, scan.Reason)})
		return false
	}
	if scan.State == session.Repairable {
		answers = append(answers, session.UnknownOutcomeResults(scan.Missing)...)
	}
	w.writing = true
	var entries []session.Entry
	for i := range answers {
		entries = append(entries, session.Entry{Message: &answers[i]})
	}
	return len(entries) == 0 || w.write(entries...)
}

// appendMessage writes m to the transcript and reports it as an event.
func (w *fakeWorker) appendMessage(m model.Message) bool {
	return w.write(session.Entry{Message: &m}) && w.Event(event.Message{Message: m})
}

// Turn reports the start of model turn n.
func (w *fakeWorker) Turn(n int) bool {
	w.turns = n
	return w.Event(event.TurnStart{Turn: n})
}

// Say appends an assistant message with text that used u.
func (w *fakeWorker) Say(text string, u model.Usage) bool {
	w.usage = w.usage.Add(u)
	return w.appendMessage(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: text}}, Usage: &u})
}

// taskCall is a `task` tool call with id and JSON arguments.
func taskCallOf(id, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "task", Args: json.RawMessage(args)}
}

// CallTasks appends an assistant message making the task calls, before
// they run (as a real worker streams it).
func (w *fakeWorker) CallTasks(calls ...model.ToolCall) bool {
	return w.appendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: calls})
}

// Request asks the supervisor to run the task call callID.
func (w *fakeWorker) Request(callID, args string) bool {
	return w.send(ipc.TaskRequest{CorrelationID: corr(callID), ToolCallID: callID, Args: json.RawMessage(args)})
}

// AwaitAnswer waits for the answer to the task call callID.
func (w *fakeWorker) AwaitAnswer(callID string) (ipc.TaskAnswer, bool) {
	m, ok := w.await(func(m ipc.HostMsg) bool {
		a, ok := m.(ipc.TaskAnswer)
		return ok && a.CorrelationID == corr(callID)
	})
	if !ok {
		return ipc.TaskAnswer{}, false
	}
	return m.(ipc.TaskAnswer), true
}

// Record appends the answer to callID as its toolResult, with its
// TaskRecord beside it.
func (w *fakeWorker) Record(callID string, a ipc.TaskAnswer) bool {
	m := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: callID, ToolName: "task", Content: a.Content, IsError: a.IsError}}}
	if a.Record != nil {
		raw, err := a.Record.Encode()
		if err != nil {
			w.l.t.Errorf("worker %s: the supervisor's TaskRecord for %s does not validate: %v", w.Spec.Label, callID, err)
			return false
		}
		m.TaskRecord = raw
	}
	return w.appendMessage(m)
}

// Delegate runs one task call the way a real worker's loop does: it
// announces the call, requests it, waits for the answer and records it.
func (w *fakeWorker) Delegate(callID, args string) (ipc.TaskAnswer, bool) {
	if !w.CallTasks(taskCallOf(callID, args)) || !w.Request(callID, args) {
		return ipc.TaskAnswer{}, false
	}
	a, ok := w.AwaitAnswer(callID)
	return a, ok && w.Record(callID, a)
}

// Finish ends the attempt: it records the attempt's end (unless refused),
// frees the transcript, sends the outcome and waits for the Ack.
func (w *fakeWorker) Finish(o ipc.Outcome) bool {
	// What a real worker could not put on the wire, a fake may not send.
	if err := o.Validate(); err != nil {
		w.l.t.Errorf("worker %s: %v", w.Spec.Label, err)
	}
	if o.Status != StatusRefused && w.writing {
		u := o.Usage
		w.write(session.Entry{Attempt: &session.AttemptEntry{
			Phase: session.PhaseEnd, AttemptID: w.Spec.AttemptID, Epoch: w.epoch, Pid: w.pid,
			Status: o.Status, Reason: o.Reason, Turns: o.Turns, Usage: &u, FinalTextLen: len(o.Text), FinalText: o.Text,
		}})
	}
	o.AttemptID = w.Spec.AttemptID
	w.release()
	if !w.send(o) {
		return false
	}
	_, ok := w.await(func(m ipc.HostMsg) bool { _, ok := m.(ipc.Ack); return ok })
	return ok
}

// Complete says text and ends the attempt completed.
func (w *fakeWorker) Complete(text string, u model.Usage) bool {
	if !w.Say(text, u) {
		return false
	}
	return w.Finish(ipc.Outcome{Status: StatusCompleted, Text: text, Turns: max(w.turns, 1), Usage: w.usage})
}

// --- Scripts. ---

// completes is a child that answers text at once.
func completes(text string, u model.Usage) play {
	return func(w *fakeWorker) {
		if w.Start() && w.Turn(1) {
			w.Complete(text, u)
		}
	}
}

// cast plays main with the main script and every other worker with the
// script registered for its prompt, or child.
type cast struct {
	main     play
	byPrompt map[string]play
	child    play
}

func (c cast) play(w *fakeWorker) {
	switch {
	case w.Spec.Depth == 0 && c.main != nil:
		c.main(w)
	case c.byPrompt[w.Spec.Prompt] != nil:
		c.byPrompt[w.Spec.Prompt](w)
	case c.child != nil:
		c.child(w)
	default:
		w.l.t.Errorf("no script for worker %s (prompt %q)", w.Spec.Label, w.Spec.Prompt)
	}
}

// delegates is a main agent that makes one task call per args, in one
// message, requests them in order, records every answer and completes.
func delegates(args ...string) play {
	return func(w *fakeWorker) {
		if !w.Start() || !w.Turn(1) {
			return
		}
		var calls []model.ToolCall
		for i, a := range args {
			calls = append(calls, taskCallOf(fmt.Sprintf("call-%d", i+1), a))
		}
		if !w.CallTasks(calls...) {
			return
		}
		for _, c := range calls {
			if !w.Request(c.ID, string(c.Args)) {
				return
			}
		}
		for _, c := range calls {
			a, ok := w.AwaitAnswer(c.ID)
			if !ok || !w.Record(c.ID, a) {
				return
			}
		}
		w.Turn(2)
		w.Complete("main is done", model.Usage{Input: 1000, Output: 100})
	}
}

// --- The harness. ---

// recorder keeps every published event and wakes waiters on each.
type recorder struct {
	mu      sync.Mutex
	evs     []event.Envelope
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) sink(e event.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) all() []event.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Envelope(nil), r.evs...)
}

// wait waits until an event satisfies pred and returns it; false after
// waitLong.
func (r *recorder) wait(pred func(event.Envelope) bool) (event.Envelope, bool) {
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for _, e := range r.evs {
			if pred(e) {
				r.mu.Unlock()
				return e, true
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return event.Envelope{}, false
		}
	}
}

// waitFor is wait for the test goroutine: it fails the test on timeout.
func (r *recorder) waitFor(t testing.TB, what string, pred func(event.Envelope) bool) event.Envelope {
	t.Helper()
	e, ok := r.wait(pred)
	if !ok {
		t.Fatalf("no %s within %s; events:\n%s", what, waitLong, r.dump())
	}
	return e
}

// dump renders the events for a failure message.
func (r *recorder) dump() string {
	s := ""
	for _, e := range r.all() {
		b, _ := json.Marshal(e)
		s += string(b) + "\n"
	}
	return s
}

// is returns a predicate matching events of body type T about agent ("" =
// any agent).
func is[T event.Event](agent string) func(event.Envelope) bool {
	return func(e event.Envelope) bool {
		_, ok := e.Body.(T)
		return ok && (agent == "" || e.Agent == agent)
	}
}

// bodies returns the bodies of type T, in order, with their envelopes.
func bodies[T event.Event](evs []event.Envelope) ([]T, []event.Envelope) {
	var out []T
	var envs []event.Envelope
	for _, e := range evs {
		if b, ok := e.Body.(T); ok {
			out = append(out, b)
			envs = append(envs, e)
		}
	}
	return out, envs
}

// harness is an Orchestrator over a fake launcher, with its events.
type harness struct {
	o   *Orchestrator
	l   *fakeLauncher
	rec *recorder
	cfg Config
	// store holds every transcript and lease of the run; ws its
	// worktrees (nil when the test brought its own Workspaces).
	store *memStore
	ws    *memWorkspaces
}

// newHarness fills cfg's blanks for a test (an in-memory Store and
// Workspaces, a temporary INK_HOME and cwd that nothing is written to, the
// test binding, a fast heartbeat) and supervises workers played by p.
func newHarness(t testing.TB, cfg Config, p play) *harness {
	t.Helper()
	if cfg.InkHome == "" {
		cfg.InkHome = t.TempDir()
	}
	if cfg.Cwd == "" {
		cfg.Cwd = t.TempDir()
	}
	if cfg.Binding == (model.Binding{}) {
		cfg.Binding = testBinding
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 25 * time.Millisecond
	}
	// Harnesses of one INK_HOME share its transcripts and worktrees, as
	// runs of one machine share its files.
	home := memHomeOf(t, cfg.InkHome)
	if cfg.Store == nil {
		cfg.Store = home.store
	}
	if cfg.Workspaces == nil {
		cfg.Workspaces = home.ws
	}
	store, _ := cfg.Store.(*memStore)
	if store == nil {
		store = newMemStore() // the workers' own, beside a store under test
	}
	l := newFakeLauncher(t, store, p)
	rec := newRecorder()
	if cfg.RemoteLauncher == remoteFake {
		// The same fake plays the remote workers: its specs say which
		// attempts were sent there.
		cfg.RemoteLauncher = l
	}
	cfg.Launcher, cfg.Sink = l, rec.sink
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := cfg.Workspaces.(*memWorkspaces)
	return &harness{o: o, l: l, rec: rec, cfg: cfg, store: store, ws: ws}
}

// remoteFake, as Config.RemoteLauncher, makes newHarness's fake launcher
// the remote launcher too.
var remoteFake Launcher = &fakeLauncher{}

// run runs the main agent and fails the test on an error.
func (h *harness) run(t testing.TB, opts RunOptions) RunResult {
	t.Helper()
	res, err := h.o.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// task runs `ink task` and fails the test on an error.
func (h *harness) task(t testing.TB, opts TaskOptions) TaskResult {
	t.Helper()
	res, err := h.o.Task(context.Background(), opts)
	if err != nil {
		t.Fatalf("Task: %v", err)
	}
	return res
}
