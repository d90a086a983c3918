package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/taskargs"
)

// This file answers what a parent asks about its children beyond starting
// one: start it in the background, report on them (task_status), wait for
// and collect them (task_wait), stop one (task_cancel), and which it must
// still collect before it ends (the worker's "pending"). Agents ask over
// ipc (handleRequest); shell-like parents through Parent.

// controlAnswer is the answer to a status, wait, cancel or pending request.
type controlAnswer struct {
	Content string
	IsError bool
	// Records are the TaskRecords this answer collects: each background
	// child's record lands on exactly one answer.
	Records []session.TaskRecord
	// Children are the children reported on (status), or still to collect
	// (pending), or still running when a wait ended.
	Children []ChildStatus
	// Ended are the answers of the children that ended, in call order
	// (wait, cancel).
	Ended []TaskResult
	// Pending names the background children not collected yet (pending).
	Pending []string
	// Summary is Content's first line; Next, when children are still
	// running, says why the wait ended without them and what to do.
	Summary, Next string
}

func (c controlAnswer) ipc() ipc.TaskAnswer {
	return ipc.TaskAnswer{Content: c.Content, IsError: c.IsError, Records: c.Records, Running: c.Pending}
}

// refusal is a bad request: an isError answer saying what to fix.
func refusal(format string, a ...any) controlAnswer {
	return controlAnswer{Content: fmt.Sprintf(format, a...), IsError: true}
}

// handleRequest answers one request of a worker about its children.
func (o *Orchestrator) handleRequest(ctx context.Context, ar *agentRun, call taskCall, m ipc.TaskRequest) ipc.TaskAnswer {
	switch m.Op {
	case "", ipc.OpTask:
		return o.handleTask(ctx, ar, call, m.Args)
	case ipc.OpStatus:
		a, err := taskargs.ParseStatus(m.Args)
		if err != nil {
			return refusal("%v", err).ipc()
		}
		return o.childrenStatus(ar, a.IDs).ipc()
	case ipc.OpWait:
		a, err := taskargs.ParseWait(m.Args)
		if err != nil {
			return refusal("%v", err).ipc()
		}
		return o.waitChildren(ctx, ar, a).ipc()
	case ipc.OpCancel:
		a, err := taskargs.ParseCancel(m.Args)
		if err != nil {
			return refusal("%v", err).ipc()
		}
		return o.cancelChild(ctx, ar, a.ID).ipc()
	case ipc.OpPending:
		return o.pendingChildren(ar).ipc()
	}
	return refusal("ink: the worker asked for %q, which this supervisor does not know; the ink binary may have changed underneath, so start ink again", m.Op).ipc()
}

// startBackground starts the child of a background task call and answers
// as soon as it passed every check and has its id, with that id; the child
// runs on under ctx (its parent's children's context), and its answer waits
// in the parent's registry for task_wait. A call rejected before that gets
// its rejection as usual.
func (o *Orchestrator) startBackground(ctx context.Context, parent *agentRun, call taskCall, args TaskArgs) taskAnswer {
	reg := make(chan *trackedChild, 1)
	call.background = true
	call.registered = func(t *trackedChild) { reg <- t }
	final := make(chan taskAnswer, 1)
	children := parent.registry()
	children.background.Add(1)
	go func() {
		defer children.background.Done()
		final <- o.task(ctx, parent, call, args)
	}()
	select {
	case t := <-reg:
		st := t.status()
		return taskAnswer{Content: startedText(st), Started: &st}
	case ans := <-final:
		select {
		case t := <-reg: // registered, and already ended
			st := t.status()
			return taskAnswer{Content: startedText(st), Started: &st}
		default:
			return ans
		}
	}
}

// startedText answers a background task call.
func startedText(st ChildStatus) string {
	var about []string
	if st.Agent != "" {
		about = append(about, "agent "+st.Agent)
	}
	if st.Worktree != "" {
		about = append(about, "worktree "+st.Worktree)
	}
	what := ""
	if len(about) > 0 {
		what = " (" + strings.Join(about, ", ") + ")"
	}
	return fmt.Sprintf(startedLead+"%s.\n"+
		"Do other work meanwhile, then collect its result with task_wait({ids: [%q]}) — or task_wait({}) for every background child not collected yet. "+
		"task_status shows its progress; task_cancel({id: %q}) stops it.\n"+
		"child session id: %s", st.ID, what, st.ID, st.ID, st.ID)
}

// lookup finds the named children, or explains which name is unknown and
// which children there are.
func lookup(ar *agentRun, tool string, ids []string) ([]*trackedChild, *controlAnswer) {
	reg := ar.registry()
	var out []*trackedChild
	for _, id := range ids {
		t := reg.get(id)
		if t == nil {
			a := refusal("%s: no child %q was started here. %s A child of an earlier run or session is continued with task({resume: %q, prompt: \"…\"}); its last result is in its transcript.",
				tool, id, knownChildren(reg), id)
			return nil, &a
		}
		out = append(out, t)
	}
	// In call order, whatever order the ids were given in.
	var ordered []*trackedChild
	for _, t := range reg.all() {
		for _, x := range out {
			if x == t {
				ordered = append(ordered, t)
			}
		}
	}
	return ordered, nil
}

