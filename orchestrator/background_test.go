package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/taskargs"
)

// scriptedLauncher starts in-memory workers whose behaviour is a function
// of their attempt spec: no process, no gRPC, the supervisor's own code.
type scriptedLauncher struct {
	behave func(w *scriptedWorker)
	pids   atomic.Int64

	mu      sync.Mutex
	workers []*scriptedWorker
}

var _ Launcher = (*scriptedLauncher)(nil)

func (l *scriptedLauncher) Launch(ctx context.Context, spec ipc.AttemptSpec) (Worker, error) {
	w := &scriptedWorker{spec: spec, pid: int(1000 + l.pids.Add(1)), in: make(chan ipc.HostMsg, 64), out: make(chan ipc.WorkerMsg, 64), closed: make(chan struct{})}
	w.beats = beatEvery(spec.HeartbeatInterval, w.closed, nil, nil)
	l.mu.Lock()
	l.workers = append(l.workers, w)
	l.mu.Unlock()
	go l.behave(w)
	return w, nil
}

// byPrompt returns the worker launched with prompt, waiting for it (see
// eventually).
func (l *scriptedLauncher) byPrompt(t *testing.T, prompt string) *scriptedWorker {
	t.Helper()
	var found *scriptedWorker
	eventually(t, fmt.Sprintf("a worker launched with prompt %q", prompt), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, w := range l.workers {
			if w.spec.Prompt == prompt {
				found = w
				return true
			}
		}
		return false
	})
	return found
}

// scriptedWorker is one in-memory worker: what the supervisor sends arrives
// on in, what it receives is taken from out.
type scriptedWorker struct {
	spec ipc.AttemptSpec
	pid  int
	in   chan ipc.HostMsg
	out  chan ipc.WorkerMsg
	seq  atomic.Uint64

	beats     <-chan ipc.Heartbeat
	closeOnce sync.Once
	closed    chan struct{}
}

var _ Worker = (*scriptedWorker)(nil)

func (w *scriptedWorker) Pid() int { return w.pid }
func (w *scriptedWorker) Send(m ipc.HostMsg) error {
	select {
	case w.in <- m:
		return nil
	case <-w.closed:
		return io.ErrClosedPipe
	}
}
func (w *scriptedWorker) Recv() (ipc.WorkerMsg, error) {
	select {
	case m := <-w.out:
		return m, nil
	case <-w.closed:
		return nil, io.EOF
	}
}
func (w *scriptedWorker) Beats() <-chan ipc.Heartbeat { return w.beats }
func (w *scriptedWorker) Close()                      { w.closeOnce.Do(func() { close(w.closed) }) }
func (w *scriptedWorker) Kill()                       { w.Close() }
func (w *scriptedWorker) Exit(time.Duration) (ExitState, bool) {
	return ExitState{Signal: "SIGKILL"}, true
}

func (w *scriptedWorker) event(body event.Event) {
	w.out <- ipc.Event{Seq: w.seq.Add(1), Body: body}
}

func (w *scriptedWorker) outcome(o ipc.Outcome) {
	o.AttemptID = w.spec.AttemptID
	w.out <- o
}

// runUntil plays a child: a turn with a bash call, then it waits for
// release or a Cancel, and ends with the cancel's status or completed.
func (w *scriptedWorker) runUntil(release <-chan struct{}, text string) {
	w.event(event.TurnStart{Turn: 1})
	w.event(event.ToolStart{ID: "c1", Name: "bash"})
	w.event(event.Message{Message: model.Message{Role: model.RoleAssistant, Usage: &model.Usage{Input: 1500, Output: 20}}})
	select {
	case <-release:
		w.event(event.ToolEnd{ID: "c1", Name: "bash"})
		w.outcome(ipc.Outcome{Status: StatusCompleted, Text: text, Turns: 2, Usage: model.Usage{Input: 3000, Output: 40}})
	case m := <-w.in:
		c, ok := m.(ipc.Cancel)
		if !ok {
			w.outcome(ipc.Outcome{Status: StatusCrash, Reason: fmt.Sprintf("unexpected %T", m)})
			break
		}
		status := c.Status
		if status == StatusInterrupted {
			c.Reason = ipc.HostLost
		}
		w.outcome(ipc.Outcome{Status: status, Reason: c.Reason, Turns: 1, Usage: model.Usage{Input: 1500, Output: 20}})
	}
	<-w.closed
}

