package script_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestCompactionRule checks that the summary request is answered by the
// rule that says compaction: true and by no other, and that such a rule
// answers nothing else.
func TestCompactionRule(t *testing.T) {
	t.Parallel()
	s := parse(t, `
contextWindow: 4000
rules:
  - when: {compaction: true}
    reply: {text: "summary of the work", usage: {input: 900, output: 40}}
  - when: {user: ".*"}
    reply: {text: "ordinary answer"}
`)
	var p model.Provider = s
	if wr, ok := p.(model.WindowReporter); !ok || wr.ContextWindow() != 4000 {
		t.Errorf("the script does not report its contextWindow of 4000 through model.WindowReporter")
	}
	history := []model.Message{model.UserText("fix it"), model.UserText(model.CompactionInstruction)}
	msg, err := s.Stream(context.Background(), model.Request{Turn: 3, Compaction: true, Messages: history}, nil)
	if err != nil || msg.Text() != "summary of the work" || msg.Usage.Output != 40 {
		t.Fatalf("summary request got %q (%+v), %v; want the compaction rule's reply", msg.Text(), msg.Usage, err)
	}
	msg, err = s.Stream(context.Background(), model.Request{Turn: 3, Messages: history}, nil)
	if err != nil || msg.Text() != "ordinary answer" {
		t.Fatalf("ordinary request got %q, %v; the compaction rule must not answer it", msg.Text(), err)
	}
}

func TestCompactionRequestWithoutRule(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - reply: {text: "a catch-all rule"}
`)
	if s.ContextWindow() != 0 {
		t.Errorf("ContextWindow = %d for a script without contextWindow, want 0", s.ContextWindow())
	}
	_, err := s.Stream(context.Background(), model.Request{Turn: 2, Compaction: true, Messages: []model.Message{model.UserText(model.CompactionInstruction)}}, nil)
	if err == nil || !strings.Contains(err.Error(), "no rule answers the compaction summary request") || !strings.Contains(err.Error(), "compaction: true") {
		t.Fatalf("err = %v; want one that says to add a rule with compaction: true", err)
	}
}

func TestContextOverflowReply(t *testing.T) {
	t.Parallel()
	s := parse(t, `
rules:
  - when: {turn: 1}
    reply: {error: "prompt is too long: 210000 tokens > 200000 maximum"}
  - reply: {error: "overloaded"}
`)
	msg, err := s.Stream(context.Background(), model.Request{Turn: 1, Messages: []model.Message{model.UserText("a long history")}}, nil)
	var pe *model.ProviderError
	if !model.IsContextOverflow(err) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "210000 tokens") {
		t.Fatalf("err = %v; want a context overflow that keeps the text", err)
	}
	if msg.Usage == nil || *msg.Usage != (model.Usage{}) {
		t.Errorf("usage of a refused request = %+v; want zero, as a provider reports", msg.Usage)
	}
	_, err = s.Stream(context.Background(), model.Request{Turn: 2}, nil)
	if model.IsContextOverflow(err) || err == nil || err.Error() != "overloaded" {
		t.Fatalf("err = %v; want the plain text of other errors", err)
	}
}