// knownChildren lists the registry's children for a refusal.
func knownChildren(reg *childRegistry) string {
	all := reg.all()
	if len(all) == 0 {
		return "No child has been started here yet."
	}
	// The newest ones, when there are many.
	const shown = 20
	more := ""
	if len(all) > shown {
		more = fmt.Sprintf(" and %d earlier ones (task_status lists them all)", len(all)-shown)
		all = all[len(all)-shown:]
	}
	var names []string
	for _, t := range all {
		st := t.status()
		s := st.State
		if st.State == ChildEnded {
			s = "ended: " + string(st.Status)
		}
		names = append(names, fmt.Sprintf("%s (%s, %s)", st.ID, st.Label, s))
	}
	return "The children started here: " + strings.Join(names, ", ") + more + "."
}

// childrenStatus reports on the named children, or on all of them.
func (o *Orchestrator) childrenStatus(ar *agentRun, ids []string) controlAnswer {
	targets := ar.registry().all()
	if len(ids) > 0 {
		var bad *controlAnswer
		if targets, bad = lookup(ar, taskargs.StatusTool, ids); bad != nil {
			return *bad
		}
	}
	if len(targets) == 0 {
		return controlAnswer{Content: "task_status: no child has been started here yet."}
	}
	var b strings.Builder
	var list []ChildStatus
	running := 0
	for _, t := range targets {
		st := t.status()
		if st.State != ChildEnded {
			running++
		}
		list = append(list, st)
	}
	fmt.Fprintf(&b, "task_status: %d of %d %s still running or queued.", running, len(list), Plural(len(list), "child", "children"))
	for _, st := range list {
		b.WriteString("\n")
		b.WriteString(StatusLine(st))
	}
	return controlAnswer{Content: b.String(), Children: list}
}