// childBehaviour runs every child until its prompt's release channel closes.
type childBehaviour struct {
	mu       sync.Mutex
	releases map[string]chan struct{}
}

func (b *childBehaviour) release(prompt string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch(prompt))
}

func (b *childBehaviour) ch(prompt string) chan struct{} {
	if b.releases == nil {
		b.releases = map[string]chan struct{}{}
	}
	c := b.releases[prompt]
	if c == nil {
		c = make(chan struct{})
		b.releases[prompt] = c
	}
	return c
}

func (b *childBehaviour) run(w *scriptedWorker) {
	b.mu.Lock()
	c := b.ch(w.spec.Prompt)
	b.mu.Unlock()
	w.runUntil(c, "answer to "+w.spec.Prompt)
}

// inMemory returns an orchestrator whose workers are scripted.
func inMemory(t *testing.T, behave func(*scriptedWorker), maxParallel int) (*Orchestrator, *scriptedLauncher, *eventLog) {
	t.Helper()
	l := &scriptedLauncher{behave: behave}
	log := &eventLog{}
	o := newTestOrchestrator(t, Config{Launcher: l, MaxParallel: maxParallel, MaxDepth: 1, Grace: 5 * time.Second,
		Binding: model.Binding{Provider: "script", Model: "/dev/null"}, Sink: log.add})
	return o, l, log
}

// eventLog keeps the published events.
type eventLog struct {
	mu  sync.Mutex
	evs []event.Envelope
}

func (l *eventLog) add(e event.Envelope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

func (l *eventLog) bodies() []event.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []event.Event
	for _, e := range l.evs {
		out = append(out, e.Body)
	}
	return out
}

func args(prompt string) TaskArgs { return TaskArgs{Prompt: prompt} }

// waitState waits until the child of p with id reaches state.
func waitState(t *testing.T, p *Parent, id, state string) ChildStatus {
	t.Helper()
	return waitStatus(t, p, id, func(st ChildStatus) bool { return st.State == state })
}

// waitStatus waits until the status of the child of p with id satisfies ok
// (see eventually).
func waitStatus(t *testing.T, p *Parent, id string, ok func(ChildStatus) bool) ChildStatus {
	t.Helper()
	var st ChildStatus
	eventually(t, fmt.Sprintf("child %s in the awaited status", id), func() bool {
		res := p.Status(taskargs.StatusArgs{IDs: []string{id}})
		if len(res.Children) == 1 && ok(res.Children[0]) {
			st = res.Children[0]
			return true
		}
		return false
	})
	return st
}

