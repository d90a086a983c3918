package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/local"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// TestRunReportsEveryStepInOrder: `ink run` with one child reports, in one
// numbered sequence, the run's start, the main worker's start, each
// worker's events with the worker's own numbers, the child's start and
// end, and the run's end with every agent's usage; the main agent gets the
// child's answer and a TaskRecord, and every worker's outcome is
// acknowledged before it is closed.
func TestRunReportsEveryStepInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 1, MaxParallel: 4}, cast{
			main:  delegates(`{"prompt":"look around"}`),
			child: completes("found it", model.Usage{Input: 50, Output: 5}),
		}.play)
		res := h.run(t, RunOptions{Prompt: "fix the bug"})

		if res.Status != StatusCompleted || res.Text != "main is done" || res.Turns != 2 {
			t.Fatalf("result = %+v", res)
		}
		wantUsage := map[string]model.Usage{"main": {Input: 1000, Output: 100}, "main/1": {Input: 50, Output: 5}}
		if !reflect.DeepEqual(res.PerAgent, wantUsage) || res.Usage != wantUsage["main"] {
			t.Fatalf("usage = %+v / %+v, want %+v", res.Usage, res.PerAgent, wantUsage)
		}
		main, child := h.l.byLabel("main"), h.l.byLabel("main/1")
		if main == nil || child == nil || len(h.l.all()) != 2 {
			t.Fatalf("workers launched: %d", len(h.l.all()))
		}

		evs := h.rec.all()
		for i, e := range evs {
			if e.Seq != uint64(i+1) || e.Time.IsZero() {
				t.Fatalf("event %d has seq %d, time %v; want consecutive numbers from 1", i, e.Seq, e.Time)
			}
		}
		kinds := func(agent string) []string {
			var out []string
			for _, e := range evs {
				if e.Agent == agent {
					out = append(out, e.Body.Kind())
				}
			}
			return out
		}
		if got, want := kinds("main"), []string{"run.start", "worker.start", "message", "turn.start", "message", "message", "turn.start", "message", "run.end"}; !reflect.DeepEqual(got, want) {
			t.Errorf("main's events = %v, want %v", got, want)
		}
		if got, want := kinds("main/1"), []string{"task.start", "message", "turn.start", "message", "task.end"}; !reflect.DeepEqual(got, want) {
			t.Errorf("the child's events = %v, want %v", got, want)
		}
		// Forwarded events keep each worker's own numbering and session.
		for _, w := range []*fakeWorker{main, child} {
			var seqs []uint64
			for _, e := range evs {
				if e.Agent == w.Spec.Label && e.WorkerSeq != 0 {
					seqs = append(seqs, e.WorkerSeq)
					if e.Session != w.Spec.SessionID {
						t.Errorf("%s event %s has session %q, want %q", e.Agent, e.Body.Kind(), e.Session, w.Spec.SessionID)
					}
				}
			}
			for i, s := range seqs {
				if s != uint64(i+1) {
					t.Errorf("%s's worker numbers = %v, want 1..%d", w.Spec.Label, seqs, len(seqs))
					break
				}
			}
		}
		// The child's start and end bracket its events; its end comes before
		// the main agent records the answer.
		order := map[string]int{}
		for i, e := range evs {
			key := e.Agent + " " + e.Body.Kind()
			if _, seen := order[key]; !seen {
				order[key] = i
			}
		}
		if !(order["main/1 task.start"] < order["main/1 message"] && order["main/1 task.end"] > order["main/1 turn.start"]) {
			t.Errorf("task.start/task.end do not bracket the child's events:\n%s", h.rec.dump())
		}

		start := evs[0].Body.(event.RunStart)
		if evs[0].Session != res.SessionID || start.Transcript != res.Transcript || start.Model != testBinding.String() || start.Cwd != h.cfg.Cwd ||
			start.MaxParallel != 4 || start.MaxDepth != 1 || start.Continued {
			t.Errorf("run.start = %+v (session %s)", start, evs[0].Session)
		}
		if ws := evs[1].Body.(event.WorkerStart); ws.Pid != main.Pid() || ws.AttemptID != main.Spec.AttemptID {
			t.Errorf("worker.start = %+v, want pid %d attempt %s", ws, main.Pid(), main.Spec.AttemptID)
		}
		end, ok := evs[len(evs)-1].Body.(event.RunEnd)
		if !ok || end.Status != StatusCompleted || end.Text != "main is done" || end.Turns != 2 || end.Transcript != res.Transcript ||
			end.Rejected != 0 || !reflect.DeepEqual(end.Usage, wantUsage) {
			t.Errorf("last event = %+v, want run.end completed with every agent's usage", evs[len(evs)-1].Body)
		}
		ts, _ := bodies[event.TaskStart](evs)
		te, _ := bodies[event.TaskEnd](evs)
		if len(ts) != 1 || len(te) != 1 {
			t.Fatalf("task.start %d, task.end %d; want one each", len(ts), len(te))
		}
		if ts[0].ChildID != child.Spec.SessionID || ts[0].Child != "main/1" || ts[0].ToolCallID != "call-1" || ts[0].Pid != child.Pid() ||
			ts[0].AttemptID != child.Spec.AttemptID || ts[0].Resumed || ts[0].Worktree != "" {
			t.Errorf("task.start = %+v", ts[0])
		}
		if e := te[0]; e.ChildID != child.Spec.SessionID || e.Status != StatusCompleted || e.Turns != 1 || e.Usage == nil || *e.Usage != wantUsage["main/1"] ||
			e.Transcript != child.Spec.Transcript || e.ToolCallID != "call-1" || e.AttemptID != child.Spec.AttemptID {
			t.Errorf("task.end = %+v", e)
		}

		// The answer the main agent got.
		a := main.answer(t, "call-1")
		for _, want := range []string{"found it", "(child: 1 turn, 50 in / 5 out)", fmt.Sprintf(`child session id: %s — continue it with task({resume: %q`, child.Spec.SessionID, child.Spec.SessionID)} {
			if !strings.Contains(a.Content, want) {
				t.Errorf("answer lacks %q:\n%s", want, a.Content)
			}
		}
		if a.IsError || a.Record == nil {
			t.Fatalf("answer isError=%v record=%v", a.IsError, a.Record)
		}
		r := *a.Record
		if r.Status != StatusCompleted || !r.Launched || r.ChildID != child.Spec.SessionID || r.TaskToolCallID != "call-1" || r.ParentSessionID != res.SessionID ||
			r.Transcript == nil || !r.Transcript.Present || r.Transcript.Path != child.Spec.Transcript || !r.TextPresent || r.Turns != 1 ||
			r.TimeoutMs != DefaultHeadlessTimeout.Milliseconds() || r.Cwd != h.cfg.Cwd || r.Binding == nil || *r.Binding != testBinding {
			t.Errorf("TaskRecord = %+v", r)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("TaskRecord does not validate: %v", err)
		}

		// Every worker: its outcome acknowledged once, then closed, never killed.
		for _, w := range []*fakeWorker{main, child} {
			msgs := w.hostMsgs()
			if len(msgs) == 0 {
				t.Fatalf("%s got nothing", w.Spec.Label)
			}
			if _, ok := msgs[len(msgs)-1].(ipc.Ack); !ok || count[ipc.Ack](w) != 1 || count[ipc.Cancel](w) != 0 {
				t.Errorf("%s got %v; want one Ack, last, and no Cancel", w.Spec.Label, msgs)
			}
			if c, k := w.ends(); c != 1 || k != 0 {
				t.Errorf("%s closed %d times, killed %d times; want closed once", w.Spec.Label, c, k)
			}
		}

		// What the workers were given.
		wantTools := []string{"read", "grep", "find", "ls", "edit", "write", "bash"}
		cs := child.Spec
		if cs.Create == nil || cs.Create.Launch == nil || cs.Label != "main/1" || cs.Depth != 1 || cs.Cwd != h.cfg.Cwd || cs.Root != h.cfg.Cwd ||
			!reflect.DeepEqual(cs.Tools, wantTools) || cs.Prompt != "look around" || cs.MaxParallel != loopWindow ||
			cs.HeartbeatInterval != h.cfg.HeartbeatInterval || !strings.Contains(cs.System, "# Subagent mode") {
			t.Errorf("child spec = %+v", cs)
		}
		if cs.Transcript != session.ChildPath(res.Transcript, cs.SessionID) {
			t.Errorf("child transcript %s is not under the main session's children", cs.Transcript)
		}
		if ms := main.Spec; ms.Create == nil || ms.Create.ID != res.SessionID || ms.Transcript != session.MainPath(h.cfg.InkHome, h.cfg.Cwd, res.SessionID) ||
			!reflect.DeepEqual(ms.Tools, MainTools) || ms.Depth != 0 || ms.Prompt != "fix the bug" {
			t.Errorf("main spec = %+v", ms)
		}

		// The child's transcript holds its launch record.
		tr, err := h.store.Open(cs.Transcript, false)
		if err != nil {
			t.Fatal(err)
		}
		l := tr.Header.Launch
		if tr.Header.Parent != res.SessionID || l == nil || l.ParentSessionID != res.SessionID || l.ChildID != cs.SessionID || l.Depth != 1 || l.MaxDepth != 1 ||
			l.InkVersion != version.Ink || l.Binding != testBinding || strings.Join(l.Tools, ",") != "bash,edit,find,grep,ls,read,write" ||
			l.System.SHA256 != session.SystemFingerprint(cs.System) {
			t.Errorf("child header = %+v, launch %+v", tr.Header, l)
		}
		if end, ok := tr.LastAttemptEnd(); !ok || end.Status != StatusCompleted || end.FinalText != "found it" {
			t.Errorf("child's attempt end = %+v, %v", end, ok)
		}
	})
}

