package orchestrator

import (
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"strings"
)

// fromTranscript completes the result of an attempt whose worker ended
// without reporting its outcome (killed by a second Ctrl-C, by the OOM
// killer, after the cancel grace) from the worker's own record in the
// transcript at path, so that what ink shows agrees with what the
// transcript says. When the worker wrote the attempt's end entry before it
// died, that entry's status, reason, turns, usage and final text are the
// attempt's; otherwise the turns and usage are counted from the assistant
// messages written since the attempt started (usage marked incomplete: the
// turn in flight is not counted); so are they when the end entry is one
// the supervisor wrote for a worker it lost, which counts none. A result
// that came with its outcome, or
// whose worker never started, is returned as it is. (A worker reports its
// lease's fencing epoch, at least 1, with every outcome it sends after
// taking the lease; a result without one never got that outcome.)
func (o *Orchestrator) fromTranscript(res attemptResult, path string) attemptResult {
	if !res.Launched || res.Epoch != 0 || res.AttemptID == "" || path == "" {
		return res
	}
	tr, err := o.store.Open(path, false)
	if err != nil {
		return res
	}
	started := false
	turns := 0
	var usage model.Usage
	for _, e := range tr.Entries {
		switch {
		case e.Attempt != nil && e.Attempt.AttemptID == res.AttemptID && e.Attempt.Phase == session.PhaseStart:
			started = true
		case e.Attempt != nil && e.Attempt.AttemptID == res.AttemptID && e.Attempt.Phase == session.PhaseEnd:
			a := e.Attempt
			lost := res.Reason
			res.Status, res.Turns, res.Text, res.Epoch = a.Status, a.Turns, wholeFinalText(tr, *a), a.Epoch
			switch {
			case lost == "" || lost == a.Reason:
				res.Reason = a.Reason
			case a.Reason == "":
				res.Reason = lost
			default:
				res.Reason = a.Reason + "; then " + lost
			}
			if a.Usage != nil {
				res.Usage = *a.Usage
			} else if a.Turns == 0 && turns > 0 {
				// An end the supervisor wrote for a worker it lost (a
				// remote one's, session.LostEnd) knows nothing of the
				// attempt's turns: they are counted as for a worker that
				// wrote no end.
				res.Turns = turns
				usage.Incomplete = true
				res.Usage = usage
			}
			if a.Capped != "" {
				res.Capped = a.Capped
			}
			if len(a.Health) > 0 {
				res.Health = a.Health
			}
			return res
		case started && e.Message != nil && e.Message.Role == model.RoleAssistant:
			turns++
			if e.Message.Usage != nil {
				usage = usage.Add(*e.Message.Usage)
			}
		}
	}
	if started && turns > res.Turns {
		res.Turns = turns
		usage.Incomplete = true
		res.Usage = usage
	}
	return res
}

// wholeFinalText returns the final text of the attempt that ended with
// end: the entry's FinalText, or, when that is only its tail, the text of
// the last assistant message of the transcript that ends with it.
func wholeFinalText(tr *session.Transcript, end session.AttemptEntry) string {
	if end.FinalTextLen <= len(end.FinalText) {
		return end.FinalText
	}
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		m := tr.Messages[i]
		if text := m.Text(); m.Role == model.RoleAssistant && len(text) == end.FinalTextLen && strings.HasSuffix(text, end.FinalText) {
			return text
		}
	}
	return end.FinalText
}