// TestParentBackgroundBatch: a batch started in the background answers at
// once with one started block per task; the children show in task_status
// with their live turn, tool and tokens; task_wait returns their results
// in call order and records them once in the session.
func TestParentBackgroundBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, _, log := inMemory(t, kids.run, 8)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)

		res := p.Task(context.Background(), Call{Tasks: []TaskArgs{args("alpha"), args("beta")}, Background: true, Batch: true})
		if res.IsError || len(res.Tasks) != 2 || !strings.Contains(res.Content, "2 tasks were started in the background") {
			t.Fatalf("background batch = %+v", res)
		}
		var ids []string
		for _, tr := range res.Tasks {
			if tr.Status != "started" || !strings.Contains(tr.Content, "started in the background") {
				t.Fatalf("task result %+v", tr)
			}
			ids = append(ids, tr.Content[len("child "):strings.Index(tr.Content, " started")])
		}
		// The child's events reach its status after its worker started.
		st := waitStatus(t, p, ids[0], func(st ChildStatus) bool { return st.State == ChildRunning && st.Usage.Input > 0 })
		if st.Turns != 1 || st.Tool != "bash" || st.Usage.Input != 1500 || !st.Background || st.Label != "mcp/1" {
			t.Fatalf("live status = %+v", st)
		}
		if line := StatusLine(st); !strings.Contains(line, "turn 1") || !strings.Contains(line, "running bash") || !strings.Contains(line, "1.5k in") {
			t.Fatalf("status line %q", line)
		}

		// A short wait reports the children still running, collecting nothing.
		zero := int64(0)
		early := p.Wait(context.Background(), taskargs.WaitArgs{TimeoutMs: &zero})
		if early.IsError || len(early.Tasks) != 0 || len(early.Children) != 2 || !strings.Contains(early.Content, "Still running after 0s") {
			t.Fatalf("early wait = %+v", early)
		}
		// The second ends first; results still come in call order.
		kids.release("beta")
		kids.release("alpha")
		done := p.Wait(context.Background(), taskargs.WaitArgs{})
		if done.IsError || len(done.Tasks) != 2 {
			t.Fatalf("wait = %+v", done)
		}
		if a, b := strings.Index(done.Content, "answer to alpha"), strings.Index(done.Content, "answer to beta"); a < 0 || b < a {
			t.Fatalf("results not in call order:\n%s", done.Content)
		}
		again := p.Wait(context.Background(), taskargs.WaitArgs{})
		if !strings.Contains(again.Content, "no background child to wait for") {
			t.Fatalf("second wait = %s", again.Content)
		}
		// Naming one shows its result again, without a second record.
		named := p.Wait(context.Background(), taskargs.WaitArgs{IDs: []string{ids[1]}})
		if !strings.Contains(named.Content, "answer to beta") {
			t.Fatalf("named wait = %s", named.Content)
		}

		tr, err := o.store.Open(p.Transcript(), false)
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		recorded := map[string]int{}
		for _, m := range tr.Messages {
			for _, c := range m.ToolCalls {
				tools = append(tools, c.Name)
			}
			for _, r := range session.TaskRecordsOf(m) {
				recorded[r.ChildID]++
			}
		}
		if strings.Join(tools, ",") != "task,task_wait" || recorded[ids[0]] != 1 || recorded[ids[1]] != 1 {
			t.Fatalf("session calls %v, records %v", tools, recorded)
		}
		background := 0
		for _, b := range log.bodies() {
			if s, ok := b.(event.TaskStart); ok && s.Background {
				background++
			}
		}
		if background != 2 {
			t.Fatalf("%d task.start events say background, want 2", background)
		}
	})
}

// TestParentCancel: task_cancel stops a running child with the cancel's
// reason and returns its result with its record; cancelling it again says
// it had already ended.
func TestParentCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, l, _ := inMemory(t, kids.run, 8)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)
		res := p.Task(context.Background(), Call{Tasks: []TaskArgs{args("long")}, Background: true})
		id := res.Tasks[0].Content[len("child "):strings.Index(res.Tasks[0].Content, " started")]
		waitState(t, p, id, ChildRunning)
		out := p.Cancel(context.Background(), taskargs.CancelArgs{ID: id})
		if out.IsError || len(out.Tasks) != 1 || out.Tasks[0].Status != StatusAborted || !strings.Contains(out.Content, "stopped") {
			t.Fatalf("cancel = %+v", out)
		}
		if !strings.Contains(out.Tasks[0].Record.Reason, "cancelled with task_cancel") {
			t.Fatalf("record reason %q", out.Tasks[0].Record.Reason)
		}
		_ = l.byPrompt(t, "long")
		again := p.Cancel(context.Background(), taskargs.CancelArgs{ID: id})
		if !strings.Contains(again.Content, "had already ended (aborted)") {
			t.Fatalf("second cancel = %s", again.Content)
		}
	})
}

// TestParentUnknownIDs: status, wait and cancel of an id this session did
// not start are errors that list the children it did.
func TestParentUnknownIDs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, _, _ := inMemory(t, kids.run, 8)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)
		if r := p.Wait(context.Background(), taskargs.WaitArgs{IDs: []string{"01nope"}}); !r.IsError || !strings.Contains(r.Content, "No child has been started here yet") {
			t.Fatalf("wait of an unknown id with no children: %+v", r)
		}
		res := p.Task(context.Background(), Call{Tasks: []TaskArgs{args("one")}, Background: true})
		id := res.Tasks[0].Content[len("child "):strings.Index(res.Tasks[0].Content, " started")]
		for name, r := range map[string]CallResult{
			"status": p.Status(taskargs.StatusArgs{IDs: []string{"01nope"}}),
			"wait":   p.Wait(context.Background(), taskargs.WaitArgs{IDs: []string{"01nope"}}),
			"cancel": p.Cancel(context.Background(), taskargs.CancelArgs{ID: "01nope"}),
		} {
			if !r.IsError || !strings.Contains(r.Content, `no child "01nope" was started here`) || !strings.Contains(r.Content, id+" (mcp/1") {
				t.Errorf("%s of an unknown id: %+v", name, r)
			}
		}
		kids.release("one")
	})
}