// TestRunSpecCarriesOnlyItsOwnKey: a worker gets its own provider's key in
// its attempt spec and only fingerprints of the other secrets.
func TestRunSpecCarriesOnlyItsOwnKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const openai, anthropic = "sk-openai-0123456789abcdef", "sk-ant-fedcba9876543210"
		h := newHarness(t, Config{
			Binding: model.Binding{Provider: "openai", Model: "gpt-5-mini"},
			Environ: []string{"OPENAI_API_KEY=" + openai, "ANTHROPIC_API_KEY=" + anthropic, "PATH=/usr/bin"},
		}, func(w *fakeWorker) {
			if w.Start() {
				w.Complete("ok", model.Usage{})
			}
		})
		h.run(t, RunOptions{Prompt: "hi"})
		sp := h.l.byLabel("main").Spec
		if !reflect.DeepEqual(sp.Credentials, map[string]string{"OPENAI_API_KEY": openai}) {
			t.Errorf("credentials = %v, want only OPENAI_API_KEY", sp.Credentials)
		}
		raw, _ := json.Marshal(sp.Redact)
		if len(sp.Redact) != len(secret.Forms(anthropic)) || strings.Contains(string(raw), anthropic) {
			t.Errorf("redact = %s, want a fingerprint of each form of ANTHROPIC_API_KEY, without its value", raw)
		}
		for _, f := range sp.Redact {
			if f.Name != "ANTHROPIC_API_KEY" {
				t.Errorf("redact holds a fingerprint of %s, want only ANTHROPIC_API_KEY's", f.Name)
			}
		}
	})
}

