package orchestrator

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
)

// stopsOnCancel is a child that stops as asked: its outcome carries the
// cancel's status and reason.
func stopsOnCancel(w *fakeWorker) {
	if !w.Start() || !w.Turn(1) {
		return
	}
	if c, ok := w.AwaitCancel(); ok {
		w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason, Turns: 1, Usage: model.Usage{Input: 7, Output: 3}})
	}
}

// TestChildEndings: every way a child's attempt can end reaches the parent
// as the right status, a reason that names the cause, a result the model
// can act on (the handoff for a failure) and a TaskRecord; a worker that
// stops is closed, one that does not is killed.
func TestChildEndings(t *testing.T) {
	t.Parallel()
	const prompt = "find the flaky test"
	for _, tc := range []struct {
		name   string
		cfg    Config
		child  play
		fail   error
		status Status
		// reason and want may hold %[1]d (the child's pid) and %[2]s (its
		// transcript).
		reason     string
		want       []string
		notWant    []string
		isError    bool
		cancel     *ipc.Cancel
		killed     bool
		launched   bool
		transcript bool
	}{
		{
			name: "completes", child: completes("the test races on a map", model.Usage{Input: 9, Output: 2}),
			status: StatusCompleted, want: []string{"the test races on a map", "(child: 1 turn, 9 in / 2 out)"},
			notWant: []string{"work is preserved"}, launched: true, transcript: true,
		},
		{
			name: "times out and stops", cfg: Config{TaskTimeout: 50 * time.Millisecond}, child: stopsOnCancel,
			status: StatusTimeout, reason: "timed out after 50ms", isError: true,
			want: []string{"task timed out after 50ms (1 turn ran).", "work is preserved in the full transcript:\n  %[2]s\n",
				`the child's task was: "` + prompt + `"`, "child session id: ", "Continue it with the resume id above, or start a new task with a narrower prompt."},
			cancel: &ipc.Cancel{Status: StatusTimeout, Reason: "timed out after 50ms"}, launched: true, transcript: true,
		},
		{
			name: "times out and ignores the cancel", cfg: Config{TaskTimeout: 50 * time.Millisecond, Grace: 30 * time.Millisecond},
			child: func(w *fakeWorker) {
				if w.Start() {
					w.Hang()
				}
			},
			status: StatusTimeout, isError: true,
			reason: "timed out after 50ms; the worker did not stop within 30ms of the cancel, so its process group was killed",
			want:   []string{"task timed out after 50ms (0 turns ran).", "work is preserved"},
			cancel: &ipc.Cancel{Status: StatusTimeout, Reason: "timed out after 50ms"}, killed: true, launched: true, transcript: true,
		},
		{
			name: "killed by a signal", child: func(w *fakeWorker) {
				if w.Start() && w.Turn(1) {
					w.Die("SIGKILL")
				}
			},
			status: StatusCrash, reason: "the worker process (pid %[1]d) was killed by signal SIGKILL", isError: true,
			want:   []string{"task failed after 0 turns: the worker process (pid %[1]d) was killed by signal SIGKILL.", "work is preserved in the full transcript:\n  %[2]s"},
			killed: true, launched: true, transcript: true,
		},
		{
			name: "exits without an outcome", child: func(w *fakeWorker) {
				if w.Start() {
					w.ExitWith(2)
				}
			},
			status: StatusCrash, reason: "the worker process (pid %[1]d) exited with status 2 before reporting an outcome", isError: true,
			killed: true, launched: true, transcript: true,
		},
		{
			name: "fails to launch", fail: errors.New("fork/exec /opt/ink: exec format error"),
			status: StatusCrash, reason: "could not start the worker: fork/exec /opt/ink: exec format error", isError: true,
			want:    []string{"task failed after 0 turns: could not start the worker: fork/exec /opt/ink: exec format error.", "(transcript not persisted — work was not saved)", `the child's task was: "` + prompt + `"`},
			notWant: []string{"child session id"},
		},
		{
			name: "crashes with a partial answer", child: func(w *fakeWorker) {
				if w.Start() && w.Say("half an answer", model.Usage{}) {
					w.Finish(ipc.Outcome{Status: StatusCrash, Reason: "anthropic: stream cut after content", Text: "half an answer", Turns: 2})
				}
			},
			status: StatusCrash, reason: "anthropic: stream cut after content",
			want:     []string{"half an answer\n\n[task] child failed after 2 turns: anthropic: stream cut after content; partial result above.", "work is preserved"},
			launched: true, transcript: true,
		},
		{
			name: "wraps up at its turn cap", cfg: Config{MaxTurns: 40}, child: func(w *fakeWorker) {
				if w.Start() && w.Say("what I found so far", model.Usage{}) {
					w.Finish(ipc.Outcome{Status: StatusCompleted, Text: "what I found so far", Turns: 40, Capped: "turns", Health: []string{"the child repeated one failing command 6 times"}})
				}
			},
			status: StatusCompleted,
			want: []string{"what I found so far\n\n[task] hit the 40-turn cap; this is the child's wrap-up answer, not a confirmed completion.",
				"\n[health] the child repeated one failing command 6 times\n"},
			launched: true, transcript: true,
		},
		{
			name: "hangs (its heartbeat stops)", cfg: Config{HeartbeatInterval: 20 * time.Millisecond},
			child: func(w *fakeWorker) {
				if !w.StartHung() {
					return
				}
				if c, ok := w.AwaitCancel(); ok {
					w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason})
				}
			},
			status: StatusCrash, reason: "the worker hung (no heartbeat for ", isError: true,
			want:     []string{"task failed after 0 turns: the worker hung (no heartbeat for "},
			launched: true, transcript: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tc.cfg.MaxDepth = 1
				h := newHarness(t, tc.cfg, cast{main: delegates(fmt.Sprintf(`{"prompt":%q}`, prompt)), child: tc.child}.play)
				if tc.fail != nil {
					h.l.fail = func(sp ipc.AttemptSpec) error {
						if sp.Depth > 0 {
							return tc.fail
						}
						return nil
					}
				}
				res := h.run(t, RunOptions{Prompt: "p"})
				if res.Status != StatusCompleted {
					t.Fatalf("the main agent ended %s: %s", res.Status, res.Reason)
				}
				a := h.l.byLabel("main").answer(t, "call-1")
				end := h.rec.waitFor(t, "task.end", is[event.TaskEnd]("main/1")).Body.(event.TaskEnd)
				pid, path := 0, end.Transcript
				if child := h.l.byLabel("main/1"); child != nil {
					pid = child.Pid()
				}
				expand := func(s string) string {
					if strings.Contains(s, "%[") {
						return fmt.Sprintf(s, pid, path)
					}
					return s
				}
				r := a.Record
				if r == nil || r.Status != tc.status || end.Status != tc.status || a.IsError != tc.isError {
					t.Fatalf("status %v / task.end %s / isError %v, want %s / %v\n%s", r, end.Status, a.IsError, tc.status, tc.isError, a.Content)
				}
				if reason := expand(tc.reason); !strings.HasPrefix(r.Reason, reason) || !strings.HasPrefix(end.Reason, reason) {
					t.Errorf("reason %q (task.end %q), want %q", r.Reason, end.Reason, reason)
				}
				for _, w := range tc.want {
					if !strings.Contains(a.Content, expand(w)) {
						t.Errorf("result lacks %q:\n%s", expand(w), a.Content)
					}
				}
				for _, w := range tc.notWant {
					if strings.Contains(a.Content, w) {
						t.Errorf("result has %q:\n%s", w, a.Content)
					}
				}
				if err := r.Validate(); err != nil {
					t.Errorf("TaskRecord does not validate: %v", err)
				}
				if r.Launched != tc.launched || r.Transcript == nil || r.Transcript.Present != tc.transcript {
					t.Errorf("record launched=%v transcript=%+v, want launched=%v present=%v", r.Launched, r.Transcript, tc.launched, tc.transcript)
				}
				child := h.l.byLabel("main/1")
				if tc.fail != nil {
					if child != nil {
						t.Fatal("a child worker ran though its launch failed")
					}
					if _, ok := firstIndex(h.rec.all(), is[event.TaskStart]("")); ok == nil {
						t.Error("task.start for a child that never started")
					}
					return
				}
				var cancels []ipc.Cancel
				for _, m := range child.hostMsgs() {
					if c, ok := m.(ipc.Cancel); ok {
						cancels = append(cancels, c)
					}
				}
				switch {
				case tc.cancel != nil && (len(cancels) != 1 || cancels[0] != *tc.cancel):
					t.Errorf("cancels %v, want %v", cancels, *tc.cancel)
				case tc.cancel == nil && tc.name != "hangs (its heartbeat stops)" && len(cancels) != 0:
					t.Errorf("cancels %v, want none", cancels)
				}
				if _, k := child.ends(); (k > 0) != tc.killed {
					t.Errorf("killed %d times, want killed=%v", k, tc.killed)
				}
			})
		})
	}
}