// TestParentCloseHostLost: closing a parent as host lost stops its
// foreground and background children with Cancel{interrupted}; each
// records interrupted / host lost, and Close returns once they ended.
func TestParentCloseHostLost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, l, _ := inMemory(t, kids.run, 8)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		bg := p.Task(context.Background(), Call{Tasks: []TaskArgs{args("bg")}, Background: true})
		bgID := bg.Tasks[0].Content[len("child "):strings.Index(bg.Tasks[0].Content, " started")]
		fg := make(chan CallResult, 1)
		go func() { fg <- p.Task(context.Background(), Call{Tasks: []TaskArgs{args("fg")}}) }()
		waitState(t, p, bgID, ChildRunning)
		l.byPrompt(t, "fg")
		p.Close(ErrHostLost)
		r := <-fg
		if len(r.Tasks) != 1 || r.Tasks[0].Status != StatusInterrupted || r.Tasks[0].Record.Reason != HostLost {
			t.Fatalf("foreground result after host loss = %+v", r)
		}
		st := p.ar.registry().get(bgID).status()
		if st.State != ChildEnded || st.Status != StatusInterrupted {
			t.Fatalf("background child after host loss = %+v", st)
		}
		if after := p.Task(context.Background(), Call{Tasks: []TaskArgs{args("late")}}); !after.IsError || !strings.Contains(after.Content, "this session has ended") {
			t.Fatalf("a call after Close = %+v", after)
		}
	})
}

// TestParentClientCancel: cancelling a foreground call's context with a
// stop cause aborts its children with that reason.
func TestParentClientCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, l, _ := inMemory(t, kids.run, 8)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)
		ctx, cancel := context.WithCancelCause(context.Background())
		out := make(chan CallResult, 1)
		go func() { out <- p.Task(ctx, Call{Tasks: []TaskArgs{args("x")}}) }()
		l.byPrompt(t, "x")
		cancel(StopCause(StatusAborted, "cancelled by the MCP client"))
		r := <-out
		if r.Tasks[0].Status != StatusAborted || r.Tasks[0].Record.Reason != "cancelled by the MCP client" {
			t.Fatalf("result = %+v", r.Tasks[0])
		}
	})
}

// TestParentBatchWindow: a foreground batch larger than the window runs in
// it, in call order; the child beyond it is queued, and progress watchers
// see each child start, run and end.
func TestParentBatchWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, _, _ := inMemory(t, kids.run, 1)
		p := o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)
		var mu sync.Mutex
		seen := map[string][]string{}
		progress := func(st ChildStatus) {
			mu.Lock()
			defer mu.Unlock()
			seen[st.Label] = append(seen[st.Label], st.State)
		}
		out := make(chan CallResult, 1)
		go func() {
			out <- p.Task(context.Background(), Call{Tasks: []TaskArgs{args("first"), args("second")}, Batch: true, Progress: progress})
		}()
		// One child runs, the other is queued behind the window.
		eventually(t, "a child queued behind the window of one", func() bool {
			mu.Lock()
			defer mu.Unlock()
			states := strings.Join(seen["mcp/1"], ",") + ";" + strings.Join(seen["mcp/2"], ",")
			return strings.Contains(states, ChildQueued) && strings.Contains(states, ChildRunning)
		})
		kids.release("first")
		kids.release("second")
		r := <-out
		if r.IsError || !strings.Contains(r.Content, "── task 1 of 2 (mcp/1 child") || strings.Index(r.Content, "answer to first") > strings.Index(r.Content, "answer to second") {
			t.Fatalf("batch result:\n%s", r.Content)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, label := range []string{"mcp/1", "mcp/2"} {
			states := strings.Join(seen[label], ",")
			if !strings.Contains(states, ChildRunning) || !strings.HasSuffix(states, ChildEnded) {
				t.Fatalf("progress of %s = %s", label, states)
			}
		}
		tr, err := o.store.Open(p.Transcript(), false)
		if err != nil {
			t.Fatal(err)
		}
		recs := 0
		for _, m := range tr.Messages {
			recs += len(m.TaskRecords)
		}
		if recs != 2 {
			t.Fatalf("the batch's result carries %d records, want 2", recs)
		}
	})
}