// TestRunContinuesASession: --session continues the main transcript: the
// worker is told to continue (not create) it, with the header it was
// validated against, and run.start says so.
func TestRunContinuesASession(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		done := func(w *fakeWorker) {
			if w.Start() {
				w.Complete("ok", model.Usage{Input: 1})
			}
		}
		h := newHarness(t, Config{}, done)
		first := h.run(t, RunOptions{Prompt: "one"})
		again := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd}, done)
		res := again.run(t, RunOptions{Prompt: "two", SessionID: first.SessionID})
		if res.Status != StatusCompleted || res.SessionID != first.SessionID || res.Transcript != first.Transcript {
			t.Fatalf("continued run = %+v", res)
		}
		sp := again.l.byLabel("main").Spec
		var hdr session.Header
		if sp.Create != nil || !sp.Repair || json.Unmarshal(sp.ExpectHeader, &hdr) != nil || hdr.ID != first.SessionID || sp.Transcript != first.Transcript {
			t.Errorf("continue spec: create=%v repair=%v expect=%s", sp.Create, sp.Repair, sp.ExpectHeader)
		}
		if e := again.rec.all()[0]; !e.Body.(event.RunStart).Continued || e.Session != first.SessionID {
			t.Errorf("run.start = %+v", e)
		}
		tr, err := h.store.Open(first.Transcript, false)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tr.Attempts()); n != 4 || tr.Messages[2].Text() != "two" {
			t.Errorf("transcript holds %d attempt entries and messages %v; want two attempts", n, tr.Messages)
		}
	})
}

