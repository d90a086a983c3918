package orchestrator

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// loadProfiles writes profiles (name -> extra frontmatter lines) into
// home/agents and returns them loaded.
func loadProfiles(t *testing.T, home string, profiles map[string]string) Profiles {
	t.Helper()
	for name, extra := range profiles {
		writeProfile(t, filepath.Join(home, "agents"), name, "the "+name+" agent", extra)
	}
	set := agents.Load(agents.LoadOptions{InkHome: home})
	if len(set.Names()) != len(profiles) {
		t.Fatalf("loaded %v, problems %v", set.Names(), set.Problems())
	}
	return fixedProfiles{set}
}

// TestRejectionsChangeNothing: a task call that fails a check is answered
// with one clear error before anything happens: task.end "rejected", a
// TaskRecord that launched nothing, the run's rejected count, and no
// worker, transcript or worktree.
func TestRejectionsChangeNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     string
		noDepth  bool // --max-depth 0
		profiles map[string]string
		environ  []string
		want     []string
	}{
		{name: "blank prompt", args: `{"prompt":"  "}`, want: []string{"task: prompt is blank: say what the child should do"}},
		{name: "unknown argument", args: `{"prompt":"x","model":"gpt-5"}`, want: []string{`task: unknown argument "model"; task takes: prompt, agent, timeoutMs, worktree, resume`}},
		{name: "not an object", args: `["x"]`, want: []string{"task: the arguments must be a JSON object"}},
		{name: "timeout too short", args: `{"prompt":"x","timeoutMs":5}`, want: []string{"task: timeoutMs"}},
		{name: "resume with an agent", args: `{"prompt":"x","resume":"01abc","agent":"scout"}`, want: []string{"task: agent cannot be given with resume"}},
		{name: "depth limit", args: `{"prompt":"x"}`, noDepth: true, want: []string{"task: depth limit reached (--max-depth 0); do the work yourself"}},
		{name: "no agents defined", args: `{"prompt":"x","agent":"scout"}`, want: []string{`task: unknown agent "scout"`, "no agents are defined"}},
		{name: "unknown agent", args: `{"prompt":"x","agent":"nope"}`, profiles: map[string]string{"scout": ""},
			want: []string{`task: unknown agent "nope"; available agents: scout`}},
		{name: "worktree outside git", args: `{"prompt":"x","worktree":true}`,
			want: []string{"is not inside a git repository; retry the task without worktree"}},
		{name: "profile asks for a worktree outside git", args: `{"prompt":"x","agent":"fixer"}`, profiles: map[string]string{"fixer": "worktree: true\n"},
			want: []string{"is not inside a git repository; retry the task without worktree"}},
		{name: "profile model script missing", args: `{"prompt":"x","agent":"scripted"}`, profiles: map[string]string{"scripted": "model: script:nothere.yaml\n"},
			want: []string{`task: agent "scripted": model script:nothere.yaml: no such script file`, "fix the model: line of"}},
		{name: "profile model script that does not load", args: `{"prompt":"x","agent":"broken"}`, profiles: map[string]string{"broken": "model: script:/dev/null\n"},
			want: []string{`task: agent "broken": model script:/dev/null: `}},
		{name: "profile provider without a key", args: `{"prompt":"x","agent":"gpt"}`, profiles: map[string]string{"gpt": "model: openai/gpt-5-mini\n"},
			environ: []string{"PATH=/usr/bin"},
			want:    []string{`task: agent "gpt": `, "OPENAI_API_KEY", "or change the model: line of"}},
		{name: "resume of an unknown child", args: `{"prompt":"x","resume":"01nothere"}`,
			want: []string{`cannot resume child "01nothere":`, "- not-found: ", "\nStart a new task instead."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				home := t.TempDir()
				cfg := Config{InkHome: home, MaxDepth: 1, Environ: tc.environ}
				if tc.noDepth {
					cfg.MaxDepth = 0
				}
				if tc.profiles != nil {
					cfg.Profiles = loadProfiles(t, home, tc.profiles)
				}
				h := newHarness(t, cfg, cast{main: delegates(tc.args)}.play)
				res := h.run(t, RunOptions{Prompt: "p"})
				if res.Status != StatusCompleted {
					t.Fatalf("run %s: %s", res.Status, res.Reason)
				}
				a := h.l.byLabel("main").answer(t, "call-1")
				if !a.IsError {
					t.Errorf("a rejection is not an error: %q", a.Content)
				}
				for _, w := range tc.want {
					if !strings.Contains(a.Content, w) {
						t.Errorf("rejection lacks %q:\n%s", w, a.Content)
					}
				}
				r := a.Record
				if r == nil || r.Status != StatusRejected || r.Launched || r.ChildID != "" || r.TaskToolCallID != "call-1" || r.ParentSessionID != res.SessionID {
					t.Fatalf("record = %+v", r)
				}
				if err := r.Validate(); err != nil {
					t.Errorf("the rejection's record does not validate: %v", err)
				}
				end := h.rec.waitFor(t, "task.end", is[event.TaskEnd]("main/1")).Body.(event.TaskEnd)
				if end.Status != StatusRejected || end.Reason != a.Content || end.ToolCallID != "call-1" {
					t.Errorf("task.end = %+v", end)
				}
				if _, ok := firstIndex(h.rec.all(), is[event.TaskStart]("")); ok == nil {
					t.Error("task.start for a rejected call")
				}
				evs := h.rec.all()
				if re := evs[len(evs)-1].Body.(event.RunEnd); re.Rejected != 1 {
					t.Errorf("run.end counts %d rejected calls, want 1", re.Rejected)
				}
				if n := len(h.l.all()); n != 1 {
					t.Errorf("%d workers started, want only main", n)
				}
				if kids := h.store.under(session.ChildrenDir(res.Transcript) + "/*"); len(kids) != 0 {
					t.Errorf("child transcripts exist after a rejection: %v", kids)
				}
				if trees, _ := h.ws.List(t.Context(), home); len(trees) != 0 {
					t.Errorf("worktrees exist after a rejection: %v", trees)
				}
			})
		})
	}
}

