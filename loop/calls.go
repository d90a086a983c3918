package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// callState is where one call of a group stands.
type callState int

const (
	stateQueued  callState = iota // gated, waiting for a window slot
	stateRunning                  // its tool is running
	stateSettled                  // it has its result
)

// callSlot is one call of a group being run.
type callSlot struct {
	call    model.ToolCall
	tool    tools.Tool
	state   callState
	result  tools.Result
	started time.Time
	ran     time.Duration
	overdue bool // the health watch reported it open too long
}

// finished is what a tool goroutine reports.
type finished struct {
	index  int
	result tools.Result
	ran    time.Duration
}

// runCalls runs the calls of one assistant message, group by group: a
// maximal run of consecutive safe calls is one group run in the sliding
// window, any other call is a group of its own. It returns the toolResult
// messages delivered, in call order. An error is an OnMessage failure; an
// interruption is not an error here: every call then still gets a result.
func (r *runner) runCalls(ctx context.Context, turn int, calls []model.ToolCall) ([]model.Message, error) {
	var out []model.Message
	for i := 0; i < len(calls); {
		j, window := i+1, 1
		if r.safe(calls[i]) {
			for j < len(calls) && r.safe(calls[j]) {
				j++
			}
			window = r.opts.MaxParallel
		}
		msgs, err := r.runGroup(ctx, turn, calls[i:j], window)
		out = append(out, msgs...)
		if err != nil {
			return out, err
		}
		i = j
	}
	return out, nil
}

// safe reports whether call may run beside its neighbours. A call to an
// unknown tool runs nothing, so it does not break a parallel group.
func (r *runner) safe(call model.ToolCall) bool {
	t, ok := r.pool[call.Name]
	return !ok || t.Safe()
}

// runGroup runs one group of calls with at most window tools running at
// once, refilling the window as each finishes, and delivers the results in
// call order as the settled prefix grows.
func (r *runner) runGroup(ctx context.Context, turn int, calls []model.ToolCall, window int) ([]model.Message, error) {
	slots := make([]callSlot, len(calls))
	var out []model.Message
	next := 0 // the first call whose result is not delivered yet
	flush := func() error {
		for next < len(slots) && slots[next].state == stateSettled {
			msg, err := r.deliverResult(turn, &slots[next])
			if err != nil {
				return err
			}
			out = append(out, msg)
			next++
		}
		return nil
	}

	// Read every call and pass it through the gate, in call order, before
	// any of them runs.
	for k, call := range calls {
		s := &slots[k]
		s.call = call
		r.emit(Event{Type: EventToolStart, Turn: turn, Call: &s.call})
		if ctx.Err() != nil {
			s.settle(notStarted(ctx))
			continue
		}
		if res, bad := unusable(call); bad {
			s.settle(res)
			continue
		}
		t, ok := r.pool[call.Name]
		if !ok {
			s.settle(tools.Result{Content: r.unknownTool(call.Name), IsError: true})
			continue
		}
		if denial, interrupted := r.gate(ctx, call); interrupted {
			s.settle(notStarted(ctx))
			continue
		} else if denial != nil {
			s.settle(tools.Result{Content: denial.Error(), IsError: true})
			continue
		}
		s.tool = t
		s.state = stateQueued
	}

	// The tools get a context of their own so that an OnMessage failure can
	// stop them; it carries ctx's cancellation and cause.
	toolCtx, stopTools := context.WithCancelCause(ctx)
	defer stopTools(nil)
	done := make(chan finished, len(slots)) // buffered: an abandoned tool never blocks
	running := 0
	queued := 0 // slots before this index are no longer queued
	launch := func() {
		for running < window && queued < len(slots) && ctx.Err() == nil {
			s := &slots[queued]
			queued++
			if s.state != stateQueued {
				continue
			}
			s.state = stateRunning
			running++
			r.emit(Event{Type: EventToolRunning, Turn: turn, Call: &s.call})
			s.started = time.Now()
			go runTool(toolCtx, done, queued-1, s.tool, s.call, s.started)
		}
	}

	// The health watch reports a tool that runs longer than its limit,
	// once per call, while it runs.
	var overdueTimer *time.Timer
	var overdueC <-chan time.Time
	armOverdue := func() {
		if overdueTimer != nil {
			overdueTimer.Stop()
			overdueTimer, overdueC = nil, nil
		}
		if r.health.off {
			return
		}
		var first time.Time
		for k := range slots {
			if s := &slots[k]; s.state == stateRunning && !s.overdue {
				if due := s.started.Add(r.health.limit); first.IsZero() || due.Before(first) {
					first = due
				}
			}
		}
		if !first.IsZero() {
			overdueTimer = time.NewTimer(time.Until(first))
			overdueC = overdueTimer.C
		}
	}
	defer func() {
		if overdueTimer != nil {
			overdueTimer.Stop()
		}
	}()

	launch()
	if err := flush(); err != nil {
		return out, r.stop(stopTools, err, slots, done, running)
	}
	ctxDone := ctx.Done()
	var graceUp <-chan time.Time
	for next < len(slots) {
		armOverdue()
		select {
		case <-overdueC:
			for k := range slots {
				if s := &slots[k]; s.state == stateRunning && !s.overdue && time.Since(s.started) >= r.health.limit {
					s.overdue = true
					r.observe(turn, []string{r.health.openTooLong(s.call)})
				}
			}
		case f := <-done:
			s := &slots[f.index]
			if s.state != stateRunning {
				continue // abandoned after the grace: its late result is dropped
			}
			running--
			s.ran = f.ran
			res := f.result
			if ctx.Err() != nil && res.IsError {
				res.Content = withCause(ctx, res.Content)
			}
			s.settle(res)
			launch()
		case <-ctxDone:
			ctxDone = nil
			for k := range slots {
				if slots[k].state == stateQueued {
					slots[k].settle(notStarted(ctx))
				}
			}
			if running > 0 {
				timer := time.NewTimer(r.opts.AbortGrace)
				defer timer.Stop()
				graceUp = timer.C
			}
		case <-graceUp:
			for k := range slots {
				if s := &slots[k]; s.state == stateRunning {
					s.ran = time.Since(s.started)
					s.settle(tools.Result{Content: abandoned(ctx, s.call.Name, r.opts.AbortGrace), IsError: true})
					running--
				}
			}
		}
		if err := flush(); err != nil {
			return out, r.stop(stopTools, err, slots, done, running)
		}
	}
	return out, nil
}

