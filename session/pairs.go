package session

import (
	"fmt"

	"github.com/inkdev/ink/model"
)

// PairState is the verdict of ScanPairs.
type PairState int

// Pair states.
const (
	// Consistent: every tool call has exactly one result, after it.
	Consistent PairState = iota
	// Repairable: some calls of the last assistant message have no result
	// and only toolResult messages follow it: a crash tail.
	Repairable
	// Refused: the history is inconsistent beyond a crash tail.
	Refused
)

// PairScan is the result of ScanPairs.
type PairScan struct {
	State PairState
	// Missing lists the calls without a result, in call order (Repairable).
	Missing []model.ToolCall
	// Reason says why the history was refused (Refused).
	Reason string
}

// UnknownOutcomeText is the content of the result given to a call that was
// interrupted before its result was recorded.
const UnknownOutcomeText = "interrupted before a result was recorded — the outcome is unknown; check before relying on it"

// ScanPairs checks, in order, that every tool call in msgs is answered by
// exactly one later result. It refuses a call id used twice, a result with
// no earlier call, a second result for one call, a result naming another
// tool than its call, and a call left without a result anywhere but in the
// last assistant message (or followed by a user message). Calls of the last
// assistant message that lack results, followed only by toolResult
// messages, are Repairable: UnknownOutcomeResults answers them.
func ScanPairs(msgs []model.Message) PairScan {
	type call struct {
		c        model.ToolCall
		answered bool
	}
	calls := map[string]*call{}
	var pending []*call // calls of the newest assistant message, in order
	refuse := func(format string, args ...any) PairScan {
		return PairScan{State: Refused, Reason: "inconsistent beyond a crash tail: " + fmt.Sprintf(format, args...)}
	}
	unanswered := func() *call {
		for _, p := range pending {
			if !p.answered {
				return p
			}
		}
		return nil
	}
	for i, m := range msgs {
		switch m.Role {
		case model.RoleAssistant:
			if p := unanswered(); p != nil {
				return refuse("tool call %s (%s) has no result and message %d, an assistant message, follows it", p.c.ID, p.c.Name, i+1)
			}
			pending = pending[:0]
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return refuse("message %d has a tool call without an id", i+1)
				}
				if _, dup := calls[c.ID]; dup {
					return refuse("tool call id %s is used twice (again in message %d)", c.ID, i+1)
				}
				cl := &call{c: c}
				calls[c.ID] = cl
				pending = append(pending, cl)
			}
		case model.RoleToolResult:
			for _, r := range m.Results {
				cl, ok := calls[r.ToolCallID]
				switch {
				case !ok:
					return refuse("message %d holds a result for tool call %s, which no earlier assistant message made", i+1, r.ToolCallID)
				case cl.answered:
					return refuse("message %d holds a second result for tool call %s", i+1, r.ToolCallID)
				case r.ToolName != "" && r.ToolName != cl.c.Name:
					return refuse("message %d answers tool call %s (%s) as tool %s", i+1, r.ToolCallID, cl.c.Name, r.ToolName)
				}
				cl.answered = true
			}
		default:
			if p := unanswered(); p != nil {
				return refuse("tool call %s (%s) has no result and message %d, a %s message, follows it", p.c.ID, p.c.Name, i+1, m.Role)
			}
		}
	}
	var missing []model.ToolCall
	for _, p := range pending {
		if !p.answered {
			missing = append(missing, p.c)
		}
	}
	if len(missing) > 0 {
		return PairScan{State: Repairable, Missing: missing}
	}
	return PairScan{State: Consistent}
}

// UnknownOutcomeResults returns one isError toolResult message per missing
// call, in order, saying the outcome is unknown (UnknownOutcomeText).
func UnknownOutcomeResults(missing []model.ToolCall) []model.Message {
	out := make([]model.Message, 0, len(missing))
	for _, c := range missing {
		out = append(out, model.Message{
			Role: model.RoleToolResult,
			Results: []model.ToolResult{{
				ToolCallID: c.ID,
				ToolName:   c.Name,
				Content:    UnknownOutcomeText,
				IsError:    true,
			}},
		})
	}
	return out
}
