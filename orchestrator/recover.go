package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// childAnswers answers the task calls of a main transcript left without a
// result because its writer died: from the child's own transcript when the
// child's last attempt ended, else with the outcome-unknown text naming the
// child so the model can resume it. A resume call is matched to the child
// it names; a new call to an unused child with its prompt, one launched
// with the call's agent first. A call whose supervisor died after
// making the child's worktree and before the child's transcript existed is
// answered naming the child and its worktree (found by the worktree's
// origin in inkHome). Calls whose child cannot be found at all are left to
// the worker's generic repair.
func (o *Orchestrator) childAnswers(ctx context.Context, tr *session.Transcript) []ipc.Answer {
	answered := map[string]bool{}
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			answered[r.ToolCallID] = true
		}
	}
	children, _ := o.store.Children(tr.Path)
	// Children already accounted for by a TaskRecord, and how many of
	// their attempts the records account for.
	used := map[string]bool{}
	recorded := map[string]int{}
	for _, m := range tr.Messages {
		for _, rec := range session.TaskRecordsOf(m) {
			if rec.ChildID != "" {
				used[rec.ChildID] = true
				if rec.Launched {
					recorded[rec.ChildID]++
				}
			}
		}
	}
	// Each child's first prompt is read at most once, however many calls
	// are matched against it.
	prompts := map[string]string{}
	promptOf := func(path string) string {
		p, ok := prompts[path]
		if !ok {
			p = o.firstPrompt(path)
			prompts[path] = p
		}
		return p
	}
	var out []ipc.Answer
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			if c.Name != "task" || answered[c.ID] {
				continue
			}
			args, err := ParseTaskArgs(c.Args)
			if err != nil {
				continue
			}
			agent := ""
			if args.Agent != nil {
				agent = *args.Agent
			}
			// A new call's child is an unused one with its prompt, one of
			// its agent first: two calls with one prompt for two agents
			// must not swap their children.
			find := func(sameAgent bool) *session.ChildSummary {
				for i := range children {
					ch := &children[i]
					if used[ch.ID] && (args.Resume == nil || *args.Resume != ch.ID) {
						continue
					}
					if args.Resume != nil && *args.Resume == ch.ID {
						return ch
					}
					if args.Resume == nil && (!sameAgent || agents.Slug(ch.Agent) == agents.Slug(agent)) && promptOf(ch.Path) == args.Prompt {
						return ch
					}
				}
				return nil
			}
			child := find(true)
			if child == nil {
				child = find(false)
			}
			if child == nil {
				if a, ok := o.answerFromWorktree(ctx, tr.Header.ID, c); ok {
					out = append(out, a)
				}
				continue
			}
			used[child.ID] = true
			a, _, _ := o.answerFromChild(tr, c, args, child.Path, recorded[child.ID])
			out = append(out, a)
			recorded[child.ID]++
		}
	}
	return out
}