// stop ends a group after OnMessage failed: it cancels the running tools and
// waits for them up to AbortGrace, dropping their results, then returns err.
func (r *runner) stop(stopTools context.CancelCauseFunc, err error, slots []callSlot, done <-chan finished, running int) error {
	stopTools(err)
	if running == 0 {
		return err
	}
	timer := time.NewTimer(r.opts.AbortGrace)
	defer timer.Stop()
	for running > 0 {
		select {
		case f := <-done:
			if slots[f.index].state == stateRunning {
				slots[f.index].state = stateSettled
				running--
			}
		case <-timer.C:
			return err
		}
	}
	return err
}

// settle gives s its result.
func (s *callSlot) settle(res tools.Result) {
	s.result = res
	s.state = stateSettled
}

// deliverResult turns a settled call into its toolResult message and hands
// it to OnMessage.
func (r *runner) deliverResult(turn int, s *callSlot) (model.Message, error) {
	tr := model.ToolResult{
		ToolCallID: s.call.ID,
		ToolName:   s.call.Name,
		Content:    s.result.Content,
		IsError:    s.result.IsError,
	}
	msg := model.Message{
		Role:        model.RoleToolResult,
		Results:     []model.ToolResult{tr},
		TaskRecord:  s.result.Record,
		TaskRecords: s.result.Records,
	}
	if err := r.deliver(turn, msg); err != nil {
		return msg, err
	}
	r.emit(Event{Type: EventToolEnd, Turn: turn, Call: &s.call, Result: &tr, Duration: s.ran})
	r.observe(turn, r.health.result(s.call, tr))
	return msg, nil
}

// runTool runs one call and reports on done. A panicking tool becomes an
// isError result instead of taking the process down.
func runTool(ctx context.Context, done chan<- finished, index int, t tools.Tool, call model.ToolCall, started time.Time) {
	var res tools.Result
	defer func() {
		if p := recover(); p != nil {
			res = tools.Result{Content: fmt.Sprintf("tool %s failed: internal error: %v", call.Name, p), IsError: true}
		}
		done <- finished{index: index, result: res, ran: time.Since(started)}
	}()
	res = t.Run(tools.WithCallID(ctx, call.ID), call.Args)
}

// gate passes call through OnToolCall. It returns the denial, if any, and
// whether the run was interrupted before the gate answered (a gate that
// ignores cancellation is given up on after AbortGrace).
func (r *runner) gate(ctx context.Context, call model.ToolCall) (denial error, interrupted bool) {
	if r.opts.OnToolCall == nil {
		return nil, false
	}
	answer := make(chan error, 1)
	go func() { answer <- r.opts.OnToolCall(ctx, call) }()
	select {
	case err := <-answer:
		return err, ctx.Err() != nil
	case <-ctx.Done():
	}
	timer := time.NewTimer(r.opts.AbortGrace)
	defer timer.Stop()
	select {
	case <-answer:
	case <-timer.C:
	}
	return nil, true
}

// unknownTool is the result text of a call to a tool outside the pool.
func (r *runner) unknownTool(name string) string {
	names := make([]string, 0, len(r.opts.Tools))
	for _, t := range r.opts.Tools {
		names = append(names, t.Spec().Name)
	}
	available := strings.Join(names, ", ")
	if available == "" {
		available = "none"
	}
	return fmt.Sprintf("unknown tool %s; available: %s", name, available)
}
