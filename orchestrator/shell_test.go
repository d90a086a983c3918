package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

func strp(s string) *string { return &s }

// TestShellTaskRecordsItsOwnSession: `ink task` runs one child with no
// main agent; its parent is a new shell session that holds exactly the
// command's task call and its result, with every configured secret
// redacted, and the answer's resume hint is a shell command.
func TestShellTaskRecordsItsOwnSession(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const key = "sk-ant-0123456789abcdefghij"
		h := newHarness(t, Config{MaxDepth: 1, Environ: []string{"ANTHROPIC_API_KEY=" + key}},
			completes("all tests pass", model.Usage{Input: 2000, Output: 300}))
		res := h.task(t, TaskOptions{Args: TaskArgs{Prompt: "run the tests; the key is " + key}})
		if res.Status != StatusCompleted || res.IsError || res.ParentSession == "" {
			t.Fatalf("result = %+v", res)
		}
		child := h.l.byLabel("shell/1")
		if child == nil || child.Spec.Depth != 1 || child.Spec.Prompt != "run the tests; the key is "+key {
			t.Fatalf("child spec = %+v", child)
		}
		hint := fmt.Sprintf(`child session id: %s — continue it with: ink task --resume %s "…"`, child.Spec.SessionID, child.Spec.SessionID)
		if !strings.HasPrefix(res.Content, "all tests pass") || !strings.Contains(res.Content, hint) {
			t.Errorf("content lacks the answer or the shell hint %q:\n%s", hint, res.Content)
		}
		path := session.MainPath(h.cfg.InkHome, h.cfg.Cwd, res.ParentSession)
		if child.Spec.Transcript != session.ChildPath(path, child.Spec.SessionID) || child.Spec.Create.Parent != res.ParentSession {
			t.Errorf("child transcript %s is not a child of the shell session %s", child.Spec.Transcript, path)
		}
		raw := h.store.bytes(path)
		if strings.Contains(string(raw), key) {
			t.Errorf("the shell session holds the secret:\n%s", raw)
		}
		tr, err := h.store.Open(path, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Messages) != 2 || tr.Header.ID != res.ParentSession || tr.Header.Cwd != h.cfg.Cwd || tr.Header.Parent != "" {
			t.Fatalf("shell session = %+v with %d messages", tr.Header, len(tr.Messages))
		}
		call, result := tr.Messages[0], tr.Messages[1]
		if call.Role != model.RoleAssistant || call.Model != "shell" || len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != "task" {
			t.Fatalf("first message = %+v", call)
		}
		var args TaskArgs
		if err := json.Unmarshal(call.ToolCalls[0].Args, &args); err != nil || !strings.HasPrefix(args.Prompt, "run the tests; the key is ") {
			t.Errorf("recorded args %s: %v", call.ToolCalls[0].Args, err)
		}
		if len(result.Results) != 1 || result.Results[0].ToolCallID != call.ToolCalls[0].ID || !strings.HasPrefix(result.Results[0].Content, "all tests pass") {
			t.Fatalf("second message = %+v", result)
		}
		rec, err := session.ParseTaskRecord(result.TaskRecord)
		if err != nil || rec.ChildID != child.Spec.SessionID || rec.ParentSessionID != res.ParentSession || rec.Status != StatusCompleted || !rec.Launched {
			t.Errorf("stored record %+v: %v", rec, err)
		}
		if st, err := h.store.Probe(path); err != nil || st.State != lease.Free {
			t.Errorf("the shell session's lease is %v after the command (%v)", st.State, err)
		}

		evs := h.rec.all()
		var kinds []string
		for _, e := range evs {
			if e.WorkerSeq == 0 {
				kinds = append(kinds, e.Agent+" "+e.Body.Kind())
			}
		}
		if want := []string{"shell run.start", "shell/1 task.start", "shell/1 task.end", "shell run.end"}; !reflect.DeepEqual(kinds, want) {
			t.Errorf("supervisor events %v, want %v", kinds, want)
		}
		end := evs[len(evs)-1].Body.(event.RunEnd)
		if end.Status != StatusCompleted || end.Transcript != path || end.Text != "all tests pass" || end.Reason != "" || end.Usage["shell/1"] != (model.Usage{Input: 2000, Output: 300}) {
			t.Errorf("run.end = %+v", end)
		}
		if start := evs[0]; start.Session != res.ParentSession || start.Body.(event.RunStart).Transcript != path {
			t.Errorf("run.start = %+v", start)
		}
	})
}