// TestAgentBackgroundOps: an agent's worker starts a child in the
// background and follows it over the wire: the task answer comes at once
// with the child's id, pending names it, status reports it, wait collects
// it with its record, and pending is then empty.
func TestAgentBackgroundOps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		answers := make(chan []ipc.TaskAnswer, 1)
		var main func(w *scriptedWorker)
		main = func(w *scriptedWorker) {
			var got []ipc.TaskAnswer
			ask := func(op, args string) ipc.TaskAnswer {
				w.out <- ipc.TaskRequest{CorrelationID: fmt.Sprint(len(got)), ToolCallID: "call-" + op, Args: json.RawMessage(args), Op: op}
				for m := range w.in {
					if a, ok := m.(ipc.TaskAnswer); ok {
						got = append(got, a)
						return a
					}
				}
				return ipc.TaskAnswer{}
			}
			started := ask(ipc.OpTask, `{"prompt":"bg child","background":true}`)
			id := strings.Fields(started.Content)[1]
			ask(ipc.OpPending, ``)
			ask(ipc.OpStatus, `{"ids":["`+id+`"]}`)
			kids.release("bg child")
			ask(ipc.OpWait, `{}`)
			ask(ipc.OpPending, ``)
			ask(ipc.OpCancel, `{"id":"`+id+`"}`)
			ask(ipc.OpWait, `{"ids":["01nope"]}`)
			answers <- got
			w.outcome(ipc.Outcome{Status: StatusCompleted, Text: "done"})
			<-w.closed
		}
		o, _, _ := inMemory(t, func(w *scriptedWorker) {
			if w.spec.Depth == 0 {
				main(w)
				return
			}
			kids.run(w)
		}, 8)
		res, err := o.Run(context.Background(), RunOptions{Prompt: "go"})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("run = %+v, %v", res, err)
		}
		got := <-answers
		if len(got) != 7 {
			t.Fatalf("%d answers", len(got))
		}
		id := strings.Fields(got[0].Content)[1]
		checks := []struct {
			name string
			ok   bool
		}{
			{"start answers at once without a record", strings.Contains(got[0].Content, "started in the background") && got[0].Record == nil && !got[0].IsError},
			{"pending names the child", len(got[1].Running) == 1 && got[1].Running[0] == id},
			{"status reports it", strings.Contains(got[2].Content, id) && !got[2].IsError},
			{"wait collects it with its record", strings.Contains(got[3].Content, "answer to bg child") && len(got[3].Records) == 1 && got[3].Records[0].ChildID == id},
			{"nothing pending after", len(got[4].Running) == 0},
			{"cancel of an ended child", strings.Contains(got[5].Content, "had already ended (completed)") && len(got[5].Records) == 0},
			{"wait of an unknown id", got[6].IsError && strings.Contains(got[6].Content, `no child "01nope"`)},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("%s: answers %+v", c.name, got)
			}
		}
	})
}

// TestAgentEndCancelsBackground: background children still running when
// their parent's attempt ends are cancelled with it.
func TestAgentEndCancelsBackground(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		kids := &childBehaviour{}
		o, l, log := inMemory(t, func(w *scriptedWorker) {
			if w.spec.Depth > 0 {
				kids.run(w)
				return
			}
			w.out <- ipc.TaskRequest{CorrelationID: "1", ToolCallID: "c", Args: json.RawMessage(`{"prompt":"orphan","background":true}`)}
			<-w.in // the start answer
			w.outcome(ipc.Outcome{Status: StatusCompleted, Text: "left early"})
			<-w.closed
		}, 8)
		res, err := o.Run(context.Background(), RunOptions{Prompt: "go"})
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("run = %+v, %v", res, err)
		}
		child := l.byPrompt(t, "orphan")
		select {
		case <-child.closed:
		default:
			t.Fatal("Run returned while its background child still ran")
		}
		var end *event.TaskEnd
		for _, b := range log.bodies() {
			if e, ok := b.(event.TaskEnd); ok {
				end = &e
			}
		}
		if end == nil || end.Status != StatusAborted || !end.Background {
			t.Fatalf("the orphan's task.end = %+v, want aborted in the background", end)
		}
	})
}
