package orchestrator

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
	"github.com/inkdev/ink/worktree"
)

// loses is a main agent whose supervisor is lost mid fan-out: it makes
// the calls, gets the first answer, and dies before recording anything.
func loses(calls ...model.ToolCall) play {
	return func(w *fakeWorker) {
		if !w.Start() || !w.CallTasks(calls...) {
			return
		}
		for _, c := range calls {
			if !w.Request(c.ID, string(c.Args)) {
				return
			}
		}
		if _, ok := w.AwaitAnswer(calls[0].ID); ok {
			w.Die("SIGKILL")
		}
	}
}

// TestContinueAnswersOpenTaskCalls: when `ink run --session` continues a
// main session whose task calls were left without results, each call is
// answered from its child's own transcript — the child's result when its
// attempt ended — from the attempt that call started, even after a shell
// resumed the child first; the main transcript is whole again and the
// next continue has nothing left to answer.
func TestContinueAnswersOpenTaskCalls(t *testing.T) {
	t.Parallel()
	for _, childrenFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("children first %v", childrenFirst), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				calls := []model.ToolCall{taskCallOf("c1", `{"prompt":"alpha"}`), taskCallOf("c2", `{"prompt":"beta"}`)}
				// alpha answers only once beta runs: the main worker dies on
				// alpha's answer, and beta must be running then.
				betaRuns := make(chan struct{})
				h := newHarness(t, Config{MaxDepth: 1}, cast{
					main: loses(calls...),
					byPrompt: map[string]play{
						"alpha": func(w *fakeWorker) {
							if w.Start() && w.Turn(1) && w.Wait(betaRuns) {
								w.Complete("alpha done", model.Usage{Input: 11, Output: 1})
							}
						},
						"beta": func(w *fakeWorker) {
							if w.Start() && w.Turn(1) {
								close(betaRuns)
								if _, ok := w.AwaitCancel(); ok {
									w.Finish(ipc.Outcome{Status: StatusInterrupted, Reason: ipc.HostLost, Turns: 1})
								}
							}
						},
					},
				}.play)
				first := h.run(t, RunOptions{Prompt: "p"})
				if first.Status != StatusCrash {
					t.Fatalf("first run %s", first.Status)
				}
				alpha, beta := h.l.byPrompt("alpha").Spec, h.l.byPrompt("beta").Spec
				mainBefore := h.store.bytes(first.Transcript)

				if childrenFirst {
					sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, completes("beta done later", model.Usage{}))
					if res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "finish", Resume: strp(beta.SessionID)}}); res.Status != StatusCompleted {
						t.Fatalf("shell resume of beta: %+v", res)
					}
					if after := h.store.bytes(first.Transcript); string(after) != string(mainBefore) {
						t.Fatal("the shell resume wrote into the main session")
					}
				}

				cont := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, func(w *fakeWorker) {
					if w.Start() {
						w.Complete("recovered", model.Usage{})
					}
				})
				res := cont.run(t, RunOptions{Prompt: "go on", SessionID: first.SessionID})
				if res.Status != StatusCompleted {
					t.Fatalf("continue: %s %s", res.Status, res.Reason)
				}
				answers := map[string]ipc.Answer{}
				for _, a := range cont.l.byLabel("main").Spec.Answers {
					answers[a.Message.Results[0].ToolCallID] = a
				}
				if len(answers) != 2 {
					t.Fatalf("answers for %d calls, want 2", len(answers))
				}
				a1 := answers["c1"]
				if c := a1.Message.Results[0].Content; !strings.HasPrefix(c, "[task] recovered from the child's own transcript: the parent stopped before this result was recorded.\nalpha done") || a1.Message.Results[0].IsError {
					t.Errorf("c1 answered %q", c)
				}
				rec, err := session.ParseTaskRecord(a1.TaskRecord)
				if err != nil || rec.ChildID != alpha.SessionID || rec.TaskToolCallID != "c1" || rec.ParentSessionID != first.SessionID || rec.Status != StatusCompleted ||
					!rec.Launched || rec.Usage == nil || rec.Usage.Input != 11 || rec.Binding == nil || rec.Transcript.Path != alpha.Transcript {
					t.Errorf("c1 record %+v: %v", rec, err)
				}
				a2 := answers["c2"]
				want := "[task] recovered from the child's own transcript: the parent stopped before this result was recorded.\ntask interrupted after 1 turn: host lost."
				if c := a2.Message.Results[0].Content; !strings.HasPrefix(c, want) || strings.Contains(c, "beta done later") || !a2.Message.Results[0].IsError ||
					!strings.Contains(c, fmt.Sprintf("child session id: %s — continue it with task({resume: %q", beta.SessionID, beta.SessionID)) {
					t.Errorf("c2 answered %q, want %q", c, want)
				}
				if rec, err := session.ParseTaskRecord(a2.TaskRecord); err != nil || rec.Status != StatusInterrupted || rec.AttemptID != beta.AttemptID {
					t.Errorf("c2 record %+v: %v", rec, err)
				}
				tr, err := h.store.Open(first.Transcript, false)
				if err != nil || session.ScanPairs(tr.Messages).State != session.Consistent {
					t.Fatalf("main transcript after the continue: %v", err)
				}
				if got := cont.o.childAnswers(t.Context(), tr); len(got) != 0 {
					t.Errorf("answered calls are answered again: %d", len(got))
				}
			})
		})
	}
}