// TestProfileShapesTheChild: a child launched as an agent profile runs
// with the profile's narrowed tools, thinking level, model, timeout and
// prompt body, and its launch record names the profile.
func TestProfileShapesTheChild(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		scriptDir := filepath.Join(home, "agents")
		if err := os.MkdirAll(scriptDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scriptDir, "scout.yaml"), []byte("rules:\n  - reply: {text: in parse.go}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		profiles := loadProfiles(t, home, map[string]string{"scout": "tools: Grep, Read\nthinking: high\nmodel: script:scout.yaml\ntimeout: 90\n"})
		h := newHarness(t, Config{InkHome: home, MaxDepth: 1, Profiles: profiles}, cast{
			main:  delegates(`{"prompt":"where is the parser?","agent":"scout"}`),
			child: completes("in parse.go", model.Usage{}),
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		if res.Status != StatusCompleted {
			t.Fatalf("run %s %s", res.Status, res.Reason)
		}
		sp := h.l.byLabel("main/1").Spec
		wantBinding := model.Binding{Provider: "script", Model: filepath.Join(scriptDir, "scout.yaml")}
		if sp.Agent != "scout" || !reflect.DeepEqual(sp.Tools, []string{"grep", "read"}) || sp.Thinking != "high" || sp.Binding != wantBinding ||
			!strings.Contains(sp.System, "# Agent profile\nYou are scout.") {
			t.Errorf("child spec: agent %q tools %v thinking %q binding %+v", sp.Agent, sp.Tools, sp.Thinking, sp.Binding)
		}
		l := sp.Create.Launch
		if l.Agent == nil || l.Agent.Name != "scout" || l.Agent.Source != filepath.Join(scriptDir, "scout.md") || l.Binding != wantBinding {
			t.Errorf("launch record = %+v", l)
		}
		a := h.l.byLabel("main").answer(t, "call-1")
		if a.Record.Agent != "scout" || a.Record.TimeoutMs != 90_000 || *a.Record.Binding != wantBinding {
			t.Errorf("record = %+v", a.Record)
		}
		if ts := h.rec.waitFor(t, "task.start", is[event.TaskStart]("main/1")).Body.(event.TaskStart); ts.AgentName != "scout" {
			t.Errorf("task.start agent %q", ts.AgentName)
		}
	})
}

// TestGrandchildren: with --max-depth 2 a child may delegate: its child is
// labelled main/1/1, runs at depth 2 without the task tool, and a task
// call at depth 2 is rejected.
func TestGrandchildren(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDepth: 2, TaskTimeout: time.Minute}, cast{
			main: delegates(`{"prompt":"lead"}`),
			byPrompt: map[string]play{
				"lead": func(w *fakeWorker) {
					if !w.Start() {
						return
					}
					a, ok := w.Delegate("sub-1", `{"prompt":"dig"}`)
					if ok {
						w.Complete("lead heard: "+a.Content, model.Usage{})
					}
				},
				"dig": func(w *fakeWorker) {
					if !w.Start() {
						return
					}
					if _, ok := w.Delegate("deep-1", `{"prompt":"deeper"}`); ok {
						w.Complete("dug", model.Usage{})
					}
				},
			},
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		if res.Status != StatusCompleted {
			t.Fatalf("run %s %s", res.Status, res.Reason)
		}
		lead, dig := h.l.byPrompt("lead"), h.l.byPrompt("dig")
		if lead.Spec.Label != "main/1" || !slices.Contains(lead.Spec.Tools, "task") || dig.Spec.Label != "main/1/1" || dig.Spec.Depth != 2 || slices.Contains(dig.Spec.Tools, "task") {
			t.Errorf("lead %s %v, dig %s depth %d %v", lead.Spec.Label, lead.Spec.Tools, dig.Spec.Label, dig.Spec.Depth, dig.Spec.Tools)
		}
		if dig.Spec.Transcript != session.ChildPath(lead.Spec.Transcript, dig.Spec.SessionID) {
			t.Errorf("grandchild transcript %s is not under its parent's", dig.Spec.Transcript)
		}
		if a := dig.answer(t, "deep-1"); !a.IsError || !strings.Contains(a.Content, "depth limit reached (--max-depth 2)") {
			t.Errorf("depth-2 task call answered %q", a.Content)
		}
		if a := lead.answer(t, "sub-1"); !strings.HasPrefix(a.Content, "dug") || a.Record.TimeoutMs != 60_000 {
			t.Errorf("lead's answer %q, record %+v", a.Content, a.Record)
		}
		if got := res.PerAgent; len(got) != 3 {
			t.Errorf("usage per agent %v, want main, main/1 and main/1/1", got)
		}
		if n := count[ipc.Ack](dig); n != 1 {
			t.Errorf("grandchild acknowledged %d times", n)
		}
	})
}