// TestRunRefusesABadSession: an id that is not an id, an unknown session,
// a child session and another directory's session are refused with a
// message that says what to do, and nothing is started or written.
func TestRunRefusesABadSession(t *testing.T) {
	t.Parallel()
	home, cwd, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	setup := newHarness(t, Config{InkHome: home, Cwd: elsewhere, MaxDepth: 1}, cast{
		main:  delegates(`{"prompt":"p"}`),
		child: completes("c", model.Usage{}),
	}.play)
	other := setup.run(t, RunOptions{Prompt: "x"})
	childID := setup.l.byLabel("main/1").Spec.SessionID
	before := snapshot(t, home)

	for _, tc := range []struct {
		name, id string
		want     []string
	}{
		{"not an id", "../etc", []string{`--session "../etc" is not a session id`, "`ink sessions ls`"}},
		{"unknown", "01abc", []string{"no session 01abc for " + cwd, "`ink sessions ls`"}},
		{"a child", childID, []string{childID + " is a child session, not a main session", "`ink task --resume " + childID}},
		{"another directory", other.SessionID, []string{"belongs to " + elsewhere, "run ink from there (or pass --cwd " + elsewhere + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{InkHome: home, Cwd: cwd}, func(w *fakeWorker) { t.Errorf("a worker started: %s", w.Spec.Label) })
				_, err := h.o.Run(context.Background(), RunOptions{Prompt: "go on", SessionID: tc.id})
				if err == nil {
					t.Fatal("Run accepted the session")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if n := len(h.rec.all()); n != 0 {
					t.Errorf("%d events for a refused run", n)
				}
				if after := snapshot(t, home); !reflect.DeepEqual(before, after) {
					t.Errorf("a refused run changed files under INK_HOME")
				}
			})
		})
	}
}

// TestRunMainAgentEnds: however the main worker ends, Run says how, in
// words that name the cause, and the worker is ended.
func TestRunMainAgentEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		play       play
		fail       error
		wantStatus Status
		wantReason string // %d is the worker's pid
	}{
		{name: "killed by a signal", play: func(w *fakeWorker) {
			if w.Start() {
				w.Die("SIGKILL")
			}
		}, wantStatus: StatusCrash, wantReason: "the worker process (pid %d) was killed by signal SIGKILL"},
		{name: "exits without an outcome", play: func(w *fakeWorker) {
			if w.Start() {
				w.ExitWith(3)
			}
		}, wantStatus: StatusCrash, wantReason: "the worker process (pid %d) exited with status 3 before reporting an outcome"},
		{name: "stream lost, process lingers", play: func(w *fakeWorker) {
			w.BreakStream()
			w.Hang()
		}, wantStatus: StatusCrash, wantReason: "lost the worker's stream: rpc error"},
		{name: "launch fails", fail: errors.New("fork/exec /ink: exec format error"),
			wantStatus: StatusCrash, wantReason: "could not start the worker: fork/exec /ink: exec format error"},
		{name: "interrupted", play: func(w *fakeWorker) {
			if w.Start() {
				w.Finish(ipc.Outcome{Status: StatusInterrupted, Reason: "host lost"})
			}
		}, wantStatus: StatusInterrupted, wantReason: "host lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{}, tc.play)
				if tc.fail != nil {
					h.l.fail = func(ipc.AttemptSpec) error { return tc.fail }
				}
				res := h.run(t, RunOptions{Prompt: "p"})
				pid := 0
				if w := h.l.byLabel("main"); w != nil {
					pid = w.Pid()
				}
				want := tc.wantReason
				if strings.Contains(want, "%d") {
					want = fmt.Sprintf(want, pid)
				}
				if res.Status != tc.wantStatus || !strings.HasPrefix(res.Reason, want) {
					t.Errorf("result %s %q, want %s %q", res.Status, res.Reason, tc.wantStatus, want)
				}
				evs := h.rec.all()
				end, ok := evs[len(evs)-1].Body.(event.RunEnd)
				if !ok || end.Status != tc.wantStatus || end.Reason != res.Reason {
					t.Errorf("last event %+v, want run.end %s", evs[len(evs)-1].Body, tc.wantStatus)
				}
				if _, started := bodies[event.WorkerStart](evs); (len(started) == 1) == (tc.fail != nil) {
					t.Errorf("worker.start events: %d (launch failure: %v)", len(started), tc.fail != nil)
				}
			})
		})
	}
}