// transcriptBuilder writes a transcript of an in-memory store for a test.
type transcriptBuilder struct {
	t    testing.TB
	s    *memStore
	w    *memWriter
	path string
	id   string
}

func newTranscript(t testing.TB, s *memStore, path string, h session.Header) *transcriptBuilder {
	t.Helper()
	w, err := s.writer(path, h)
	if err != nil {
		t.Fatal(err)
	}
	return &transcriptBuilder{t: t, s: s, w: w, path: path, id: h.ID}
}

func (b *transcriptBuilder) msg(m model.Message) *transcriptBuilder {
	b.t.Helper()
	if _, err := b.w.AppendMessage(m); err != nil {
		b.t.Fatal(err)
	}
	return b
}

func (b *transcriptBuilder) attempt(a session.AttemptEntry) *transcriptBuilder {
	b.t.Helper()
	if err := b.w.AppendAttempt(a); err != nil {
		b.t.Fatal(err)
	}
	return b
}

// run records one attempt: start, the prompt, and (when ended) the text
// and an end entry.
func (b *transcriptBuilder) run(attemptID, prompt, text string, ended bool) *transcriptBuilder {
	b.attempt(session.AttemptEntry{Phase: session.PhaseStart, AttemptID: attemptID})
	b.msg(model.UserText(prompt))
	if ended {
		u := model.Usage{Input: 5, Output: 1}
		b.msg(model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: text}}})
		b.attempt(session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: attemptID, Status: StatusCompleted, Turns: 1, Usage: &u, FinalText: session.FinalTextTail(text), FinalTextLen: len(text)})
	}
	return b
}

// childOf starts a child transcript of main with a valid launch record.
func childOf(t testing.TB, main *transcriptBuilder, cwd string) *transcriptBuilder {
	return agentChildOf(t, main, cwd, "")
}

// agentChildOf is childOf for a child launched with the profile agent
// ("" for none).
func agentChildOf(t testing.TB, main *transcriptBuilder, cwd, agent string) *transcriptBuilder {
	id := session.NewID()
	launch := &session.LaunchRecord{
		Version: 1, ParentSessionID: main.id, ChildID: id, InkVersion: version.Ink, Binding: testBinding, Cwd: cwd,
		Tools: []string{"read"}, System: session.SystemRef{SHA256: session.SystemFingerprint("x")}, Depth: 1, MaxDepth: 1,
	}
	if agent != "" {
		launch.Agent = &session.AgentRef{Name: agent, Source: "/agents/" + agent + ".md", RoleSHA256: strings.Repeat("0", 64)}
	}
	return newTranscript(t, main.s, session.ChildPath(main.path, id), session.Header{ID: id, Cwd: cwd, Parent: main.id, Launch: launch})
}