// firstPrompt is the text of a transcript's first user message.
func (o *Orchestrator) firstPrompt(path string) string {
	tr, err := o.store.Open(path, false)
	if err != nil {
		return ""
	}
	for _, m := range tr.Messages {
		if m.Role == model.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// answerFromChild composes the result of a dangling task call from the
// child's transcript: from the attempt that call started, the one after
// the prior attempts that the parent's TaskRecords account for. When that
// attempt never started or never ended, the outcome is unknown: an earlier
// attempt's answer is never passed off as this call's. It also returns
// when that attempt started and ended (zero when it did not end).
func (o *Orchestrator) answerFromChild(parent *session.Transcript, call model.ToolCall, args TaskArgs, childPath string, prior int) (ipc.Answer, time.Time, time.Time) {
	ctr, err := o.store.Open(childPath, true)
	result := func(content string, isErr bool, rec *session.TaskRecord) ipc.Answer {
		a := ipc.Answer{Message: model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: call.ID, ToolName: "task", Content: content, IsError: isErr}}}}
		if rec != nil {
			a.TaskRecord, _ = json.Marshal(rec)
		}
		return a
	}
	if errors.Is(err, session.ErrNotStarted) {
		return result(fmt.Sprintf("interrupted before the child started: a crash of the machine lost its transcript %s before any of it was on disk, so nothing of it can be continued. Start a new task instead.", childPath), true, nil), time.Time{}, time.Time{}
	}
	if err != nil {
		return result(fmt.Sprintf("interrupted before a result was recorded — the outcome is unknown; check before relying on it. The child's transcript %s cannot be read: %v", childPath, err), true, nil), time.Time{}, time.Time{}
	}
	id := ctr.Header.ID
	o.bringBackCommits(ctr.Header.Launch)
	end, started, ended := attemptSpan(ctr, prior)
	if !ended && !started.IsZero() {
		// The attempt started and never recorded its end. When its lease
		// is free and its holder provably gone, it was lost with its host:
		// say so, as the worker that continues it will record.
		if st, err := o.store.Probe(childPath); err == nil && st.Lost() != lease.NotLost {
			end, ended = lostEnd(ctr, prior, st.Lost().String()), true
		}
	}
	if !ended || end.Status == "" {
		return result(fmt.Sprintf("interrupted before a result was recorded — the outcome is unknown; check before relying on it.\nchild session id: %s — continue it with task({resume: %q, prompt: \"…\"})\nwork is preserved in the full transcript:\n  %s", id, id, childPath), true, nil), time.Time{}, time.Time{}
	}
	u := usageOf(end.Usage)
	content, isErr := composeResult(resultInput{
		Status: end.Status, Reason: end.Reason, Text: end.FinalText, TextLen: end.FinalTextLen, Turns: end.Turns, Usage: u,
		Timeout: "its timeout", ChildID: id, Transcript: childPath, Prompt: args.Prompt,
		Capped: end.Capped, Health: end.Health,
	})
	content = "[task] recovered from the child's own transcript: the parent stopped before this result was recorded.\n" + content
	rec := session.TaskRecord{
		Version: 1, AttemptID: end.AttemptID, TaskToolCallID: call.ID, ParentSessionID: parent.Header.ID, ChildID: id,
		Launched: true, Status: end.Status, Reason: clip(end.Reason, 300), Turns: end.Turns,
		TextPresent: strings.TrimSpace(end.FinalText) != "", Usage: &u, Cwd: ctr.Header.Cwd,
		Transcript: &session.TranscriptRef{Present: true, Path: childPath},
		Capped:     end.Capped, Health: end.Health,
	}
	if l := ctr.Header.Launch; l != nil {
		b := l.Binding
		rec.Binding = &b
		rec.Tools = l.Tools
		if l.Agent != nil {
			rec.Agent = l.Agent.Name
		}
	}
	return result(content, isErr, &rec), started, end.Time
}

// lostEnd is the end entry of the attempt that started after the first
// prior attempts of tr and was lost with its host: interrupted for reason,
// with the turns and usage its messages show (incomplete: the turn in
// flight is not counted) and its last assistant text.
func lostEnd(tr *session.Transcript, prior int, reason string) session.AttemptEntry {
	end := session.AttemptEntry{Phase: session.PhaseEnd, Status: StatusInterrupted, Reason: reason, Time: time.Now().UTC()}
	n, in := 0, false
	var usage model.Usage
	for _, e := range tr.Entries {
		switch {
		case e.Attempt != nil && e.Attempt.Phase == session.PhaseStart:
			in = n == prior
			if in {
				end.AttemptID, end.Epoch = e.Attempt.AttemptID, e.Attempt.Epoch
			}
			n++
		case in && e.Message != nil && e.Message.Role == model.RoleAssistant:
			end.Turns++
			if e.Message.Usage != nil {
				usage = usage.Add(*e.Message.Usage)
			}
			if t := e.Message.Text(); strings.TrimSpace(t) != "" {
				end.FinalText = t
			}
		}
	}
	usage.Incomplete = true
	end.Usage = &usage
	return end
}

// attemptSpan returns the end entry of the attempt that started after the
// first prior attempts of tr, if it started and ended, and when it started
// (zero when it did not).
func attemptSpan(tr *session.Transcript, prior int) (end session.AttemptEntry, started time.Time, ok bool) {
	n, target := 0, ""
	for _, a := range tr.Attempts() {
		switch {
		case a.Phase == session.PhaseStart && target == "":
			if n == prior {
				target, started = a.AttemptID, a.Time
			}
			n++
		case a.Phase == session.PhaseEnd && target != "" && a.AttemptID == target:
			return a, started, true
		}
	}
	return session.AttemptEntry{}, started, false
}