// TestShellTaskRejectedWritesNothing: an `ink task` that is refused before
// launch leaves INK_HOME as it was; --parent without --resume is bad input.
func TestShellTaskRejectedWritesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 1}, func(w *fakeWorker) { t.Errorf("a worker started") })
		res := h.task(t, TaskOptions{Args: TaskArgs{Prompt: "x", Agent: strp("reviewer")}})
		if res.Status != StatusRejected || !res.IsError || res.ParentSession != "" || !strings.Contains(res.Content, `unknown agent "reviewer"`) {
			t.Errorf("result = %+v", res)
		}
		if got := snapshot(t, h.cfg.InkHome); len(got) != 1 {
			t.Errorf("a rejected task wrote %v", got)
		}
		evs := h.rec.all()
		if len(evs) != 2 || evs[0].Body.(event.TaskEnd).Status != StatusRejected {
			t.Fatalf("events = %s", h.rec.dump())
		}
		if end := evs[1].Body.(event.RunEnd); end.Status != StatusRejected || end.Rejected != 1 || end.Transcript != "" || end.Reason != res.Content {
			t.Errorf("run.end = %+v", end)
		}

		_, err := h.o.Task(context.Background(), TaskOptions{Args: TaskArgs{Prompt: "x"}, Parent: "01abc"})
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "--parent only goes with --resume") {
			t.Errorf("--parent without --resume: %v", err)
		}
	})
}

// TestShellTaskCannotWriteItsSession: when the shell session cannot be
// created the child is not launched and the answer says why.
func TestShellTaskCannotWriteItsSession(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		store := newMemStore()
		store.failSession = &fs.PathError{Op: "mkdir", Path: filepath.Join(home, "sessions"), Err: syscall.ENOTDIR}
		h := newHarness(t, Config{InkHome: home, MaxDepth: 1, Store: store}, func(w *fakeWorker) { t.Errorf("a worker started") })
		res := h.task(t, TaskOptions{Args: TaskArgs{Prompt: "x"}})
		if res.Status != StatusRejected || !strings.HasPrefix(res.Content, "task: ") || !strings.Contains(res.Content, "not a directory") || res.ParentSession != "" {
			t.Errorf("result = %+v", res)
		}
	})
}

// runWithChild runs a main agent in a new harness whose one child plays
// child, and returns the harness, the run and the child's spec.
func runWithChild(t *testing.T, cfg Config, args string, child play) (*harness, RunResult, *fakeWorker) {
	t.Helper()
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = 1
	}
	h := newHarness(t, cfg, cast{main: delegates(args), child: child}.play)
	res := h.run(t, RunOptions{Prompt: "main prompt"})
	w := h.l.byLabel("main/1")
	if w == nil {
		t.Fatalf("no child ran: %s", h.rec.dump())
	}
	return h, res, w
}

// dies is a child that starts and is killed.
func dies(w *fakeWorker) {
	if w.Start() && w.Turn(1) && w.Say("working on it", model.Usage{Input: 40, Output: 4}) {
		w.Die("SIGKILL")
	}
}

// TestShellResumeWritesOnlyItsOwnSession: `ink task --resume` of a child
// that a main session owns resumes it in its own transcript and records
// the resume in a new shell session; the main session's transcript is
// left byte-identical, whether the owner is found or named with --parent.
func TestShellResumeWritesOnlyItsOwnSession(t *testing.T) {
	t.Parallel()
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("parent named %v", named), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h, main, child := runWithChild(t, Config{}, `{"prompt":"job"}`, dies)
				before := h.store.bytes(main.Transcript)
				sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, completes("resumed and done", model.Usage{Input: 60, Output: 6}))
				opts := TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(child.Spec.SessionID)}}
				if named {
					opts.Parent = main.SessionID
				}
				res := sh.task(t, opts)
				if res.Status != StatusCompleted || res.ParentSession == "" || res.ParentSession == main.SessionID {
					t.Fatalf("result = %+v", res)
				}
				if after := h.store.bytes(main.Transcript); len(before) == 0 || string(after) != string(before) {
					t.Fatalf("the owner's transcript changed")
				}
				for _, want := range []string{"resumed and done", "(child lifetime: 2 attempts, ≥60 in / ≥6 out)", "ink task --resume " + child.Spec.SessionID} {
					if !strings.Contains(res.Content, want) {
						t.Errorf("result lacks %q:\n%s", want, res.Content)
					}
				}
				rs := sh.l.byLabel("shell/1").Spec
				if rs.Transcript != child.Spec.Transcript || rs.Create != nil || !rs.Repair {
					t.Errorf("the resume runs on %s (create %v)", rs.Transcript, rs.Create)
				}
				shellPath := session.MainPath(h.cfg.InkHome, h.cfg.Cwd, res.ParentSession)
				tr, err := h.store.Open(shellPath, false)
				if err != nil || len(tr.Messages) != 2 {
					t.Fatalf("shell session: %v, %d messages", err, len(tr.Messages))
				}
				if rec, err := session.ParseTaskRecord(tr.Messages[1].TaskRecord); err != nil || rec.ChildID != child.Spec.SessionID || rec.ParentSessionID != res.ParentSession {
					t.Errorf("shell record %+v: %v", rec, err)
				}
				if kids := h.store.under(session.ChildrenDir(shellPath) + "/*"); len(kids) != 0 {
					t.Errorf("the shell session got children: %v", kids)
				}
				ts := sh.rec.waitFor(t, "task.start", is[event.TaskStart]("shell/1")).Body.(event.TaskStart)
				if !ts.Resumed || ts.ChildID != child.Spec.SessionID {
					t.Errorf("task.start = %+v", ts)
				}
			})
		})
	}
}