func record(t testing.TB, r session.TaskRecord) json.RawMessage {
	t.Helper()
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestChildAnswersUnit: the calls left open are matched to their
// children: a resume call to the attempt it started (never an earlier
// attempt's answer), a new call to an unused child with its prompt; a
// call whose child cannot be found is left alone, and a child that cannot
// be read yields the outcome-unknown answer.
func TestChildAnswersUnit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := "/ink-test/"+t.Name(), "/ink-test/proj"
		o, s := memOrchestrator(t, home)
		mainID := session.NewID()
		main := newTranscript(t, s, session.MainPath(home, cwd, mainID), session.Header{ID: mainID, Cwd: cwd})

		// alpha ran once for c1 (recorded), then was resumed by r1 and ended.
		alpha := childOf(t, main, cwd).run("01a1", "alpha", "first answer", true).run("01a2", "again", "second answer", true)
		// beta ran once for r2's earlier call (recorded) and was never resumed.
		beta := childOf(t, main, cwd).run("01b1", "beta", "beta answer", true)
		// Two children with the same prompt for two open calls.
		twinA := childOf(t, main, cwd).run("01t1", "twin", "twin one", true)
		twinB := childOf(t, main, cwd).run("01t2", "twin", "twin two", false)
		// twinB's worker still runs: its outcome is unknown, not lost.
		if _, err := s.acquire(twinB.path, lease.Owner{AttemptID: "01t2"}, 4242); err != nil {
			t.Fatal(err)
		}
		// A child whose body is broken past its header.
		broken := childOf(t, main, cwd).run("01k1", "broken", "x", true)
		s.put(broken.path, append(s.bytes(broken.path), "{not json}\n{\"type\":\"message\"}\n"...))

		rec := func(callID, childID string) json.RawMessage {
			u := model.Usage{}
			return record(t, session.TaskRecord{Version: 1, AttemptID: session.NewID(), TaskToolCallID: callID, ParentSessionID: mainID, ChildID: childID,
				Launched: true, Status: StatusCompleted, Usage: &u, Transcript: &session.TranscriptRef{Present: true, Path: "/x"}})
		}
		result := func(callID string, raw json.RawMessage) model.Message {
			return model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: callID, ToolName: "task", Content: "ok"}}, TaskRecord: raw}
		}
		main.msg(model.UserText("p")).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{taskCallOf("c1", `{"prompt":"alpha"}`), taskCallOf("c0", `{"prompt":"beta"}`)}}).
			msg(result("c1", rec("c1", alpha.id))).
			msg(result("c0", rec("c0", beta.id))).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				taskCallOf("r1", fmt.Sprintf(`{"prompt":"again","resume":%q}`, alpha.id)),
				taskCallOf("r2", fmt.Sprintf(`{"prompt":"more","resume":%q}`, beta.id)),
				taskCallOf("t1", `{"prompt":"twin"}`),
				taskCallOf("t2", `{"prompt":"twin"}`),
				taskCallOf("lost", `{"prompt":"never created"}`),
				taskCallOf("bad", `{"prompt":""}`),
				taskCallOf("k1", fmt.Sprintf(`{"prompt":"x","resume":%q}`, broken.id)),
				{ID: "read-1", Name: "read", Args: json.RawMessage(`{"path":"a"}`)},
			}})
		tr, err := s.Open(main.path, false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]ipc.Answer{}
		for _, a := range o.childAnswers(t.Context(), tr) {
			got[a.Message.Results[0].ToolCallID] = a
		}
		content := func(id string) string {
			a, ok := got[id]
			if !ok {
				return "(no answer)"
			}
			return a.Message.Results[0].Content
		}
		for _, tc := range []struct {
			call    string
			want    string
			notWant string
		}{
			{"r1", "second answer", "first answer"},
			{"r2", "the outcome is unknown; check before relying on it.\nchild session id: " + beta.id, "beta answer"},
			{"t1", "twin one", "twin two"},
			{"t2", "the outcome is unknown; check before relying on it.\nchild session id: " + twinB.id, "twin one"},
			{"k1", "The child's transcript " + broken.path + " cannot be read: ", ""},
		} {
			if c := content(tc.call); !strings.Contains(c, tc.want) || (tc.notWant != "" && strings.Contains(c, tc.notWant)) {
				t.Errorf("%s answered %q, want %q", tc.call, c, tc.want)
			}
		}
		for _, id := range []string{"c1", "c0", "lost", "bad", "read-1"} {
			if _, ok := got[id]; ok {
				t.Errorf("%s was answered: %q", id, content(id))
			}
		}
		if r, err := session.ParseTaskRecord(got["r1"].TaskRecord); err != nil || r.AttemptID != "01a2" || r.ChildID != alpha.id || r.Tools == nil || r.Turns != 1 {
			t.Errorf("r1 record %+v: %v", r, err)
		}
		if r, err := session.ParseTaskRecord(got["t1"].TaskRecord); err != nil || r.ChildID != twinA.id {
			t.Errorf("t1 record %+v: %v", r, err)
		}
	})
}

