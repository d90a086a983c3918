package orchestrator

import (
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/model"
)

// TestProfileLimitsReachTheChild: an agent's thinking:, maxTurns: and
// contextWindow: lines win over --max-turns and --context-window for its
// children, are recorded in the launch record, and hold again when the
// child is resumed; a child without a profile runs under the flags.
func TestProfileLimitsReachTheChild(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		cfg := Config{InkHome: home, MaxDepth: 1, MaxTurns: 30, ContextWindow: 100_000,
			Profiles: loadProfiles(t, home, map[string]string{"scout": "thinking: high\nmaxTurns: 7\ncontextWindow: 50000\n"})}
		h := newHarness(t, cfg, cast{
			main:  delegates(`{"prompt":"scout it","agent":"scout"}`, `{"prompt":"plain"}`),
			child: completes("done", model.Usage{Input: 3, Output: 1}),
		}.play)
		res := h.run(t, RunOptions{Prompt: "p"})
		scout, plain := h.l.byPrompt("scout it"), h.l.byPrompt("plain")
		if scout == nil || plain == nil {
			t.Fatalf("children missing: %s", h.rec.dump())
		}
		type limits struct {
			thinking string
			turns    int
			window   int64
		}
		check := func(what string, got limits, thinking string, turns int, window int64) {
			t.Helper()
			if got.thinking != thinking || got.turns != turns || got.window != window {
				t.Errorf("%s runs with thinking %q, %d turns, window %d; want %q, %d, %d", what, got.thinking, got.turns, got.window, thinking, turns, window)
			}
		}
		check("the scout", limits{scout.Spec.Thinking, scout.Spec.MaxTurns, scout.Spec.ContextWindow}, "high", 7, 50_000)
		check("the plain child", limits{plain.Spec.Thinking, plain.Spec.MaxTurns, plain.Spec.ContextWindow}, "", 30, 100_000)

		tr, err := h.store.Open(scout.Spec.Transcript, false)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Launch == nil || tr.Header.Launch.Thinking != "high" {
			t.Errorf("launch record = %+v, want thinking high", tr.Header.Launch)
		}

		sh := newHarness(t, Config{InkHome: home, Cwd: h.cfg.Cwd, MaxDepth: 1, Profiles: cfg.Profiles}, completes("again", model.Usage{}))
		got := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(scout.Spec.SessionID)}, Parent: res.SessionID})
		if got.Status != StatusCompleted {
			t.Fatalf("resume = %+v", got)
		}
		again := sh.l.byPrompt("go on")
		check("the resumed scout", limits{again.Spec.Thinking, again.Spec.MaxTurns, again.Spec.ContextWindow}, "high", 7, 50_000)
	})
}

// TestDefaultTurnCap: with no --max-turns and no profile cap, every agent,
// the main one and each child, runs under DefaultMaxTurns; nothing runs
// without a turn cap.
func TestDefaultTurnCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{InkHome: t.TempDir(), MaxDepth: 1}, cast{
			main:  delegates(`{"prompt":"plain"}`),
			child: completes("done", model.Usage{Input: 3, Output: 1}),
		}.play)
		h.run(t, RunOptions{Prompt: "p"})
		main, child := h.l.byPrompt("p"), h.l.byPrompt("plain")
		if main == nil || child == nil {
			t.Fatalf("agents missing: %s", h.rec.dump())
		}
		if main.Spec.MaxTurns != DefaultMaxTurns || child.Spec.MaxTurns != DefaultMaxTurns {
			t.Errorf("main runs with a %d-turn cap, the child with %d; want %d", main.Spec.MaxTurns, child.Spec.MaxTurns, DefaultMaxTurns)
		}
	})
}
