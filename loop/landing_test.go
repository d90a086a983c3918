package loop_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
)

// endless is a script that reads a file every turn until it is told to
// answer; the wrap-up rule answers the request that carries the cap.
const endless = `
rules:
  - when: {user: "You cannot call tools any more"}
    reply: {text: "wrap-up: read f1..f3, nothing fixed yet", usage: {input: 300, output: 10}}
  - reply: {calls: [{tool: read, args: {path: f}}], usage: {input: 300, output: 10}}
`

func TestMaxTurnsLandsSoftly(t *testing.T) {
	t.Parallel()
	prov := &requestLog{Provider: parseScript(t, endless)}
	var s sink
	opts := s.options(prov, &blobTool{name: "read", size: 30})
	opts.MaxTurns = 3
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capped != loop.CappedTurns || res.Turns != 4 || res.FinalText != "wrap-up: read f1..f3, nothing fixed yet" {
		t.Fatalf("capped %q after %d turns with %q; want the turns cap, 3 turns and the wrap-up", res.Capped, res.Turns, res.FinalText)
	}
	last := prov.reqs[len(prov.reqs)-1]
	ask := last.Messages[len(last.Messages)-1]
	if !last.TextOnly || len(last.Tools) != 1 || ask.Role != model.RoleUser ||
		!strings.Contains(ask.Text(), "You have used all 3 turns") || !strings.Contains(ask.Text(), "Write your final answer now") {
		t.Errorf("final request: textOnly %v, %d tools, last message %q", last.TextOnly, len(last.Tools), ask.Text())
	}
	for _, req := range prov.reqs[:3] {
		if req.TextOnly {
			t.Errorf("turn %d was text-only", req.Turn)
		}
	}
	// The request for the answer is part of the transcript.
	msgs := s.messages()
	if m := msgs[len(msgs)-2]; m.Role != model.RoleUser || m.Text() != ask.Text() {
		t.Errorf("OnMessage did not get the request for the answer: %+v", m)
	}
	if w := s.eventsOf(loop.EventWarning); len(w) != 1 || !strings.Contains(w[0].Text, "3-turn cap") {
		t.Errorf("warnings = %+v; want one about the cap", w)
	}
}

func TestMaxTurnsNotReached(t *testing.T) {
	t.Parallel()
	var s sink
	opts := s.options(twoTurns(t, call("read", "a", 0)), &blobTool{name: "read", size: 10})
	opts.MaxTurns = 2
	res, err := loop.Run(context.Background(), opts)
	if err != nil || res.Capped != "" || res.FinalText != "finished" || res.Turns != 2 {
		t.Fatalf("run = %q capped %q after %d turns, %v; a run that ends within its cap is not capped", res.FinalText, res.Capped, res.Turns, err)
	}
}

// TestLandingCallsAreNotRun: a model that calls tools in its final turn
// gets an error result for each call, nothing runs, and the run ends.
func TestLandingCallsAreNotRun(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	var s sink
	opts := s.options(parseScript(t, `
rules:
  - reply: {text: "still going", calls: [{tool: sleep, args: {label: x, ms: 0}}]}
`), &sleepTool{name: "sleep", safe: true, rec: rec})
	opts.MaxTurns = 1
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capped != loop.CappedTurns || res.Turns != 2 {
		t.Fatalf("capped %q after %d turns", res.Capped, res.Turns)
	}
	rs := results(t, res.Messages)
	if len(rs) != 2 || !rs[1].IsError || !strings.Contains(rs[1].Content, "not run: the turn cap was reached") {
		t.Errorf("results = %+v; want the final turn's call answered as not run", rs)
	}
	if n := len(rec.started()); n != 1 {
		t.Errorf("%d calls ran; want only the first turn's", n)
	}
}

// budget is a token budget of a fixed size; safe for concurrent use.
type budget struct {
	mu    sync.Mutex
	left  int64
	spent []model.Usage
}

func (b *budget) Spend(u model.Usage) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u != (model.Usage{}) {
		b.spent = append(b.spent, u)
	}
	b.left -= u.Total()
	return b.left
}

var _ loop.Budget = (*budget)(nil)

func TestBudgetLandsSoftly(t *testing.T) {
	t.Parallel()
	prov := &requestLog{Provider: parseScript(t, endless)}
	var s sink
	b := &budget{left: 1000}
	opts := s.options(prov, &blobTool{name: "read", size: 30})
	opts.Budget = b
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// 310 tokens a turn: after two turns 380 are left, less than twice the
	// next turn, so the third is the wrap-up.
	if res.Capped != loop.CappedBudget || res.Turns != 3 || !strings.HasPrefix(res.FinalText, "wrap-up") {
		t.Fatalf("capped %q after %d turns with %q; want the budget cap on turn 3", res.Capped, res.Turns, res.FinalText)
	}
	last := prov.reqs[len(prov.reqs)-1]
	if ask := last.Messages[len(last.Messages)-1].Text(); !last.TextOnly || !strings.Contains(ask, "token budget of this task is nearly spent") {
		t.Errorf("final request: textOnly %v, asks %q", last.TextOnly, ask)
	}
	if len(b.spent) != 3 || b.left != 1000-3*310 {
		t.Errorf("the budget was spent %d times, %d left; want every call spent", len(b.spent), b.left)
	}
}

// TestBudgetAlreadySpent: a run that starts with nothing left answers at
// once, without tools.
func TestBudgetAlreadySpent(t *testing.T) {
	t.Parallel()
	prov := &requestLog{Provider: parseScript(t, endless)}
	var s sink
	opts := s.options(prov, &blobTool{name: "read", size: 30})
	opts.Budget = &budget{left: 0}
	res, err := loop.Run(context.Background(), opts)
	if err != nil || res.Capped != loop.CappedBudget || res.Turns != 1 || !prov.reqs[0].TextOnly {
		t.Fatalf("capped %q after %d turns, %v; want one text-only turn", res.Capped, res.Turns, err)
	}
}

// TestCompactionSpendsTheBudget: the summary call is paid for too.
func TestCompactionSpendsTheBudget(t *testing.T) {
	t.Parallel()
	b := &budget{left: 1 << 40}
	var s sink
	opts := s.options(parseScript(t, `
rules:
  - when: {compaction: true}
    reply: {text: "summary", usage: {input: 50, output: 5}}
  - when: {turn: 1}
    reply: {calls: [{tool: read, args: {path: f}}], usage: {input: 10, output: 1}}
  - when: {turn: 2, user: "compacted"}
    reply: {text: "done", usage: {input: 20, output: 2}}
  - reply: {error: "prompt is too long"}
`), &blobTool{name: "read", size: 30})
	opts.Budget = b
	if _, err := loop.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, u := range b.spent {
		total += u.Total()
	}
	if total != 11+55+22 {
		t.Errorf("spent %d tokens over %d calls; want 88, the summary included", total, len(b.spent))
	}
}