// TestChildAnswersMatchAgents: two open calls with one prompt for two
// agents are answered by their own agents' children, whatever order the
// children were created in.
func TestChildAnswersMatchAgents(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := "/ink-test/"+t.Name(), "/ink-test/proj"
		o, s := memOrchestrator(t, home)
		mainID := session.NewID()
		main := newTranscript(t, s, session.MainPath(home, cwd, mainID), session.Header{ID: mainID, Cwd: cwd})
		// The reviewer's child was created first, though its call came second.
		reviewer := agentChildOf(t, main, cwd, "reviewer").run("01r1", "check the patch", "reviewer says fine", true)
		tester := agentChildOf(t, main, cwd, "tester").run("01s1", "check the patch", "tester says two fail", true)
		plain := childOf(t, main, cwd).run("01p1", "check the patch", "plain says ok", true)
		main.msg(model.UserText("p")).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				taskCallOf("t", `{"prompt":"check the patch","agent":"Tester"}`), // as a call may name it,
				taskCallOf("r", `{"prompt":"check the patch","agent":"reviewer"}`),
				taskCallOf("p", `{"prompt":"check the patch"}`),
			}})
		tr, err := s.Open(main.path, false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, a := range o.childAnswers(t.Context(), tr) {
			r, err := session.ParseTaskRecord(a.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			got[a.Message.Results[0].ToolCallID] = r.ChildID
		}
		for call, want := range map[string]string{"t": tester.id, "r": reviewer.id, "p": plain.id} {
			if got[call] != want {
				t.Errorf("call %s answered from child %q, want %q", call, got[call], want)
			}
		}
	})
}