// TestHungWorkerIsNamed: a worker whose lease heartbeat stops is reported
// with a warning naming its pid and cancelled as a crash.
func TestHungWorkerIsNamed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 1, HeartbeatInterval: 20 * time.Millisecond, Grace: 50 * time.Millisecond}, cast{
			main: delegates(`{"prompt":"stuck"}`),
			child: func(w *fakeWorker) {
				if w.StartHung() {
					w.Hang() // not even the cancel is heard
				}
			},
		}.play)
		h.run(t, RunOptions{Prompt: "p"})
		child := h.l.byLabel("main/1")
		warn := h.rec.waitFor(t, "a hung warning", is[event.Warning]("main/1")).Body.(event.Warning)
		if !regexp.MustCompile(fmt.Sprintf(`^worker pid %d is hung \(heartbeat [0-9.]+m?s ago\); cancelling it$`, child.Pid())).MatchString(warn.Text) {
			t.Errorf("warning %q", warn.Text)
		}
		msgs := child.hostMsgs()
		if len(msgs) != 1 {
			t.Fatalf("host sent %v, want one Cancel", msgs)
		}
		if c, ok := msgs[0].(ipc.Cancel); !ok || c.Status != StatusCrash || !strings.HasPrefix(c.Reason, "the worker hung (no heartbeat for ") {
			t.Errorf("cancel = %+v", msgs[0])
		}
		end := h.rec.waitFor(t, "task.end", is[event.TaskEnd]("main/1")).Body.(event.TaskEnd)
		if end.Status != StatusCrash || !strings.Contains(end.Reason, "so its process group was killed") {
			t.Errorf("task.end %s %q", end.Status, end.Reason)
		}
		if _, k := child.ends(); k == 0 {
			t.Error("the hung worker was not killed")
		}
	})
}

