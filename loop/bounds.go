package loop

import (
	"fmt"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// MaxCallsPerTurn is the per-turn call bound: the most tool calls of one
// reply that run. The others are answered, together in one toolResult
// message, with an error result telling the model to batch its work; a
// model that repeats a reply of thousands of calls can then do no more
// than this many calls a turn, for at most its turn cap.
const MaxCallsPerTurn = 64

// splitCalls returns the calls of a reply that may run and those past the
// per-turn call bound.
func splitCalls(calls []model.ToolCall) (run, over []model.ToolCall) {
	if len(calls) <= MaxCallsPerTurn {
		return calls, nil
	}
	return calls[:MaxCallsPerTurn], calls[MaxCallsPerTurn:]
}

// refuseOver answers the calls past the per-turn call bound, all in one
// toolResult message (one transcript line, one fsync), without running
// any. total is the number of calls the reply made.
func (r *runner) refuseOver(turn, total int, over []model.ToolCall) (model.Message, error) {
	first := overBoundText(total)
	msg := model.Message{Role: model.RoleToolResult, Results: make([]model.ToolResult, len(over))}
	for i, c := range over {
		text := first
		if i > 0 {
			text = fmt.Sprintf("not run: over the per-turn call bound (%d calls per reply); see the result of call %s", MaxCallsPerTurn, over[0].ID)
		}
		msg.Results[i] = model.ToolResult{ToolCallID: c.ID, ToolName: c.Name, Content: text, IsError: true}
	}
	r.emit(Event{Type: EventWarning, Turn: turn, Text: fmt.Sprintf("the reply made %d tool calls: ink takes the first %d and answered the other %d with an error (per-turn call bound)", total, MaxCallsPerTurn, len(over))})
	if err := r.deliver(turn, msg); err != nil {
		return msg, err
	}
	return msg, nil
}

// overBoundText is the result of the first call past the per-turn call
// bound.
func overBoundText(total int) string {
	return fmt.Sprintf("not run: this reply made %d tool calls, and ink takes at most %d per reply (the per-turn call bound), so this call and the %d after it were not run. Batch the work into fewer calls — one bash command, grep or find over many files does the work of many calls — and make any call still needed in your next reply.",
		total, MaxCallsPerTurn, total-MaxCallsPerTurn-1)
}

// unusable returns the isError result of a call that must not run because
// of its arguments (model.ToolCall.Invalid, or arguments past the
// tool-argument bound from a provider that does not check it), or false.
func unusable(call model.ToolCall) (tools.Result, bool) {
	why := call.Invalid
	if why == "" && len(call.Args) > model.MaxToolArgBytes {
		_, why = model.DroppedArgs(int64(len(call.Args)))
	}
	if why == "" {
		return tools.Result{}, false
	}
	return tools.Result{Content: fmt.Sprintf("not run: %s", why), IsError: true}, true
}

// tooLarge returns the error of a reply past the reply bound that its
// provider did not stop (model.MaxReplyBytes), or nil.
func tooLarge(msg model.Message) error {
	if model.ReplyBytes(msg) <= model.MaxReplyBytes {
		return nil
	}
	return &model.ReplyTooLargeError{}
}

// clipReply cuts the text and thinking of msg so that together they stay
// within the reply bound, and drops its tool calls: what is kept of a reply
// that failed.
func clipReply(msg model.Message) model.Message {
	room := model.MaxReplyBytes
	out := msg
	out.ToolCalls = nil
	out.Content = make([]model.Block, 0, len(msg.Content))
	for _, b := range msg.Content {
		if len(b.Text) > room {
			b.Text = model.ClipText(b.Text, room)
			b.Signature = ""
		}
		room -= len(b.Text)
		out.Content = append(out.Content, b)
	}
	return out
}