// TestRecoverBackground: continuing a session whose supervisor died puts
// back, as ended and not yet collected, each background child whose result
// its agent never collected — with its answer and record from its own
// transcript, from the attempt that call started — and leaves out the
// ones already collected and the ones whose attempt has no end and may
// still run.
func TestRecoverBackground(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := "/ink-test/"+t.Name(), "/ink-test/proj"
		o, s := memOrchestrator(t, home)
		mainID := session.NewID()
		main := newTranscript(t, s, session.MainPath(home, cwd, mainID), session.Header{ID: mainID, Cwd: cwd})
		done := agentChildOf(t, main, cwd, "tester").run("01d1", "run the tests", "two tests fail", true)
		collected := childOf(t, main, cwd).run("01c1", "lint", "clean", true)
		unended := childOf(t, main, cwd).run("01u1", "slow", "", false)
		// unended's worker still runs (it holds its lease): nothing to hand over.
		if _, err := s.acquire(unended.path, lease.Owner{AttemptID: "01u1"}, 4242); err != nil {
			t.Fatal(err)
		}
		started := func(callID, id string) model.Message {
			return model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: callID, ToolName: "task",
				Content: startedText(ChildStatus{ID: id})}}}
		}
		u := model.Usage{}
		rec := record(t, session.TaskRecord{Version: 1, AttemptID: "01c1", TaskToolCallID: "w", ParentSessionID: mainID, ChildID: collected.id,
			Launched: true, Status: StatusCompleted, Usage: &u, Transcript: &session.TranscriptRef{Present: true, Path: collected.path}})
		main.msg(model.UserText("p")).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				taskCallOf("b1", `{"prompt":"run the tests","agent":"tester","background":true}`),
				taskCallOf("b2", `{"prompt":"lint","background":true}`),
				taskCallOf("b3", `{"prompt":"slow","background":true}`),
				taskCallOf("f", `{"prompt":"run the tests"}`),
			}}).
			msg(started("b1", done.id)).msg(started("b2", collected.id)).msg(started("b3", unended.id)).
			msg(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "f", ToolName: "task", Content: "x"}}}).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "w", Name: "task_wait", Args: json.RawMessage(`{"ids":["` + collected.id + `"]}`)}}}).
			msg(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "w", ToolName: "task_wait", Content: "clean"}}, TaskRecords: []json.RawMessage{rec}}).
			// The collected child, resumed in the background and not collected
			// again: its second attempt is put back.
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				taskCallOf("b4", fmt.Sprintf(`{"prompt":"lint again","resume":%q,"background":true}`, collected.id))}}).
			msg(started("b4", collected.id))
		collected.run("01c2", "lint again", "still clean", true)
		tr, err := s.Open(main.path, false)
		if err != nil {
			t.Fatal(err)
		}
		ar := &agentRun{label: "main", transcript: main.path}
		o.recoverBackground(tr, ar)

		pending := (&Orchestrator{}).pendingChildren(ar)
		if len(pending.Pending) != 2 || pending.Pending[0] != done.id || pending.Pending[1] != collected.id {
			t.Fatalf("pending after recovery: %v (%s)", pending.Pending, pending.Content)
		}
		st := pending.Children[0]
		if st.State != ChildEnded || st.Status != StatusCompleted || st.Agent != "tester" || st.Label != "main/1" || st.Collected || st.Turns != 1 {
			t.Errorf("recovered child's status: %+v", st)
		}
		targets, bad := lookup(ar, "task_wait", []string{done.id})
		if bad != nil {
			t.Fatalf("task_wait cannot find the recovered child: %s", bad.Content)
		}
		ans := collectAnswer("task_wait", targets, nil, "")
		if !strings.Contains(ans.Content, "two tests fail") || !strings.Contains(ans.Content, "recovered from the child's own transcript") ||
			len(ans.Records) != 1 || ans.Records[0].ChildID != done.id || ans.Records[0].Status != StatusCompleted {
			t.Errorf("task_wait of the recovered child: %q, records %+v", ans.Content, ans.Records)
		}
		if again := collectAnswer("task_wait", targets, nil, ""); len(again.Records) != 0 {
			t.Errorf("the record was handed out twice")
		}
		again, bad := lookup(ar, "task_wait", []string{collected.id})
		if bad != nil {
			t.Fatalf("task_wait cannot find the child resumed in the background: %s", bad.Content)
		}
		if a := collectAnswer("task_wait", again, nil, ""); !strings.Contains(a.Content, "still clean") || len(a.Records) != 1 || a.Records[0].AttemptID != "01c2" {
			t.Errorf("task_wait of the child resumed in the background: %q, records %+v", a.Content, a.Records)
		}
		if ar.registry().get(unended.id) != nil {
			t.Errorf("the child whose attempt never ended was put back")
		}
	})
}

