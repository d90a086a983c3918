package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/console/screentest"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// env wraps a body about agent for the display.
func env(agent string, body event.Event) event.Envelope {
	return event.Envelope{Agent: agent, Session: "s1", Time: time.Now(), Body: body}
}

// dur matches a rounded duration in a line ("0s", "100ms", "1.2s").
const dur = `[0-9.]+m?s`

// TestDisplayPlainLines: off a terminal every event that matters is one
// plain line on stderr, each saying what happened in words; per-turn
// progress prints nothing.
func TestDisplayPlainLines(t *testing.T) {
	t.Parallel()
	u := &model.Usage{Input: 12000, Output: 1400}
	for _, tc := range []struct {
		name string
		prep []event.Envelope // handled first, output ignored
		e    event.Envelope
		want string // a regexp for the whole output; "" = nothing
	}{
		{name: "run start", e: env("main", event.RunStart{Model: "anthropic/claude-sonnet-4-5"}),
			want: `ink: main started \(session s1, model anthropic/claude-sonnet-4-5\)`},
		{name: "queued", e: env("main", event.TaskQueued{Child: "main/3"}),
			want: `ink: main/3 queued: the window of parallel children is full`},
		{name: "child start", e: env("main/1", event.TaskStart{ChildID: "c1", Pid: 4242}),
			want: `ink: main/1 started \(pid 4242, child c1\)`},
		{name: "child start as an agent in a worktree", e: env("main/2", event.TaskStart{ChildID: "c2", AgentName: "fixer", Pid: 7, Worktree: "/w/c2"}),
			want: `ink: main/2 started as fixer \(pid 7, child c2 in worktree /w/c2\)`},
		{name: "turn start", e: env("main/1", event.TurnStart{Turn: 2})},
		{name: "message", e: env("main/1", event.Message{Message: model.Message{Role: model.RoleAssistant, Usage: u}})},
		{name: "tool end", e: env("main/1", event.ToolEnd{ID: "t", Name: "bash"})},
		{name: "tool start", e: env("main/1", event.ToolStart{Name: "bash", Args: json.RawMessage(`{"command":"go   test\n ./..."}`)}),
			want: `ink: main/1 bash go test \./\.\.\.`},
		{name: "tool start, long argument", e: env("main/1", event.ToolStart{Name: "grep", Args: json.RawMessage(`{"pattern":"` + strings.Repeat("é", 70) + `"}`)}),
			want: `ink: main/1 grep ` + strings.Repeat("é", 60) + `…`},
		{name: "tool start, no arguments it shows", e: env("main/1", event.ToolStart{Name: "ls", Args: json.RawMessage(`{"depth":2}`)}),
			want: `ink: main/1 ls `},
		{name: "compaction", e: env("main", event.Compaction{TokensBefore: 120_000}),
			want: `ink: main compacted its history \(120k tokens before\) to fit its model's context window`},
		{name: "child completed", prep: []event.Envelope{env("main/1", event.TaskStart{ChildID: "c1"})},
			e:    env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Turns: 3, Usage: u, Reason: "ignored when completed"}),
			want: `ink: main/1 completed after ` + dur + `: 3 turns, 12k in / 1\.4k out`},
		{name: "child timed out, usage from its messages",
			prep: []event.Envelope{env("main/1", event.TaskStart{ChildID: "c1"}), env("main/1", event.Message{Message: model.Message{Usage: u}})},
			e:    env("main/1", event.TaskEnd{ChildID: "c1", Status: "timeout", Turns: 1, Reason: "timed out after 5m0s"}),
			want: `ink: main/1 timeout after ` + dur + `: 1 turn, 12k in / 1\.4k out — timed out after 5m0s`},
		{name: "rejected", e: env("main/3", event.TaskEnd{Status: "rejected", Reason: "cannot resume child \"c9\":\n- not-found: no such child\nStart a new task instead."}),
			want: `ink: main/3 rejected: cannot resume child "c9":`},
		{name: "worktree removed", e: env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Worktree: &session.WorktreeOutcome{Disposition: "removed"}}),
			want: `ink: main/1 completed after ` + dur + `: 0 turns, 0 in / 0 out; worktree removed \(no changes\)`},
		{name: "worktree kept with work", e: env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Worktree: &session.WorktreeOutcome{Disposition: "kept-work", Path: "/w/c1", Branch: "ink/c1"}}),
			want: `ink: main/1 completed after .*` + "; worktree kept on branch ink/c1 at /w/c1 \\(review with `ink worktrees diff c1`\\)"},
		{name: "worktree kept for a resume", e: env("main/1", event.TaskEnd{ChildID: "c1", Status: "crash", Worktree: &session.WorktreeOutcome{Disposition: "kept-resumable", Path: "/w/c1", Branch: "ink/c1"}}),
			want: `ink: main/1 crash after .*; worktree kept \(no changes\) on branch ink/c1 at /w/c1 for the child's resume`},
		{name: "worktree kept for safety", e: env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Worktree: &session.WorktreeOutcome{Disposition: "kept-unknown", Path: "/w/c1", Detail: "git status failed"}}),
			want: `ink: main/1 completed after .*; worktree kept for safety at /w/c1: git status failed`},
		{name: "worktree removal failed", e: env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Worktree: &session.WorktreeOutcome{Disposition: "removal-failed", Detail: "busy"}}),
			want: `ink: main/1 completed after .*` + "; worktree removal-failed: busy \\(see `ink worktrees ls`\\)"},
		{name: "warning about an agent", e: env("main/1", event.Warning{Text: "retrying after a 529"}),
			want: `ink: main/1 warning: retrying after a 529`},
		{name: "warning about ink", e: env("ink", event.Warning{Text: "profile x.md has bad YAML"}),
			want: `ink: warning: profile x.md has bad YAML`},
		{name: "run end", e: env("main", event.RunEnd{Status: "completed"}),
			want: `ink: main completed after ` + dur},
		{name: "run end with rejections", e: env("shell", event.RunEnd{Status: "rejected", Rejected: 2}),
			want: `ink: shell rejected after ` + dur + ` \(2 task call\(s\) rejected\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			d := NewDisplay(&buf, false)
			for _, p := range tc.prep {
				d.Handle(p)
			}
			buf.Reset()
			d.Handle(tc.e)
			d.Close()
			got := buf.String()
			if tc.want == "" {
				if got != "" {
					t.Errorf("printed %q for a silent event", got)
				}
				return
			}
			if !regexp.MustCompile(`^`+tc.want+`.*\n$`).MatchString(got) || strings.Count(got, "\n") != 1 || strings.Contains(got, "\x1b") {
				t.Errorf("printed %q, want one plain line matching %q", got, tc.want)
			}
		})
	}
}

// screen is a terminal of 80 columns the display draws on.
type screen struct{ *screentest.Screen }

func newScreen() *screen { return &screen{screentest.New(80, 24)} }

// show is every line the terminal shows or lets scroll back to.
func (s *screen) show() []string { return s.History() }

// TestDisplayLiveRows: on a terminal each running or queued agent has a
// row under the log lines, redrawn in place (the old rows erased) as
// things change; a finished agent's row goes, its end line stays.
func TestDisplayLiveRows(t *testing.T) {
	t.Parallel()
	s := newScreen()
	d := NewDisplay(s, true)
	defer d.Close()
	rowRe := func(label, agent, status, tool string) *regexp.Regexp {
		return regexp.MustCompile(`^  ` + regexp.QuoteMeta(label) + ` +` + agent + ` *` + status + ` +[0-9]+s +(1 turn|[0-9]+ turns) +[0-9.kM]+ in / +[0-9.kM]+ out  ` + tool + `$`)
	}
	check := func(step string, want ...any) {
		t.Helper()
		got := s.show()
		if len(got) != len(want) {
			t.Fatalf("%s: screen %q, want %d lines", step, got, len(want))
		}
		for i, w := range want {
			switch w := w.(type) {
			case string:
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("%s: line %d = %q, want prefix %q", step, i, got[i], w)
				}
			case *regexp.Regexp:
				if !w.MatchString(got[i]) {
					t.Errorf("%s: line %d = %q, want a row matching %s", step, i, got[i], w)
				}
			}
		}
	}
	d.Handle(env("main", event.RunStart{Model: "m"}))
	check("run start", "ink: main started", rowRe("main", "", "running", ""))
	d.Handle(env("main/1", event.TaskStart{ChildID: "c1", AgentName: "scout", Pid: 9}))
	d.Handle(env("main", event.TaskQueued{Child: "main/2"}))
	check("children", "ink: main started", "ink: main/1 started as scout", "ink: main/2 queued", rowRe("main", "", "running", ""),
		rowRe("main/1", "scout", "running", ""), rowRe("main/2", "", "queued", ""))
	d.Handle(env("main/1", event.ToolStart{Name: "grep", Args: json.RawMessage(`{"pattern":"x"}`)}))
	d.Handle(env("main/1", event.TurnStart{Turn: 2}))
	d.Handle(env("main/1", event.Warning{Text: "slow"}))
	check("tool shown in its row, no tool line", "ink: main started", "ink: main/1 started", "ink: main/2 queued", "ink: main/1 warning: slow",
		rowRe("main", "", "running", ""), rowRe("main/1", "scout", "running", "grep"), rowRe("main/2", "", "queued", ""))
	d.Handle(env("main/1", event.TaskEnd{ChildID: "c1", Status: "completed", Turns: 2}))
	d.Handle(env("main/2", event.TaskEnd{Status: "rejected", Reason: "no"}))
	check("ended rows go", "ink: main started", "ink: main/1 started", "ink: main/2 queued", "ink: main/1 warning: slow",
		"ink: main/1 completed after", "ink: main/2 rejected: no", rowRe("main", "", "running", ""))
	d.Handle(env("main", event.RunEnd{Status: "completed"}))
	d.Close()
	d.Close() // twice is harmless
	got := s.show()
	if last := got[len(got)-1]; !strings.HasPrefix(last, "ink: main completed after") {
		t.Errorf("final screen ends %q, want the run's end line and no rows", last)
	}
}

// TestDisplayConcurrentUse: many goroutines may hand events to one
// display (run with -race).
func TestDisplayConcurrentUse(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{false, true} {
		s := newScreen()
		d := NewDisplay(s, live)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				label := "main/" + string(rune('1'+i))
				d.Handle(env(label, event.TaskStart{ChildID: label}))
				for turn := range 20 {
					d.Handle(env(label, event.TurnStart{Turn: turn}))
					d.Handle(env(label, event.ToolStart{Name: "read", Args: json.RawMessage(`{"path":"a"}`)}))
				}
				d.Handle(env(label, event.TaskEnd{ChildID: label, Status: "completed"}))
			}()
		}
		wg.Wait()
		d.Close()
		if n := strings.Count(strings.Join(s.show(), "\n"), "completed after"); n != 8 {
			t.Errorf("live=%v: %d end lines, want 8", live, n)
		}
	}
}

// failingWriter fails every write from the nth on and counts the tries.
type failingWriter struct {
	buf   bytes.Buffer
	n     int
	tries int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.tries++
	if w.tries >= w.n {
		return 0, errors.New("write |1: broken pipe")
	}
	return w.buf.Write(p)
}

// TestJSONLines: the --json stream is one JSON object per line per event,
// each reading back as the same event; HTML is not escaped; after a write
// fails (stdout closed) nothing more is written.
func TestJSONLines(t *testing.T) {
	t.Parallel()
	evs := []event.Envelope{
		{Seq: 1, Agent: "main", Session: "s1", Time: time.Now(), Body: event.RunStart{Transcript: "/t/s1.jsonl", Model: "m"}},
		{Seq: 2, Agent: "main", Session: "s1", WorkerSeq: 1, Time: time.Now(), Body: event.ToolStart{ID: "t1", Name: "bash", Args: json.RawMessage(`{"command":"a <b> && c"}`)}},
		{Seq: 3, Agent: "main/1", Session: "c1", Time: time.Now(), Body: event.TaskEnd{ChildID: "c1", Status: "rejected", Reason: "no"}},
		{Seq: 4, Agent: "main", Session: "s1", Time: time.Now(), Body: event.RunEnd{Status: "completed", Rejected: 1}},
	}
	var buf bytes.Buffer
	sink := JSONLines(&buf, nil)
	for _, e := range evs {
		sink(e)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("%d lines for %d events:\n%s", len(lines), len(evs), buf.String())
	}
	for i, l := range lines {
		var back event.Envelope
		if err := json.Unmarshal([]byte(l), &back); err != nil {
			t.Fatalf("line %d does not read back: %v\n%s", i, err, l)
		}
		if back.Seq != evs[i].Seq || back.Agent != evs[i].Agent || back.WorkerSeq != evs[i].WorkerSeq || back.Body.Kind() != evs[i].Body.Kind() {
			t.Errorf("line %d reads back as %+v, want %+v", i, back, evs[i])
		}
	}
	if !strings.Contains(lines[1], `a <b> && c`) {
		t.Errorf("HTML was escaped: %s", lines[1])
	}

	w := &failingWriter{n: 2}
	sink = JSONLines(w, nil)
	for _, e := range evs {
		sink(e)
	}
	if w.tries != 2 || strings.Count(w.buf.String(), "\n") != 1 {
		t.Errorf("after a failed write: %d tries, output %q; want it to stop", w.tries, w.buf.String())
	}
}