// bringBackCommits brings the commits of a recovered child's worktree into
// its repository, as the settle its dead supervisor never ran would have:
// they live in the worktree's own git directory until then. A failure is
// left for `ink worktrees` to report.
func (o *Orchestrator) bringBackCommits(l *session.LaunchRecord) {
	if l == nil || l.Worktree == nil {
		return
	}
	w := l.Worktree
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = o.ws.Sync(ctx, worktree.Record{RepoRoot: w.RepoRoot, Baseline: w.Baseline, Path: w.Path, Branch: w.Branch, CreationReflog: w.CreationReflog, Cwd: l.Cwd})
}

// answerFromWorktree answers a dangling task call whose child never got a
// transcript but whose worktree was made, naming both.
func (o *Orchestrator) answerFromWorktree(ctx context.Context, parentID string, call model.ToolCall) (ipc.Answer, bool) {
	infos, err := o.ws.List(ctx, o.cfg.InkHome)
	if err != nil {
		return ipc.Answer{}, false
	}
	for _, in := range infos {
		o := in.Record.Origin
		if o == nil || o.ParentSession != parentID || o.ToolCallID != call.ID {
			continue
		}
		id := in.Record.ChildID()
		content := fmt.Sprintf("interrupted before the child started: the supervisor was lost after making its worktree and before the child's transcript existed, so nothing ran.\n"+
			"child id: %s; its worktree %s on branch %s holds no work of it — remove it with `ink worktrees rm %s` (or `ink worktrees prune`), and start a new task instead.",
			id, in.Record.Path, in.Record.Branch, id)
		return ipc.Answer{Message: model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: call.ID, ToolName: "task", Content: content, IsError: true}}}}, true
	}
	return ipc.Answer{}, false
}

// backgroundIDLine is how a background task call's answer names its child
// (startedText); a continued session finds its children by it.
const backgroundIDLine = "child session id: "

// startedLead is how startedText begins, for the child's id.
const startedLead = "child %s started in the background"

// recoverBackground registers in ar's registry, as ended and not yet
// collected, the background children of a continued main transcript whose
// results its agent never collected because their supervisor died: each
// with its answer from its own transcript (its result when its attempt
// ended, interrupted by the host's loss as a worker records it), so that
// task_wait, task_status and the end-of-turn note hand them over as if
// the run had not stopped; one whose attempt left no end because its host
// was lost with it (its lease free, its holder gone) as interrupted. A
// child that may still run, or whose transcript cannot be read, is left
// out: task_wait on it says how to continue it.
func (o *Orchestrator) recoverBackground(tr *session.Transcript, ar *agentRun) {
	calls := map[string]model.ToolCall{}
	type started struct {
		call  model.ToolCall
		args  TaskArgs
		prior int // the child's attempts recorded before this call's
	}
	var order []string // child ids, first seen first
	inOrder := map[string]bool{}
	open := map[string]started{} // child id -> its uncollected background call
	recorded := map[string]int{}
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
		for _, r := range m.Results {
			c, ok := calls[r.ToolCallID]
			if !ok || c.Name != "task" {
				continue
			}
			args, err := ParseTaskArgs(c.Args)
			_, idText, found := strings.Cut(r.Content, backgroundIDLine)
			id := strings.TrimSpace(idText)
			if err != nil || !args.Background || !found || !session.ValidID(id) ||
				!strings.HasPrefix(r.Content, fmt.Sprintf(startedLead, id)) {
				continue // not an answer that started a child
			}
			if !inOrder[id] {
				inOrder[id] = true
				order = append(order, id)
			}
			open[id] = started{call: c, args: args, prior: recorded[id]}
		}
		for _, rec := range session.TaskRecordsOf(m) {
			if rec.ChildID != "" && rec.Launched {
				recorded[rec.ChildID]++
				delete(open, rec.ChildID) // collected
			}
		}
	}
	for _, id := range order {
		st, ok := open[id]
		if !ok {
			continue
		}
		a, began, ended := o.answerFromChild(tr, st.call, st.args, session.ChildPath(tr.Path, id), st.prior)
		rec, err := session.ParseTaskRecord(a.TaskRecord)
		if err != nil || len(a.Message.Results) != 1 {
			continue // no ended attempt to hand over
		}
		res := a.Message.Results[0]
		ar.registry().recovered(&trackedChild{
			id: id, label: ar.nextChildLabel(), agent: rec.Agent, prompt: st.args.Prompt, callID: st.call.ID, background: true, start: began,
		}, ended, taskAnswer{Content: res.Content, IsError: res.IsError, Record: rec,
			Result: attemptResult{Status: rec.Status, Reason: rec.Reason, Turns: rec.Turns, Usage: usageOf(rec.Usage)}})
	}
}