// TestChildLostWithItsHost: every process of a run killed at once leaves a
// child whose attempt started and never ended, and a parent that recorded
// nothing of it. Its lease is free and its holder gone, so continuing the
// session answers the call with status interrupted, reason host lost and
// the child's resume id, and the resume that answer offers is accepted: the
// worker is launched to repair its tail.
func TestChildLostWithItsHost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		call := taskCallOf("c1", `{"prompt":"alpha"}`)
		h := newHarness(t, Config{MaxDepth: 1}, cast{main: loses(call), byPrompt: map[string]play{"alpha": dies}}.play)
		first := h.run(t, RunOptions{Prompt: "p"})
		alpha := h.l.byPrompt("alpha").Spec
		if tail, err := h.store.Tail(alpha.Transcript); err != nil || tail.LastEnd != nil || !tail.StartedSince {
			t.Fatalf("the child's tail %+v, %v: want a start without an end", tail, err)
		}

		cont := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, func(w *fakeWorker) {
			if w.Start() {
				w.Complete("recovered", model.Usage{})
			}
		})
		if res := cont.run(t, RunOptions{Prompt: "go on", SessionID: first.SessionID}); res.Status != StatusCompleted {
			t.Fatalf("continue: %s %s", res.Status, res.Reason)
		}
		answers := cont.l.byLabel("main").Spec.Answers
		if len(answers) != 1 {
			t.Fatalf("%d answers, want 1", len(answers))
		}
		c := answers[0].Message.Results[0].Content
		if !strings.Contains(c, "task interrupted after 1 turn: host lost.") || !strings.Contains(c, fmt.Sprintf("continue it with task({resume: %q", alpha.SessionID)) {
			t.Errorf("the call was answered %q; want interrupted / host lost with the resume id", c)
		}
		if rec, err := session.ParseTaskRecord(answers[0].TaskRecord); err != nil || rec.Status != StatusInterrupted || rec.Reason != ipc.HostLost || rec.AttemptID != alpha.AttemptID {
			t.Errorf("record %+v, %v", rec, err)
		}

		// The resume it offers works, from a shell too.
		sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, completes("alpha done", model.Usage{}))
		res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(alpha.SessionID)}, Parent: first.SessionID})
		if res.Status != StatusCompleted {
			t.Fatalf("resume of the lost child: %+v", res)
		}
		if w := sh.l.byPrompt("go on"); w == nil || !w.Spec.Repair {
			t.Errorf("the resume's worker was not allowed to repair the tail")
		}
	})
}

// TestRecoveredLongAnswer: an end entry keeps only the tail of a long
// final text (the whole is the last assistant message, stored once); a
// result recovered from it says how much was dropped, as the first one
// did, and ends with the same tail.
func TestRecoveredLongAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := "/ink-test/"+t.Name(), "/ink-test/proj"
		o, s := memOrchestrator(t, home)
		mainID := session.NewID()
		main := newTranscript(t, s, session.MainPath(home, cwd, mainID), session.Header{ID: mainID, Cwd: cwd})
		long := "START " + strings.Repeat("é", session.MaxFinalText) + " END"
		child := childOf(t, main, cwd).run("01l1", "long", long, true)
		main.msg(model.UserText("p")).msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{taskCallOf("c1", `{"prompt":"long"}`)}})
		ctr, err := s.Open(child.path, false)
		if err != nil {
			t.Fatal(err)
		}
		end, ok := ctr.LastAttemptEnd()
		if !ok || len(end.FinalText) > session.MaxFinalText || end.FinalTextLen != len(long) || !strings.HasSuffix(long, end.FinalText) {
			t.Fatalf("end entry keeps %d bytes of a %d-byte text (FinalTextLen %d)", len(end.FinalText), len(long), end.FinalTextLen)
		}
		tr, err := s.Open(main.path, false)
		if err != nil {
			t.Fatal(err)
		}
		answers := o.childAnswers(t.Context(), tr)
		if len(answers) != 1 {
			t.Fatalf("answers = %+v", answers)
		}
		content := answers[0].Message.Results[0].Content
		_, dropped := truncateTail(long, maxResultBytes)
		if !strings.Contains(content, fmt.Sprintf("result truncated to its last 50KB (dropped %d bytes)", dropped)) || !strings.Contains(content, "é END") || strings.Contains(content, "START") {
			t.Errorf("recovered result = %.300q", content)
		}
		if got := wholeFinalText(ctr, end); got != long {
			t.Errorf("wholeFinalText gave %d bytes; want the whole %d", len(got), len(long))
		}
	})
}

