package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/durable/crashfs"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// crashScript is a delegation: the main agent calls task, its child runs
// ls and answers, the main agent answers.
const crashScript = `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "list the files"}}]
  - when: {depth: 0, tool: task}
    reply: {text: "main done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: ls, args: {path: "."}}]
  - when: {depth: 1, tool: ls}
    reply: {text: "child done"}
`

// acks are the facts a host was told while the machine was up, which must
// survive its crash: each names a transcript and what it must hold.
type acks struct {
	mu    sync.Mutex
	fsys  *crashfs.FS
	calls map[string]string // task call id -> the transcript that holds it
	ended map[string]string // attempt id -> its transcript (an end entry)
	msgs  map[string]string // toolResult call id -> its transcript
	child map[string]string // child id -> the task call that started it
}

// ack records fact f unless the machine is down already.
func (k *acks) ack(f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.fsys.Crashed() {
		f()
	}
}

// crashHost is the supervisor of one attempt in this process: it records
// what the attempt tells it and runs the children of its task calls as
// attempts of their own, on the same filesystem.
type crashHost struct {
	t      *testing.T
	k      *acks
	spec   ipc.AttemptSpec
	in     chan ipc.HostMsg
	closed chan struct{}
	once   sync.Once
	wg     *sync.WaitGroup
	script string
}

func (h *crashHost) Recv() (ipc.HostMsg, error) {
	select {
	case m := <-h.in:
		return m, nil
	case <-h.closed:
		return nil, errors.New("host closed")
	}
}

func (h *crashHost) Send(m ipc.WorkerMsg) error {
	switch m := m.(type) {
	case ipc.TaskRequest:
		if m.Op != ipc.OpTask {
			h.in <- ipc.TaskAnswer{CorrelationID: m.CorrelationID, Content: "not in this test", IsError: true}
			return nil
		}
		h.k.ack(func() { h.k.calls[m.ToolCallID] = h.spec.Transcript })
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.in <- h.runChild(m)
		}()
	case ipc.Event:
		if msg, ok := m.Body.(event.Message); ok && msg.Message.Role == model.RoleToolResult {
			for _, r := range msg.Message.Results {
				h.k.ack(func() { h.k.msgs[r.ToolCallID] = h.spec.Transcript })
			}
		}
	}
	return nil
}

// runChild runs the child of a task call to its end and answers the call.
func (h *crashHost) runChild(req ipc.TaskRequest) ipc.TaskAnswer {
	id := session.NewID()
	h.k.mu.Lock()
	h.k.child[id] = req.ToolCallID
	h.k.mu.Unlock()
	var args struct{ Prompt string }
	_ = json.Unmarshal(req.Args, &args)
	path := session.ChildPath(h.spec.Transcript, id)
	spec := childSpec(h.spec, id, path, args.Prompt)
	out := runCrashAttempt(h.t, h.k, spec, h.wg)
	rec := session.TaskRecord{Version: 1, AttemptID: spec.AttemptID, TaskToolCallID: req.ToolCallID, ParentSessionID: h.spec.SessionID,
		ChildID: id, Launched: true, Status: out.Status, Reason: out.Reason, Turns: out.Turns}
	return ipc.TaskAnswer{CorrelationID: req.CorrelationID, Content: string(out.Status) + ": " + out.Text + "\nchild session id: " + id, IsError: out.Status != session.StatusCompleted, Record: &rec}
}

// runCrashAttempt runs spec in this process on k's filesystem and returns
// its outcome, acknowledging its end when the machine was up to see it.
func runCrashAttempt(t *testing.T, k *acks, spec ipc.AttemptSpec, wg *sync.WaitGroup) outcome {
	h := &crashHost{t: t, k: k, spec: spec, in: make(chan ipc.HostMsg, 8), closed: make(chan struct{}), wg: wg}
	a := newAttempt(spec, h, slog.New(slog.DiscardHandler))
	a.fsys = k.fsys
	out := a.run(context.Background())
	if out.Epoch > 0 {
		k.ack(func() { k.ended[spec.AttemptID] = spec.Transcript })
	}
	h.once.Do(func() { close(h.closed) })
	return out
}