// TestShellResumeFindsNoOwner: when no session of this directory owns the
// child, the refusal says what the directory has and how to name the
// session, and nothing is written.
func TestShellResumeFindsNoOwner(t *testing.T) {
	t.Parallel()
	empty := newHarness(t, Config{MaxDepth: 1}, nil)
	res := empty.task(t, TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp("01nochild")}})
	if res.Status != StatusRejected || !strings.Contains(res.Content, "(this directory has no sessions)") || !strings.HasSuffix(res.Content, "\nStart a new task instead.") {
		t.Errorf("no sessions: %q", res.Content)
	}

	h, main, child := runWithChild(t, Config{}, `{"prompt":"job"}`, completes("ok", model.Usage{}))
	before := snapshot(t, h.cfg.InkHome)
	for _, tc := range []struct {
		name   string
		opts   TaskOptions
		want   []string
		events int
	}{
		{"unknown child", TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp("01nochild")}},
			[]string{`cannot resume child "01nochild": not-found: no session of ` + h.cfg.Cwd + " has a child with that id",
				fmt.Sprintf("Children of this directory's sessions: %s (completed, session %s)", child.Spec.SessionID, main.SessionID),
				"name its session with --parent (see `ink sessions ls`)"}, 2},
		{"unknown parent", TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp(child.Spec.SessionID)}, Parent: "01noparent"},
			[]string{`cannot resume child "` + child.Spec.SessionID + `": --parent 01noparent: no session 01noparent for ` + h.cfg.Cwd}, 2},
		{"parent without that child", TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp("01nochild")}, Parent: main.SessionID},
			[]string{`cannot resume child "01nochild":`, "- not-found: "}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, func(w *fakeWorker) { t.Errorf("a worker started") })
				res := sh.task(t, tc.opts)
				if res.Status != StatusRejected || !res.IsError || res.ParentSession != "" || !strings.HasSuffix(res.Content, "Start a new task instead.") {
					t.Errorf("result = %+v", res)
				}
				for _, w := range tc.want {
					if !strings.Contains(res.Content, w) {
						t.Errorf("refusal lacks %q:\n%s", w, res.Content)
					}
				}
				if got := snapshot(t, h.cfg.InkHome); !reflect.DeepEqual(got, before) {
					t.Error("a refused resume changed INK_HOME")
				}
				if evs := sh.rec.all(); len(evs) != tc.events || evs[len(evs)-1].Body.(event.RunEnd).Rejected != 1 {
					t.Errorf("events = %s", sh.rec.dump())
				}
			})
		})
	}

	// A session with no children.
	noKids := newHarness(t, Config{MaxDepth: 1}, func(w *fakeWorker) {
		if w.Start() {
			w.Complete("ok", model.Usage{})
		}
	})
	noKids.run(t, RunOptions{Prompt: "p"})
	sh := newHarness(t, Config{InkHome: noKids.cfg.InkHome, Cwd: noKids.cfg.Cwd, MaxDepth: 1}, nil)
	if res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp("01nochild")}}); !strings.Contains(res.Content, "(its sessions have no children)") {
		t.Errorf("no children: %q", res.Content)
	}
}

// TestShellResumeTakesTheFoundChild: the lookup `ink task --resume` ran
// before the supervisor started (TaskOptions.Found) is the one the resume
// uses: the supervisor looks nothing up again. A result for another child
// is not taken: the supervisor looks that one up itself.
func TestShellResumeTakesTheFoundChild(t *testing.T) {
	t.Parallel()
	h, main, child := runWithChild(t, Config{}, `{"prompt":"job"}`, dies)
	id := child.Spec.SessionID
	found, err := locate(h.store, h.cfg.InkHome, h.cfg.Cwd, id, "")
	if err != nil || found.OwnerPath != main.Transcript || found.OwnerID != main.SessionID || found.Child.Path != child.Spec.Transcript {
		t.Fatalf("locate = %+v, %v", found, err)
	}
	sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, completes("resumed and done", model.Usage{}))
	before := h.store.lookups.Load()
	res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(id)}, Found: &found})
	if res.Status != StatusCompleted || !strings.Contains(res.Content, "resumed and done") {
		t.Fatalf("result = %+v", res)
	}
	if n := h.store.lookups.Load() - before; n != 0 {
		t.Errorf("the supervisor looked the child up %d more times", n)
	}
	if rs := sh.l.byLabel("shell/1").Spec; rs.Transcript != child.Spec.Transcript {
		t.Errorf("the resume runs on %s", rs.Transcript)
	}

	// Found for another child: looked up again, and refused as not found.
	stale := found
	stale.Child.Header.ID = "01otherchild"
	before = h.store.lookups.Load()
	res = sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "x", Resume: strp("01nochild")}, Found: &stale})
	if res.Status != StatusRejected || !strings.Contains(res.Content, `cannot resume child "01nochild": not-found: no session of `) {
		t.Errorf("result = %+v", res)
	}
	if h.store.lookups.Load() == before {
		t.Error("a lookup for another child was taken as this one's")
	}
}