// TestChildAnswersWithoutATranscript: a continued session answers an open
// task call whose supervisor died after making the child's worktree and
// before the child's transcript existed by naming the child and its
// worktree, with no resume to offer. A child transcript a crash of the
// machine left empty never started: no answer offers to resume it.
func TestChildAnswersWithoutATranscript(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, cwd := "/ink-test/"+t.Name(), "/ink-test/proj"
		o, s := memOrchestrator(t, home)
		ws := memHomeOf(t, home).ws
		mainID := session.NewID()
		main := newTranscript(t, s, session.MainPath(home, cwd, mainID), session.Header{ID: mainID, Cwd: cwd})
		wtChild := session.NewID()
		rec, err := ws.Create(t.Context(), worktree.Repo{Root: cwd, Head: "abc123"}, home, wtChild, worktree.Origin{ParentSession: mainID, ToolCallID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		empty := session.NewID()
		s.put(session.ChildPath(main.path, empty), nil)
		main.msg(model.UserText("p")).
			msg(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				taskCallOf("w1", `{"prompt":"in a worktree","worktree":true}`),
				taskCallOf("e1", `{"prompt":"lost with the machine"}`),
			}})
		tr, err := s.Open(main.path, false)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, a := range o.childAnswers(t.Context(), tr) {
			got[a.Message.Results[0].ToolCallID] = a.Message.Results[0].Content
		}
		w := got["w1"]
		for _, want := range []string{"interrupted before the child started", "child id: " + wtChild, rec.Path, rec.Branch, "`ink worktrees rm " + wtChild + "`", "start a new task instead"} {
			if !strings.Contains(w, want) {
				t.Errorf("w1 answered %q; want it to say %q", w, want)
			}
		}
		for id, c := range got {
			if strings.Contains(c, "resume") {
				t.Errorf("%s answered %q: it offers a resume that would be refused", id, c)
			}
		}
	})
}

// TestShellCallDurableBeforeChild: a front end's task call (ink task, ink
// mcp) is recorded in its shell session and made durable before its child
// is sent its attempt — the first, which creates the session with it, and
// every later one — so a child whose start survived a crash of the machine
// always finds in its parent the call that started it.
func TestShellCallDurableBeforeChild(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var h *harness
		var mu sync.Mutex
		var launched []string
		h = newHarness(t, Config{MaxDepth: 1}, func(w *fakeWorker) {
			child := w.Spec.Transcript
			main := filepath.Dir(filepath.Dir(child)) + ".jsonl"
			mu.Lock()
			launched = append(launched, w.Spec.Prompt)
			n := len(launched)
			mu.Unlock()
			if got := strings.Count(string(h.store.syncedBytes(main)), `"name":"task"`); got < n {
				t.Errorf("child %d (%q) was sent its attempt while %d task calls of its shell session were durable", n, w.Spec.Prompt, got)
			}
			if w.Start() {
				w.Complete("done", model.Usage{})
			}
		})
		p := h.o.NewParent(ParentOptions{Label: "mcp"})
		defer p.Close(nil)
		for _, prompt := range []string{"alpha", "beta"} {
			if res := p.Task(t.Context(), Call{Tasks: []TaskArgs{{Prompt: prompt}}}); res.IsError {
				t.Fatalf("task %s: %+v", prompt, res)
			}
		}
		if len(launched) != 2 {
			t.Fatalf("launched %q, want alpha and beta", launched)
		}
	})
}