// TestRunCancelledByTheUser: Ctrl-C (ctx cancelled) sends Cancel "aborted"
// to the main worker and to its running child; both stop, the child's
// answer says it was aborted and the run ends aborted. A cancel that comes
// before the worker starts aborts without one.
func TestRunCancelledByTheUser(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopped := func(w *fakeWorker) {
			c, ok := w.AwaitCancel()
			if ok {
				w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason, Turns: w.turns})
			}
		}
		h := newHarness(t, Config{MaxDepth: 1}, cast{
			main: func(w *fakeWorker) {
				if !w.Start() || !w.Turn(1) || !w.CallTasks(taskCallOf("call-1", `{"prompt":"slow"}`)) || !w.Request("call-1", `{"prompt":"slow"}`) {
					return
				}
				c, ok := w.AwaitCancel()
				if !ok {
					return
				}
				if a, ok := w.AwaitAnswer("call-1"); ok && w.Record("call-1", a) {
					w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason, Turns: 1})
				}
			},
			child: func(w *fakeWorker) {
				if w.Start() {
					stopped(w)
				}
			},
		}.play)
		go func() {
			if _, ok := h.rec.wait(is[event.TaskStart]("main/1")); ok {
				cancel()
			}
		}()
		res, err := h.o.Run(ctx, RunOptions{Prompt: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != StatusAborted || res.Reason != "cancelled by the user" {
			t.Fatalf("result %s %q, want aborted by the user", res.Status, res.Reason)
		}
		main, child := h.l.byLabel("main"), h.l.byLabel("main/1")
		for _, w := range []*fakeWorker{main, child} {
			var got []ipc.Cancel
			for _, m := range w.hostMsgs() {
				if c, ok := m.(ipc.Cancel); ok {
					got = append(got, c)
				}
			}
			if len(got) != 1 || got[0] != (ipc.Cancel{Status: StatusAborted, Reason: "cancelled by the user"}) {
				t.Errorf("%s got cancels %v, want one aborted by the user", w.Spec.Label, got)
			}
			if _, k := w.ends(); k != 0 {
				t.Errorf("%s was killed though it stopped", w.Spec.Label)
			}
		}
		a := main.answer(t, "call-1")
		if !a.IsError || !strings.HasPrefix(a.Content, "task aborted before completion (0 turns ran): cancelled by the user.") || a.Record.Status != StatusAborted {
			t.Errorf("child's answer = %v %q", a.IsError, a.Content)
		}

		// Cancelled before the worker started: nothing runs.
		h2 := newHarness(t, Config{}, func(w *fakeWorker) { t.Errorf("a worker started") })
		res2, err := h2.o.Run(ctx, RunOptions{Prompt: "p"})
		if err != nil || res2.Status != StatusAborted || res2.Reason != "cancelled before the worker started" {
			t.Errorf("run after cancel = %+v, %v", res2, err)
		}
	})
}

