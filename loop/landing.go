package loop

import (
	"fmt"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// capReached reports the cap that turn must land on, "" when the run may
// go on: CappedTurns once MaxTurns turns are made, CappedBudget when the
// budget left would not pay for another turn and a final one (each about
// the size of the next request).
func (r *runner) capReached(turn int, conv []model.Message) string {
	if r.opts.MaxTurns > 0 && turn > r.opts.MaxTurns {
		return CappedTurns
	}
	if r.opts.Budget != nil {
		next := r.window.estimate(r.request(conv, turn, false))
		if remaining := r.opts.Budget.Spend(model.Usage{}); remaining < 2*next {
			return CappedBudget
		}
	}
	return ""
}

// landingText is the user message that asks for the final answer.
func landingText(capped string, maxTurns int) string {
	why := fmt.Sprintf("You have used all %d turns this task allows.", maxTurns)
	if maxTurns == 1 {
		why = "You have used the one turn this task allows."
	}
	if capped == CappedBudget {
		why = "The token budget of this task is nearly spent."
	}
	return "[ink] " + why + " You cannot call tools any more. Write your final answer now: what you found or changed, what is still unfinished, and what should be checked before relying on it."
}

// landingWarning is the warning event of a soft landing.
func landingWarning(capped string, maxTurns int) string {
	if capped == CappedBudget {
		return "the token budget is nearly spent: asking the model for its final answer, without tools"
	}
	return fmt.Sprintf("the %d-turn cap is reached: asking the model for its final answer, without tools", maxTurns)
}

// refuseCalls answers the calls of the final turn of a soft landing
// without running them, in call order.
func (r *runner) refuseCalls(turn int, calls []model.ToolCall, capped string) ([]model.Message, error) {
	why := "the turn cap was reached"
	if capped == CappedBudget {
		why = "the token budget is nearly spent"
	}
	var out []model.Message
	for i := range calls {
		s := callSlot{call: calls[i]}
		r.emit(Event{Type: EventToolStart, Turn: turn, Call: &s.call})
		s.settle(tools.Result{Content: fmt.Sprintf("not run: %s, so no more tools may be called", why), IsError: true})
		msg, err := r.deliverResult(turn, &s)
		if err != nil {
			return out, err
		}
		out = append(out, msg)
	}
	return out, nil
}