// StatusLine renders one child's status on one line.
func StatusLine(st ChildStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %s (%s", st.ID, st.Label)
	if st.Agent != "" {
		fmt.Fprintf(&b, ", agent %s", st.Agent)
	}
	if st.Background {
		b.WriteString(", background")
	}
	b.WriteString("): ")
	el := (time.Duration(st.ElapsedMs) * time.Millisecond).Round(100 * time.Millisecond)
	switch st.State {
	case ChildStarting:
		b.WriteString("starting")
	case ChildQueued:
		b.WriteString("queued, waiting for a free slot (--max-parallel)")
	case ChildRunning:
		fmt.Fprintf(&b, "running for %s, turn %d, %s in / %s out", el, st.Turns, CompactTokens(st.Usage.Input), CompactTokens(st.Usage.Output))
		if st.Tool != "" {
			fmt.Fprintf(&b, ", running %s", st.Tool)
		}
	default:
		fmt.Fprintf(&b, "%s after %s, %s, %s in / %s out", st.Status, el, Turns(st.Turns), CompactTokens(st.Usage.Input), CompactTokens(st.Usage.Output))
		if st.Background && !st.Collected {
			b.WriteString(", result not collected yet (task_wait)")
		}
	}
	if st.Worktree != "" {
		fmt.Fprintf(&b, ", worktree %s", st.Worktree)
	}
	return b.String()
}

// waitChildren waits for the named children — or every background child
// not collected yet — until they all ended, the timeout ran out or ctx
// ended, and returns the results of those that ended, in call order.
func (o *Orchestrator) waitChildren(ctx context.Context, ar *agentRun, a taskargs.WaitArgs) controlAnswer {
	var targets []*trackedChild
	if len(a.IDs) > 0 {
		var bad *controlAnswer
		if targets, bad = lookup(ar, taskargs.WaitTool, a.IDs); bad != nil {
			return *bad
		}
	} else {
		for _, t := range ar.registry().all() {
			if st := t.status(); st.Background && !st.Collected {
				targets = append(targets, t)
			}
		}
		if len(targets) == 0 {
			return controlAnswer{Content: "task_wait: no background child to wait for: every child started here with background: true was already collected (name one with ids to see its result again)."}
		}
	}
	var timeout <-chan time.Time
	if a.TimeoutMs != nil {
		timer := time.NewTimer(time.Duration(*a.TimeoutMs) * time.Millisecond)
		defer timer.Stop()
		timeout = timer.C
	}
	interrupted := ""
wait:
	for _, t := range targets {
		select {
		case <-t.done:
			continue
		default:
		}
		select {
		case <-t.done:
		case <-timeout:
			break wait
		case <-ctx.Done():
			interrupted = context.Cause(ctx).Error()
			break wait
		}
	}
	return collectAnswer(taskargs.WaitTool, targets, a.TimeoutMs, interrupted)
}

// collectAnswer composes a task_wait answer: the results of the targets
// that ended, with the records not collected before, then the ones still
// running.
func collectAnswer(tool string, targets []*trackedChild, timeoutMs *int64, interrupted string) controlAnswer {
	var out controlAnswer
	var blocks []string
	for _, t := range targets {
		ans, ended := t.result()
		if !ended {
			out.Children = append(out.Children, t.status())
			continue
		}
		if rec, ok := t.collect(); ok {
			out.Records = append(out.Records, rec)
		}
		out.Ended = append(out.Ended, ans.result())
		blocks = append(blocks, resultBlock(t.status(), ans))
	}
	var b strings.Builder
	switch {
	case len(out.Children) == 0:
		fmt.Fprintf(&b, "%s: %s ended.", tool, countOf(len(targets), "child", "children", "the"))
	default:
		fmt.Fprintf(&b, "%s: %d of %d %s ended.", tool, len(out.Ended), len(targets), Plural(len(targets), "child", "children"))
	}
	out.Summary = b.String()
	for _, bl := range blocks {
		b.WriteString("\n\n")
		b.WriteString(bl)
	}
	if len(out.Children) > 0 {
		why := "Still running"
		switch {
		case interrupted != "":
			why = "Still running when the wait was interrupted (" + interrupted + ")"
		case timeoutMs != nil:
			why = fmt.Sprintf("Still running after %s", (time.Duration(*timeoutMs) * time.Millisecond).String())
		}
		fmt.Fprintf(&b, "\n\n%s:", why)
		for _, st := range out.Children {
			b.WriteString("\n")
			b.WriteString(StatusLine(st))
		}
		const next = "Call task_wait again to keep waiting, or task_cancel to stop a child you no longer need."
		b.WriteString("\n" + next)
		out.Next = why + ". " + next
	}
	out.Content = b.String()
	return out
}

// resultBlock is one ended child's result inside a task_wait answer.
func resultBlock(st ChildStatus, ans taskAnswer) string {
	head := fmt.Sprintf("── child %s (%s", st.ID, st.Label)
	if st.Agent != "" {
		head += ", agent " + st.Agent
	}
	status := ans.Record.Status
	if ans.IsError && status == StatusCompleted {
		status = "completed without an answer"
	}
	return fmt.Sprintf("%s): %s ──\n%s", head, status, ans.Content)
}

// cancelChild stops one child (the child records that it was aborted and
// stays resumable) and waits for it to end; a child that had already ended
// is left as it was. Either way its result is returned, with its record
// when this answer is the first to collect it.
func (o *Orchestrator) cancelChild(ctx context.Context, ar *agentRun, id string) controlAnswer {
	targets, bad := lookup(ar, taskargs.CancelTool, []string{id})
	if bad != nil {
		return *bad
	}
	t := targets[0]
	if _, ended := t.result(); ended {
		out := collectAnswer(taskargs.CancelTool, targets, nil, "")
		st := t.status()
		ans, _ := t.result()
		out.Summary = fmt.Sprintf("task_cancel: child %s had already ended (%s); nothing to stop.", id, st.Status)
		out.Content = out.Summary + "\n\n" + resultBlock(st, ans)
		return out
	}
	t.cancel(StopCause(StatusAborted, "cancelled with task_cancel"))
	select {
	case <-t.done:
	case <-ctx.Done():
		return refusal("task_cancel: interrupted while child %s was stopping (%v); it still stops on its own", id, context.Cause(ctx))
	}
	out := collectAnswer(taskargs.CancelTool, targets, nil, "")
	ans, _ := t.result()
	out.Summary = fmt.Sprintf("task_cancel: child %s stopped; it can be continued with task({resume: %q, prompt: \"…\"}).", id, id)
	out.Content = out.Summary + "\n\n" + resultBlock(t.status(), ans)
	return out
}

// pendingChildren names the background children the agent has not
// collected yet, running or ended: the worker holds its final answer back
// until there are none.
func (o *Orchestrator) pendingChildren(ar *agentRun) controlAnswer {
	var out controlAnswer
	for _, t := range ar.registry().all() {
		if st := t.status(); st.Background && !st.Collected {
			out.Pending = append(out.Pending, st.ID)
			out.Children = append(out.Children, st)
		}
	}
	var b strings.Builder
	for i, st := range out.Children {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(StatusLine(st))
	}
	out.Content = b.String()
	return out
}

// countOf renders "the child" / "all 3 children".
func countOf(n int, one, many, the string) string {
	if n == 1 {
		return the + " " + one
	}
	return fmt.Sprintf("all %d %s", n, many)
}