// TestKillAll: the second Ctrl-C kills every worker at once; each is
// reported killed by SIGKILL and nothing new starts afterwards.
func TestKillAll(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 1}, cast{
			main: func(w *fakeWorker) {
				if w.Start() {
					w.Delegate("call-1", `{"prompt":"slow"}`)
					w.Hang()
				}
			},
			child: func(w *fakeWorker) {
				if w.Start() {
					w.Hang()
				}
			},
		}.play)
		go func() {
			if _, ok := h.rec.wait(is[event.TaskStart]("main/1")); ok {
				h.o.KillAll()
			}
		}()
		res := h.run(t, RunOptions{Prompt: "p"})
		main, child := h.l.byLabel("main"), h.l.byLabel("main/1")
		if want := fmt.Sprintf("the worker process (pid %d) was killed by signal SIGKILL", main.Pid()); res.Status != StatusCrash || res.Reason != want {
			t.Errorf("result %s %q, want crash %q", res.Status, res.Reason, want)
		}
		// The child dies with its parent: whichever death the supervisor sees
		// first, its reason names the signal.
		te, _ := bodies[event.TaskEnd](h.rec.all())
		if want := fmt.Sprintf("the worker process (pid %d) was killed by signal SIGKILL", child.Pid()); len(te) != 1 ||
			(te[0].Status != StatusCrash && te[0].Status != StatusAborted) || te[0].Reason != want {
			t.Errorf("task.end = %+v, want crash %q", te, want)
		}
		for _, w := range []*fakeWorker{main, child} {
			if _, k := w.ends(); k == 0 {
				t.Errorf("%s was not killed", w.Spec.Label)
			}
		}
		// After KillAll nothing starts.
		again := h.run(t, RunOptions{Prompt: "p"})
		if again.Status != StatusAborted || again.Reason != "killed by the user before it started" {
			t.Errorf("run after KillAll = %s %q", again.Status, again.Reason)
		}
		if w := h.l.all()[len(h.l.all())-1]; w == child {
			t.Errorf("no worker was tried after KillAll")
		} else if _, k := w.ends(); k != 1 {
			t.Errorf("the worker started after KillAll was not killed")
		}
	})
}

// TestWarnIsPublished: a warning not tied to an agent reaches the sink.
func TestWarnIsPublished(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, nil)
		h.o.Warn("ink", "profile scout.md: bad YAML; the previous version stays in use")
		evs := h.rec.all()
		if len(evs) != 1 || evs[0].Agent != "ink" || evs[0].Body != (event.Warning{Text: "profile scout.md: bad YAML; the previous version stays in use"}) {
			t.Fatalf("events = %+v", evs)
		}
	})
}

// TestNewChecksItsConfig: relative paths and a negative depth are refused;
// blanks take their defaults.
func TestNewChecksItsConfig(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		abs := t.TempDir()
		for _, tc := range []struct {
			name string
			cfg  Config
			want string
		}{
			{"relative INK_HOME", Config{InkHome: "ink", Cwd: abs}, `INK_HOME "ink" must be an absolute path`},
			{"relative cwd", Config{InkHome: abs, Cwd: "src"}, `cwd "src" must be an absolute path`},
			{"negative depth", Config{InkHome: abs, Cwd: abs, MaxDepth: -1}, "--max-depth must be 0 or more"},
		} {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
			}
		}
		o, err := New(Config{InkHome: abs, Cwd: abs, Exe: "/usr/local/bin/ink"})
		if err != nil {
			t.Fatal(err)
		}
		if o.cfg.MaxParallel != 8 || o.cfg.Grace != DefaultGrace || o.cfg.HeartbeatInterval != time.Second || o.cfg.Logger == nil {
			t.Errorf("defaults = %+v", o.cfg)
		}
		if pl, ok := o.launcher.(*local.Launcher); !ok || pl.Exe() != "/usr/local/bin/ink" {
			t.Errorf("default launcher = %#v", o.launcher)
		}
		if got := (&Orchestrator{cfg: Config{MaxDepth: 0}}).mainTools(); slices.Contains(got, "task") {
			t.Errorf("--max-depth 0 gives the main agent the task tool: %v", got)
		}
	})
}

// snapshot maps every file under root to its content, for "nothing
// changed" checks.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(data)
		} else if d.IsDir() {
			out[p+"/"] = ""
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