// TestChildIsToldWhyItsParentStopped: when a parent's worker dies, its
// running child is cancelled with a reason that says so, not as if the
// user had cancelled it.
func TestChildIsToldWhyItsParentStopped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		childUp := make(chan struct{})
		h := newHarness(t, Config{MaxDepth: 1}, cast{
			main: func(w *fakeWorker) {
				if w.Start() && w.CallTasks(taskCallOf("call-1", `{"prompt":"x"}`)) && w.Request("call-1", `{"prompt":"x"}`) && w.Wait(childUp) {
					w.Die("SIGSEGV")
				}
			},
			child: func(w *fakeWorker) {
				if !w.Start() {
					return
				}
				close(childUp)
				if c, ok := w.AwaitCancel(); ok {
					w.Finish(ipc.Outcome{Status: c.Status, Reason: c.Reason})
				}
			},
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		if res.Status != StatusCrash || !strings.HasSuffix(res.Reason, "was killed by signal SIGSEGV") {
			t.Fatalf("run %s %q", res.Status, res.Reason)
		}
		c := h.l.byLabel("main/1").hostMsgs()
		want := ipc.Cancel{Status: StatusAborted, Reason: "cancelled because its parent stopped: the parent worker died"}
		if len(c) < 1 || c[0] != want {
			t.Errorf("child got %v, want %v first", c, want)
		}
		end := h.rec.waitFor(t, "task.end", is[event.TaskEnd]("main/1")).Body.(event.TaskEnd)
		if end.Status != StatusAborted || end.Reason != want.Reason {
			t.Errorf("task.end %s %q", end.Status, end.Reason)
		}
	})
}
