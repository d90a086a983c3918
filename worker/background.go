package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// maxReminders is how many times an agent that ends its turn while its
// background children are not collected is told so; after that ink waits
// for them itself and hands the model their results.
const maxReminders = 2

// reminderText tells an agent which background children it left running
// (or ended and never collected), and what to do about them.
func reminderText(pending string) string {
	return "[ink] You ended your turn, but children you started in the background have not been collected:\n" + pending +
		"\nCollect their results with task_wait (with no ids it waits for all of them), or stop the ones you no longer need " +
		"with task_cancel. This run does not end until they have ended and their results reached you."
}

// waitedText hands an agent the results ink collected for it.
const waitedText = "[ink] You ended your turn again with background children not collected, so ink waited for them. " +
	"Their results follow; take them into account in your final answer.\n\n"

// collectBackground keeps an agent from ending with background children it
// has not collected: while the supervisor names any, the agent is told so
// (a user message naming them) and its loop goes on; after maxReminders,
// ink waits for them and gives the model their results — with their
// TaskRecords, in the transcript — before its final turn. res is the loop's
// result so far; the one returned covers every run.
func (a *attempt) collectBackground(ctx context.Context, w sink, l holder, view *session.View, res loop.Result,
	base *atomic.Int64, run func() (loop.Result, error)) (loop.Result, error) {
	for reminders := 0; ; {
		pend := a.request(ctx, ipc.OpPending, "", nil)
		if ctx.Err() != nil {
			return res, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		if pend.IsError || len(pend.Running) == 0 {
			return res, nil
		}
		var note model.Message
		if reminders < maxReminders {
			reminders++
			note = model.UserText(reminderText(pend.Content))
		} else {
			ans := a.request(ctx, ipc.OpWait, "", json.RawMessage(`{}`))
			if ctx.Err() != nil {
				return res, fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			note = model.UserText(waitedText + ans.Content)
			for _, r := range ans.Records {
				raw, _ := json.Marshal(r)
				note.TaskRecords = append(note.TaskRecords, raw)
			}
		}
		note = a.redact.message(note, "ink's note on background children")
		if err := l.Check(); err != nil {
			return res, err
		}
		e, err := w.AppendMessage(note)
		if err != nil {
			return res, fmt.Errorf("transcript write: %w", err)
		}
		_ = view.Apply(e)
		l.Progress()
		a.event(event.Message{Message: note})
		base.Store(int64(res.Turns))
		more, err := run()
		res.Messages = append(append(res.Messages, note), more.Messages...)
		res.Turns += more.Turns
		res.Usage = res.Usage.Add(more.Usage)
		res.Health = append(res.Health, more.Health...)
		if more.Capped != "" {
			res.Capped = more.Capped
		}
		if strings.TrimSpace(more.FinalText) != "" {
			res.FinalText = more.FinalText
		}
		if err != nil {
			return res, err
		}
	}
}

// turnShift numbers a loop run's model turns after those of the runs
// before it, so Request.Turn counts within the whole attempt.
type turnShift struct {
	model.Provider
	base int
}

var _ model.Provider = (*turnShift)(nil)

func (p *turnShift) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	req.Turn += p.base
	return p.Provider.Stream(ctx, req, onDelta)
}