func mainSpec(home, proj, script string) ipc.AttemptSpec {
	id := session.NewID()
	return ipc.AttemptSpec{
		InkHome: home, Transcript: session.MainPath(home, proj, id), AttemptID: session.NewID(), SessionID: id, Label: "main",
		Binding: model.Binding{Provider: "script", Model: script}, Tools: []string{"task"}, Cwd: proj, Root: proj,
		Prompt: "go", HeartbeatInterval: time.Hour,
		Create: &session.Header{Type: "session", Version: session.Version, ID: id, CreatedAt: time.Now().UTC(), Cwd: proj},
	}
}

func childSpec(parent ipc.AttemptSpec, id, path, prompt string) ipc.AttemptSpec {
	return ipc.AttemptSpec{
		InkHome: parent.InkHome, Transcript: path, AttemptID: session.NewID(), SessionID: id, Label: "main/1",
		Binding: parent.Binding, Tools: []string{"ls"}, Cwd: parent.Cwd, Root: parent.Root, Prompt: prompt, Depth: 1,
		HeartbeatInterval: time.Hour,
		Create:            &session.Header{Type: "session", Version: session.Version, ID: id, CreatedAt: time.Now().UTC(), Cwd: parent.Cwd, Parent: parent.SessionID},
	}
}

// TestCrashConsistencyOfADelegation runs a delegation — the task call,
// the child's start, its tool result, both ends — on a filesystem that
// keeps only what was synced, crashes the machine after every durable
// point in turn (in both of the crash modes), and checks that what
// survived recovers consistently: no child without the task call that
// started it, no entry lost that a host was told of, every surviving
// transcript continued under a larger epoch, every surviving child
// resumable (a child lost mid-attempt as interrupted).
func TestCrashConsistencyOfADelegation(t *testing.T) {
	proj := t.TempDir()
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(crashScript), 0o600); err != nil {
		t.Fatal(err)
	}
	// Crash after each sync in turn, until a run ends before its crash
	// point: that run saw every durable point and must have delegated.
	for _, mode := range []crashfs.Mode{crashfs.Strict, crashfs.Journaled} {
		for at := 0; ; at++ {
			k, crashed := crashRun(t, mode, proj, script, at)
			if crashed {
				continue
			}
			if len(k.child) != 1 || len(k.ended) != 2 || len(k.calls) != 1 {
				t.Fatalf("mode %d: the run without a crash did not delegate: %d children, %d ends, %d task calls", mode, len(k.child), len(k.ended), len(k.calls))
			}
			t.Logf("mode %d: crashed after each of %d durable points", mode, at)
			break
		}
	}
}

// crashRun runs the delegation, crashing after the at-th sync, restores
// what survived and checks it. It returns what the hosts were told and
// whether the crash happened (false: the run had fewer durable points).
func crashRun(t *testing.T, mode crashfs.Mode, proj, script string, at int) (*acks, bool) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	fsys, err := crashfs.New(home)
	if err != nil {
		t.Fatal(err)
	}
	fsys.Mode = mode
	var n int
	var nmu sync.Mutex
	var trace []string
	fsys.OnSync = func(op crashfs.Op) {
		nmu.Lock()
		n++
		trace = append(trace, op.String())
		hit := n == at
		nmu.Unlock()
		if hit {
			fsys.Crash()
		}
	}
	if at == 0 {
		fsys.Crash()
	}
	k := &acks{fsys: fsys, calls: map[string]string{}, ended: map[string]string{}, msgs: map[string]string{}, child: map[string]string{}}
	var wg sync.WaitGroup
	spec := mainSpec(home, proj, script)
	runCrashAttempt(t, k, spec, &wg)
	wg.Wait()
	crashed := fsys.Crashed()
	if err := fsys.Restore(); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("mode %d, crash after sync %d (%s)", mode, at, strings.Join(trace, ", "))
	checkRecovery(t, where, k, spec)
	return k, crashed
}

