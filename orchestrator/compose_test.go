package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestComposeResultEdges: the result a parent model reads in the less
// common endings — a wrap-up at a cap, no answer at all, an interruption —
// and the order of its parts: text, health, worktree, extra lines, usage,
// the resume hint, then the handoff.
func TestComposeResultEdges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      resultInput
		isError bool
		want    string // the whole result
	}{
		{
			name: "wrap-up at the token budget",
			in:   resultInput{Status: "completed", Text: "partial findings", Turns: 3, Capped: "budget", ChildID: "c1", Transcript: "/t/c1.jsonl"},
			want: "partial findings\n\n[task] the run's token budget ran out; this is the child's wrap-up answer, not a confirmed completion.\n" +
				"(child: 3 turns, 0 in / 0 out)\nchild session id: c1 — continue it with task({resume: \"c1\", prompt: \"…\"})",
		},
		{
			name:    "turn cap without an answer",
			in:      resultInput{Status: "completed", Turns: 40, Capped: "turns", ChildID: "c1", Transcript: "/t/c1.jsonl", Prompt: "map the repo"},
			isError: true,
			want: "[task] child spent 40 turns without producing a final answer (it hit its turn cap).\n(child: 40 turns, 0 in / 0 out)\n" +
				"child session id: c1 — continue it with task({resume: \"c1\", prompt: \"…\"})\nwork is preserved in the full transcript:\n  /t/c1.jsonl\n" +
				"the child's task was: \"map the repo\"\nContinue it with the resume id above, or start a new task with a narrower prompt.",
		},
		{
			name:    "budget without an answer, for a person at a shell",
			in:      resultInput{Status: "completed", Turns: 1, Capped: "budget", ChildID: "c1", Transcript: "/t/c1.jsonl", Prompt: "p", Shell: true},
			isError: true,
			want: "[task] child spent 1 turn without producing a final answer (the run's token budget ran out).\n(child: 1 turn, 0 in / 0 out)\n" +
				"child session id: c1 — continue it with: ink task --resume c1 \"…\"\nwork is preserved in the full transcript:\n  /t/c1.jsonl\n" +
				"the child's task was: \"p\"\nContinue it with the resume id above, or start a new task with a narrower prompt.",
		},
		{
			name: "interrupted, every part in order",
			in: resultInput{Status: "interrupted", Reason: "host lost", Turns: 2, Usage: model.Usage{Input: 1500, Output: 20, CacheWrite: 3000},
				ChildID: "c1", Transcript: "/t/c1.jsonl", Prompt: "p", Health: []string{"slow provider"},
				WorktreeLines: []string{"[task] worktree kept"}, ExtraLines: []string{"(child lifetime: 2 attempts, 3k in / 40 out)"}},
			isError: true,
			want: "task interrupted after 2 turns: host lost.\n[health] slow provider\n[task] worktree kept\n(child lifetime: 2 attempts, 3k in / 40 out)\n" +
				"(child: 2 turns, 1.5k in / 20 out / 3k cache)\nchild session id: c1 — continue it with task({resume: \"c1\", prompt: \"…\"})\n" +
				"work is preserved in the full transcript:\n  /t/c1.jsonl\nthe child's task was: \"p\"\nContinue it with the resume id above, or start a new task with a narrower prompt.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isErr := composeResult(tc.in)
			if got != tc.want || isErr != tc.isError {
				t.Errorf("result (isError %v):\n%s\nwant (isError %v):\n%s", isErr, got, tc.isError, tc.want)
			}
		})
	}
}

// TestSmallWordings: the short phrases results and refusals are built
// from.
func TestSmallWordings(t *testing.T) {
	t.Parallel()
	checks := []struct{ got, want string }{
		{Turns(1), "1 turn"},
		{Turns(0), "0 turns"},
		{ExitState{Signal: "SIGKILL"}.Describe(42), "the worker process (pid 42) was killed by signal SIGKILL"},
		{ExitState{Code: 1}.Describe(42), "the worker process (pid 42) exited with status 1 before reporting an outcome"},
		{atURL(model.Binding{Provider: "ollama", Model: "qwen3", BaseURL: "http://gpu:11434"}), " at http://gpu:11434"},
		{atURL(testBinding), ""},
		{resumeRefusal("c1", []Problem{{"model-drift", "launched on a"}, {"cwd-missing", "gone"}}),
			"cannot resume child \"c1\":\n- model-drift: launched on a\n- cwd-missing: gone\nStart a new task instead."},
		{clip("héllo", 2), "hé"},
		{clip("hé", 5), "hé"},
		{FirstRunes("héllo", 3), "hél…"},
		{cappedWhy("turns"), "it hit its turn cap"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if u := usageOf(nil); u != (model.Usage{}) {
		t.Errorf("usageOf(nil) = %+v", u)
	}
	if u := usageOf(&model.Usage{Input: 3}); u.Input != 3 {
		t.Errorf("usageOf = %+v", u)
	}
	if got := (&Orchestrator{store: newMemStore()}).lifetimeLine("/ink-test/missing.jsonl"); got != nil {
		t.Errorf("lifetime of a missing transcript = %v", got)
	}
	if got := sortedCopy([]string{"b", "a"}); strings.Join(got, ",") != "a,b" {
		t.Errorf("sortedCopy = %v", got)
	}
	a, err := ParseTaskArgs(json.RawMessage(`{"prompt":"x","timeoutMs":1000}`))
	if err != nil || a.Prompt != "x" || *a.TimeoutMs != 1000 {
		t.Errorf("ParseTaskArgs = %+v, %v", a, err)
	}
	if _, err := ParseTaskArgs(json.RawMessage(`{"prompt":"x","timeoutMs":"1000"}`)); err == nil {
		t.Error("ParseTaskArgs accepted a string timeout")
	}
}
