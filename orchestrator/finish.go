package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// childAttempt is one attempt of a child, from its task call to its answer.
type childAttempt struct {
	parent, child *agentRun
	call          taskCall
	args          TaskArgs
	spec          ipc.AttemptSpec
	timeout       time.Duration
	wt            *worktree.Record
	resumed       bool
	// started is set once the attempt got a slot and a worker was tried.
	started bool
}

// finish assesses the worktree, composes the result and the TaskRecord, and
// emits task.end.
func (o *Orchestrator) finish(e childAttempt, res attemptResult) taskAnswer {
	parent, child := e.parent, e.child
	if res.Status == StatusRefused {
		reason := fmt.Sprintf("task: %s. Start a new task instead.", res.Reason)
		if e.resumed {
			// The worker refused under the lease what validation could not
			// see yet (another ink took the child first, the file changed).
			reason = resumeRefusal(child.sessionID, []Problem{{Code: res.Code, Message: res.Reason}})
		}
		// The record stays a valid rejection (no child id: the worker's
		// decoder refuses one that has it); the text names the child.
		ans := o.reject(parent, e.call, e.args, reason)
		// A worktree made for this attempt goes with it when clean. A
		// resumed child's lock is left as it is: another attempt may be
		// running there (a dead pid in it counts as no lock).
		if e.wt != nil && !e.resumed {
			_, _, lines := o.settleWorktree(*e.wt, false, false)
			ans.Content += "\n" + strings.Join(lines, "\n")
		}
		return ans
	}
	res = o.fromTranscript(res, child.transcript)
	present := o.store.Exists(child.transcript)
	rec := session.TaskRecord{
		Version: 1, AttemptID: e.spec.AttemptID, TaskToolCallID: e.call.id, ParentSessionID: parent.sessionID,
		ChildID: child.sessionID, Launched: res.Launched, Agent: child.agent, Binding: &child.binding,
		Cwd: child.cwd, Tools: sortedCopy(child.tools), Status: res.Status, Reason: clip(res.Reason, session.MaxReasonRunes),
		Turns: res.Turns, TextPresent: strings.TrimSpace(res.Text) != "",
		Capped: res.Capped, Health: res.Health,
	}
	if e.timeout > 0 {
		rec.TimeoutMs = e.timeout.Milliseconds()
	}
	u := res.Usage
	rec.Usage = &u
	if present {
		rec.Transcript = &session.TranscriptRef{Present: true, Path: child.transcript}
	} else {
		why := "no-content"
		if !e.started {
			why = "not-started"
		}
		rec.Transcript = &session.TranscriptRef{Present: false, Why: why}
	}
	var wtLines []string
	if e.wt != nil {
		// A child that did not complete can be resumed in its worktree, so
		// even a clean one is kept for that.
		disp, detail, lines := o.settleWorktree(*e.wt, e.resumed, present && res.Status != StatusCompleted)
		wtLines = lines
		rec.Worktree = &session.WorktreeOutcome{Path: e.wt.Path, Branch: e.wt.Branch, Disposition: string(disp), Detail: clip(detail, session.MaxReasonRunes)}
	}
	in := resultInput{
		Status: res.Status, Reason: res.Reason, Text: res.Text, Turns: res.Turns, Usage: res.Usage,
		Timeout: e.timeout.String(), ChildID: child.sessionID, Prompt: e.args.Prompt, WorktreeLines: wtLines,
		Health: res.Health, Capped: res.Capped, MaxTurns: e.spec.MaxTurns, Shell: parent.shell, Command: o.cfg.Command,
	}
	if present {
		in.Transcript = child.transcript
	}
	if e.resumed {
		in.ExtraLines = append(in.ExtraLines, o.lifetimeLine(child.transcript)...)
	}
	content, isErr := composeResult(in)
	end := event.TaskEnd{
		ChildID: child.sessionID, Status: res.Status, Reason: res.Reason, Turns: res.Turns,
		Usage: &u, Transcript: child.transcript, ToolCallID: e.call.id, AttemptID: e.spec.AttemptID,
		Worktree: rec.Worktree, Health: res.Health, Background: e.call.background, Capped: res.Capped,
	}
	o.pub.emit(child.label, child.sessionID, end)
	return taskAnswer{Content: content, IsError: isErr, Record: rec, Result: res, Answer: shownAnswer(in)}
}

// settleWorktree unlocks a child's worktree after an attempt (its worker is
// gone), brings the child's commits into the repository, assesses it, and
// removes it only when it is clean, the child was not resumed and cannot
// be resumed (it completed). The returned line tells
// the user what happened to it and why.
func (o *Orchestrator) settleWorktree(rec worktree.Record, resumed, resumable bool) (disposition worktree.Disposition, detail string, lines []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := o.ws.Unlock(ctx, rec); err != nil {
		o.cfg.Logger.Warn("Worktree unlock failed", "path", rec.Path, "err", err)
	}
	if resumed || resumable {
		a := o.ws.Assess(ctx, rec)
		switch {
		case a.State == worktree.Clean && resumed:
			return worktree.DispositionKeptResumed, "a resumed worktree is never removed", []string{fmt.Sprintf(
				"[task] no changes since baseline %s; worktree %s and branch %s kept (a resumed child's worktree is never removed; remove it with `ink worktrees rm %s`)",
				worktree.ShortSHA(rec.Baseline), rec.Path, rec.Branch, rec.ChildID())}
		case a.State == worktree.Clean:
			return worktree.DispositionKeptResumable, "no changes; kept so that the child can be resumed in it", []string{fmt.Sprintf(
				"[task] no changes since baseline %s; worktree %s and branch %s kept so that the child can be resumed in it (`ink worktrees prune` keeps it while the child can be resumed)",
				worktree.ShortSHA(rec.Baseline), rec.Path, rec.Branch)}
		case a.State == worktree.WorkPresent:
			return worktree.DispositionKeptWork, a.Detail, []string{"[task] " + worktree.Describe(a, rec)}
		default:
			return worktree.DispositionKeptUnknown, a.Detail, []string{"[task] " + worktree.Describe(a, rec)}
		}
	}
	out := o.ws.Settle(ctx, rec)
	detail = out.Assessment.Detail
	if out.Disposition == worktree.DispositionRemovalFailed {
		detail = out.Text
	}
	return out.Disposition, detail, []string{"[task] " + out.Text}
}

// lifetimeLine sums every attempt recorded in a child's transcript: from
// the sum its last attempt end entry carries, or from its attempt entries.
func (o *Orchestrator) lifetimeLine(path string) []string {
	life, err := o.store.Lifetime(path)
	if err != nil {
		return nil
	}
	total := life.Usage
	ge := ""
	if total.Incomplete {
		ge = "≥"
	}
	return []string{fmt.Sprintf("(child lifetime: %s, %s%s in / %s%s out)", fmt.Sprintf("%d %s", life.Attempts, Plural(life.Attempts, "attempt", "attempts")), ge, CompactTokens(total.Input), ge, CompactTokens(total.Output))}
}