// checkRecovery checks what survived a crash.
func checkRecovery(t *testing.T, where string, k *acks, spec ipc.AttemptSpec) {
	t.Helper()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Errorf("%s: %s", where, fmt.Sprintf(format, a...))
	}
	// What each surviving transcript holds.
	type held struct {
		calls, results map[string]bool
		ends           map[string]bool
		epoch          int64
		unfinished     bool
	}
	read := func(path string) *held {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		tr, err := session.ReadForResume(path)
		if errors.Is(err, session.ErrNotStarted) {
			return nil
		}
		if err != nil {
			fail("%s does not read after the crash: %v", path, err)
			return nil
		}
		// Every call and result of the file (Skeleton holds only the
		// model's history).
		full, err := session.Open(path)
		if err != nil {
			fail("%s: %v", path, err)
			return nil
		}
		h := &held{calls: map[string]bool{}, results: map[string]bool{}, ends: map[string]bool{}}
		for _, m := range full.Messages {
			for _, c := range m.ToolCalls {
				h.calls[c.ID] = true
			}
			for _, r := range m.Results {
				h.results[r.ToolCallID] = true
			}
		}
		for _, a := range full.Attempts() {
			h.epoch = max(h.epoch, a.Epoch)
			if a.Phase == session.PhaseEnd {
				h.ends[a.AttemptID] = true
			}
		}
		_, h.unfinished = tr.Unfinished()
		return h
	}
	parent := read(spec.Transcript)
	kids := map[string]*held{}
	for id := range k.child {
		if h := read(session.ChildPath(spec.Transcript, id)); h != nil {
			kids[id] = h
		}
	}
	// No orphan: a surviving child's task call survived in its parent.
	for id, call := range k.child {
		if kids[id] != nil && (parent == nil || !parent.calls[call]) {
			fail("child %s survived, but the task call %s that started it did not: an orphan", id, call)
		}
	}
	// Nothing acknowledged is lost.
	byPath := func(p string) *held {
		if p == spec.Transcript {
			return parent
		}
		for id, h := range kids {
			if session.ChildPath(spec.Transcript, id) == p {
				return h
			}
		}
		return nil
	}
	for call, p := range k.calls {
		if h := byPath(p); h == nil || !h.calls[call] {
			fail("the task call %s was sent to the host but is not in %s", call, p)
		}
	}
	for call, p := range k.msgs {
		if h := byPath(p); h == nil || !h.results[call] {
			fail("the result of %s was reported but is not in %s", call, p)
		}
	}
	for att, p := range k.ended {
		if h := byPath(p); h == nil || !h.ends[att] {
			fail("attempt %s reported its outcome but its end is not in %s", att, p)
		}
	}
	// Every surviving transcript continues, under a larger epoch; a child
	// lost mid-attempt is resumable, and its resume records the end it
	// missed.
	cont := func(path string, h *held) {
		l, err := lease.Acquire(path, lease.Owner{AttemptID: session.NewID()})
		if err != nil {
			fail("lease on %s: %v", path, err)
			return
		}
		defer l.Release()
		if l.Epoch() <= h.epoch {
			fail("%s continues under epoch %d, but epoch %d was used", path, l.Epoch(), h.epoch)
		}
		if h.unfinished && (lease.Status{State: lease.Free, Meta: l.Previous()}).Lost() == lease.NotLost {
			fail("%s: its lost attempt is not known to be lost", path)
		}
		a, _ := testAttempt(ipc.AttemptSpec{Transcript: path, Repair: true})
		w, _, refused := a.openTranscript(l, session.AttemptEntry{Phase: session.PhaseStart, AttemptID: l.Owner().AttemptID, Epoch: l.Epoch()}, model.UserText("go on"))
		if refused != nil {
			fail("%s cannot be continued: %s", path, refused.Reason)
			return
		}
		w.Close()
		if h.unfinished {
			tr, err := session.ReadForResume(path)
			if err != nil {
				fail("%s after its resume: %v", path, err)
				return
			}
			if end, ok := tr.LastAttemptEnd(); !ok || end.Status != session.StatusInterrupted || end.Reason != ipc.HostLost {
				fail("%s: the lost attempt's end was not recorded as interrupted / host lost: %+v", path, end)
			}
		}
	}
	if parent != nil {
		cont(spec.Transcript, parent)
	}
	for id, h := range kids {
		cont(session.ChildPath(spec.Transcript, id), h)
	}
}
