package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/ipc/pb"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// InkVersion is recorded in launch records; a resume on another version is
// refused (version-drift).
var InkVersion = "0.1.0-dev"

// TaskArgs are the arguments of a `task` call (DESIGN.md §4). Pointer
// fields distinguish absent from zero: with Resume, Agent and Worktree are
// refused by presence.
type TaskArgs struct {
	Prompt    string  `json:"prompt"`
	Agent     *string `json:"agent,omitempty"`
	TimeoutMs *int64  `json:"timeoutMs,omitempty"`
	Worktree  *bool   `json:"worktree,omitempty"`
	Resume    *string `json:"resume,omitempty"`
}

// ParseTaskArgs decodes and checks task arguments; the error says what was
// wrong and how to fix it.
func ParseTaskArgs(raw json.RawMessage) (TaskArgs, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return TaskArgs{}, fmt.Errorf("task arguments must be a JSON object: %v", err)
	}
	for k := range probe {
		switch k {
		case "prompt", "agent", "timeoutMs", "worktree", "resume":
		default:
			return TaskArgs{}, fmt.Errorf("task: unknown argument %q; the arguments are prompt, agent, timeoutMs, worktree, resume", k)
		}
	}
	var a TaskArgs
	if t, ok := probe["timeoutMs"]; ok {
		var n json.Number
		if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
			return TaskArgs{}, fmt.Errorf("task: timeoutMs must be an integer number of milliseconds ≥ 1000, got %s", t)
		}
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return TaskArgs{}, fmt.Errorf("task: timeoutMs must be an integer number of milliseconds ≥ 1000, got %s", t)
		}
		v, err := n.Int64()
		if err != nil || v < 1000 {
			return TaskArgs{}, fmt.Errorf("task: timeoutMs must be an integer number of milliseconds ≥ 1000, got %s", t)
		}
		a.TimeoutMs = &v
		delete(probe, "timeoutMs")
	}
	rest, _ := json.Marshal(probe)
	if err := json.Unmarshal(rest, &a); err != nil {
		return TaskArgs{}, fmt.Errorf("task: bad argument types: %v (prompt, agent and resume are strings, worktree is a boolean)", err)
	}
	if strings.TrimSpace(a.Prompt) == "" {
		return TaskArgs{}, fmt.Errorf("task: prompt is blank; give the child a self-contained instruction")
	}
	if a.Resume != nil {
		if a.Agent != nil {
			return TaskArgs{}, fmt.Errorf("task: agent cannot be given with resume (a resumed child keeps its agent); drop agent")
		}
		if a.Worktree != nil {
			return TaskArgs{}, fmt.Errorf("task: worktree cannot be given with resume (a resumed child keeps its worktree); drop worktree")
		}
		if !session.ValidID(*a.Resume) {
			return TaskArgs{}, fmt.Errorf("task: resume %q is not a child session id (ids use only a-z, 0-9 and '-'). Start a new task instead.", *a.Resume)
		}
	}
	if a.Agent != nil && strings.TrimSpace(*a.Agent) == "" {
		return TaskArgs{}, fmt.Errorf("task: agent is blank; omit it or name a profile")
	}
	return a, nil
}

// taskAnswer is a composed task result plus its TaskRecord.
type taskAnswer struct {
	Content string
	IsError bool
	Record  session.TaskRecord
	Child   *agentRun // nil when no child transcript exists
	Result  attemptResult
}

func (t taskAnswer) pb() *pb.TaskAnswer {
	rec, _ := json.Marshal(t.Record)
	return &pb.TaskAnswer{Content: t.Content, IsError: t.IsError, Record: rec}
}

// handleTask answers a worker's task request.
func (o *Orchestrator) handleTask(ctx context.Context, parent *agentRun, req *pb.TaskRequest, label string) *pb.TaskAnswer {
	args, err := ParseTaskArgs(req.GetArgs())
	if err != nil {
		return o.reject(parent, req.GetToolCallId(), TaskArgs{}, err.Error()).pb()
	}
	return o.task(ctx, parent, req.GetToolCallId(), args, label).pb()
}

// reject composes a rejection: nothing was launched and nothing changed.
func (o *Orchestrator) reject(parent *agentRun, callID string, args TaskArgs, reason string) taskAnswer {
	rec := session.TaskRecord{
		Version: 1, AttemptID: session.NewID(), TaskToolCallID: callID, ParentSessionID: parent.sessionID,
		Launched: false, Cwd: parent.cwd, Status: "rejected", Reason: clip(reason, 300),
	}
	if args.Agent != nil {
		rec.Agent = *args.Agent
	}
	if args.Resume != nil {
		rec.ChildID = ""
	}
	return taskAnswer{Content: reason, IsError: true, Record: rec}
}

// task launches (or resumes) the child of one task call and waits for it;
// label is the child's display label (parent label + "/" + ordinal).
func (o *Orchestrator) task(ctx context.Context, parent *agentRun, callID string, args TaskArgs, label string) taskAnswer {
	if args.Resume != nil {
		return o.resume(ctx, parent, callID, args, label)
	}
	if parent.depth+1 > o.cfg.MaxDepth {
		return o.reject(parent, callID, args, fmt.Sprintf("task: depth limit reached (--max-depth %d); do the work yourself", o.cfg.MaxDepth))
	}

	// 1. Agent profile.
	var prof *agents.Profile
	if args.Agent != nil {
		p, err := o.profile(*args.Agent)
		if err != nil {
			return o.reject(parent, callID, args, err.Error())
		}
		prof = &p
	}
	// 2. Model binding.
	binding := parent.binding
	if prof != nil {
		b, note, err := profileBinding(o.profileSet(), *prof, parent.binding)
		if err != nil {
			return o.reject(parent, callID, args, "task: "+err.Error())
		}
		if note != "" {
			o.Warn(label, note)
		}
		if b.Provider != "script" && b != parent.binding {
			// The profile's own provider must be usable (its key set)
			// before anything is created for the child.
			if _, err := providers.Open(b, os.Getenv); err != nil {
				return o.reject(parent, callID, args, fmt.Sprintf("task: agent %q: %v; or change the model: line of %s", prof.Name, err, prof.Source))
			}
		}
		binding = b
	}
	childID := session.NewID()
	// 3. Worktree.
	wantWT := false
	if prof != nil && prof.Worktree != nil {
		wantWT = *prof.Worktree
	}
	if args.Worktree != nil {
		wantWT = *args.Worktree
	}
	cwd, root := parent.cwd, parent.root
	var wt *worktree.Record
	if wantWT {
		repo, err := worktree.Detect(ctx, parent.cwd)
		if err != nil {
			return o.reject(parent, callID, args, fmt.Sprintf("task: %v", err))
		}
		rec, err := worktree.Create(ctx, repo, o.cfg.InkHome, childID, os.Getpid())
		if err != nil {
			return o.reject(parent, callID, args, fmt.Sprintf("task: %v (or retry the task without worktree)", err))
		}
		wt = &rec
		cwd, root = rec.Cwd, rec.Path
	}
	// 4. Tool pool.
	pool, toolNote := o.childTools(parent, prof)
	if toolNote != "" {
		o.Warn(label, toolNote)
	}
	// 5. Transcript, launch record, system prompt.
	notice := ""
	if wt != nil {
		notice = worktreeNotice(wt.Path, wt.Branch, wt.Baseline, parent.cwd)
	}
	body := ""
	if prof != nil {
		body = prof.Body
	}
	system := childSystem(parent.system, body, notice)
	sorted := append([]string(nil), pool...)
	sort.Strings(sorted)
	launch := &session.LaunchRecord{
		Version: 1, ParentSessionID: parent.sessionID, ChildID: childID, InkVersion: InkVersion,
		Binding: binding, Cwd: cwd, Tools: sorted,
		System: session.SystemRef{SHA256: session.SystemFingerprint(system), Files: parent.files},
		Depth:  parent.depth + 1, MaxDepth: o.cfg.MaxDepth,
	}
	agentName := ""
	if prof != nil {
		agentName = prof.Name
		launch.Agent = &session.AgentRef{Name: prof.Name, Source: prof.Source, RoleSHA256: prof.RoleSHA256}
	}
	if wt != nil {
		launch.Worktree = &session.WorktreeRef{RepoRoot: wt.RepoRoot, Baseline: wt.Baseline, Path: wt.Path, Branch: wt.Branch, CreationReflog: wt.CreationReflog}
	}
	child := &agentRun{
		label: label, sessionID: childID,
		transcript: session.ChildPath(parent.transcript, childID),
		depth:      parent.depth + 1, binding: binding, system: system, files: parent.files, tools: pool,
		cwd: cwd, root: root, agent: agentName,
	}
	timeout := o.timeoutFor(args, prof)
	spec := ipc.AttemptSpec{
		InkHome: o.cfg.InkHome, Transcript: child.transcript,
		Create:    &session.Header{Type: "session", Version: session.Version, ID: childID, CreatedAt: time.Now().UTC(), Cwd: cwd, Parent: parent.sessionID, Launch: launch},
		AttemptID: session.NewID(), SessionID: childID, Agent: agentName, Label: child.label,
		Binding: binding, System: system, Tools: pool, Cwd: cwd, Root: root, Prompt: args.Prompt,
		Depth: child.depth, HeartbeatInterval: o.cfg.HeartbeatInterval,
	}
	if prof != nil {
		spec.Thinking = prof.Thinking
	}
	return o.runChild(ctx, parent, child, callID, args, spec, timeout, wt, false)
}

// runChild runs one attempt of a child inside the window and composes the
// answer. resumed children keep their worktree whatever its state.
func (o *Orchestrator) runChild(ctx context.Context, parent, child *agentRun, callID string, args TaskArgs, spec ipc.AttemptSpec, timeout time.Duration, wt *worktree.Record, resumed bool) taskAnswer {
	wtField := ""
	if wt != nil {
		wtField = wt.Path
	}
	if parent.onLaunch != nil {
		if err := parent.onLaunch(); err != nil {
			return o.reject(parent, callID, args, fmt.Sprintf("task: %v", err))
		}
	}
	// A new worktree is locked from its creation; a resumed one is locked
	// again, so that no prune or `ink worktrees rm` takes it from under the
	// worker. settleWorktree unlocks it after the attempt.
	if wt != nil && resumed {
		if info, err := worktree.Find(ctx, o.cfg.InkHome, wt.ChildID()); err == nil && info.Locked && info.LockPIDAlive && info.LockPID != os.Getpid() {
			return o.reject(parent, callID, args, fmt.Sprintf("task: the worktree %s is in use by process %d (%s); resume it once that process has ended. Start a new task instead.", wt.Path, info.LockPID, info.LockReason))
		}
		if err := worktree.Lock(ctx, *wt, fmt.Sprintf("ink %s pid %d", child.sessionID, os.Getpid())); err != nil {
			return o.reject(parent, callID, args, fmt.Sprintf("task: cannot lock the worktree %s: %v. Start a new task instead.", wt.Path, err))
		}
	}
	base := map[string]any{"childId": child.sessionID, "agentName": child.agent, "child": child.label, "toolCallId": callID}
	release, err := o.acquireSlot(ctx, parent.label, parent.sessionID, base)
	if err != nil {
		res := attemptResult{AttemptID: spec.AttemptID, Status: ipc.StatusAborted, Reason: fmt.Sprintf("cancelled while queued: %v", err)}
		return o.finish(parent, child, callID, args, spec, res, timeout, wt, resumed, false)
	}
	res := o.runAttempt(ctx, child, spec, timeout, func(pid int) {
		f := copyFields(base)
		f["worktree"], f["attemptId"], f["pid"], f["resumed"] = wtField, spec.AttemptID, pid, resumed
		o.emit(child.label, child.sessionID, "task.start", f)
	})
	o.usage.add(child.label, res.Usage)
	// The slot is held until task.end is out, so the events never show
	// more children than the window.
	defer release()
	return o.finish(parent, child, callID, args, spec, res, timeout, wt, resumed, true)
}

// finish assesses the worktree, composes the result and the TaskRecord, and
// emits task.end.
func (o *Orchestrator) finish(parent, child *agentRun, callID string, args TaskArgs, spec ipc.AttemptSpec, res attemptResult, timeout time.Duration, wt *worktree.Record, resumed, started bool) taskAnswer {
	if res.Status == ipc.StatusRefused {
		ans := o.reject(parent, callID, args, fmt.Sprintf("task: %s. Start a new task instead.", res.Reason))
		ans.Record.ChildID = child.sessionID
		// A worktree made for this attempt goes with it when clean. A
		// resumed child's lock is left as it is: another attempt may be
		// running there (a dead pid in it counts as no lock).
		if wt != nil && !resumed {
			_, _, lines := o.settleWorktree(*wt, false, false)
			ans.Content += "\n" + strings.Join(lines, "\n")
		}
		o.emit(child.label, child.sessionID, "task.end", map[string]any{"childId": child.sessionID, "status": "rejected", "reason": res.Reason, "toolCallId": callID})
		return ans
	}
	_, statErr := os.Stat(child.transcript)
	present := statErr == nil
	rec := session.TaskRecord{
		Version: 1, AttemptID: spec.AttemptID, TaskToolCallID: callID, ParentSessionID: parent.sessionID,
		ChildID: child.sessionID, Launched: res.Launched, Agent: child.agent, Binding: &child.binding,
		Cwd: child.cwd, Tools: sortedCopy(child.tools), Status: res.Status, Reason: clip(res.Reason, 300),
		Turns: res.Turns, TextPresent: strings.TrimSpace(res.Text) != "",
	}
	if timeout > 0 {
		rec.TimeoutMs = timeout.Milliseconds()
	}
	u := res.Usage
	rec.Usage = &u
	if present {
		rec.Transcript = &session.TranscriptRef{Present: true, Path: child.transcript}
	} else {
		why := "no-content"
		if !started {
			why = "not-started"
		}
		rec.Transcript = &session.TranscriptRef{Present: false, Why: why}
	}
	var wtLines []string
	if wt != nil {
		// A child that did not complete can be resumed in its worktree, so
		// even a clean one is kept for that.
		disp, detail, lines := o.settleWorktree(*wt, resumed, present && res.Status != ipc.StatusCompleted)
		wtLines = lines
		rec.Worktree = &session.WorktreeOutcome{Path: wt.Path, Branch: wt.Branch, Disposition: disp, Detail: clip(detail, 300)}
	}
	in := resultInput{
		Status: res.Status, Reason: res.Reason, Text: res.Text, Turns: res.Turns, Usage: res.Usage,
		Timeout: timeout.String(), ChildID: child.sessionID, Prompt: args.Prompt, WorktreeLines: wtLines,
	}
	if present {
		in.Transcript = child.transcript
	}
	if resumed {
		in.ExtraLines = append(in.ExtraLines, o.lifetimeLine(child.transcript)...)
	}
	content, isErr := composeResult(in)
	end := map[string]any{
		"childId": child.sessionID, "status": res.Status, "reason": res.Reason, "turns": res.Turns,
		"usage": res.Usage, "transcript": child.transcript, "toolCallId": callID, "attemptId": spec.AttemptID,
	}
	if rec.Worktree != nil {
		end["worktree"] = rec.Worktree
	}
	o.emit(child.label, child.sessionID, "task.end", end)
	return taskAnswer{Content: content, IsError: isErr, Record: rec, Child: child, Result: res}
}

// settleWorktree unlocks a child's worktree after an attempt (its worker is
// gone), assesses it, and removes it only when it is clean, the child was
// not resumed and cannot be resumed (it completed). The returned line tells
// the user what happened to it and why.
func (o *Orchestrator) settleWorktree(rec worktree.Record, resumed, resumable bool) (disposition, detail string, lines []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := worktree.Unlock(ctx, rec); err != nil {
		o.cfg.Logger.Warn("Worktree unlock failed", "path", rec.Path, "err", err)
	}
	if resumed || resumable {
		a := worktree.Assess(ctx, rec)
		switch {
		case a.State == worktree.Clean && resumed:
			return "kept-resumed", "a resumed worktree is never removed", []string{fmt.Sprintf(
				"[task] no changes since baseline %s; worktree %s and branch %s kept (a resumed child's worktree is never removed; remove it with `ink worktrees rm %s`)",
				worktree.ShortSHA(rec.Baseline), rec.Path, rec.Branch, rec.ChildID())}
		case a.State == worktree.Clean:
			return "kept-resumable", "no changes; kept so that the child can be resumed in it", []string{fmt.Sprintf(
				"[task] no changes since baseline %s; worktree %s and branch %s kept so that the child can be resumed in it (`ink worktrees prune` removes it once it is not needed)",
				worktree.ShortSHA(rec.Baseline), rec.Path, rec.Branch)}
		case a.State == worktree.WorkPresent:
			return worktree.DispositionKeptWork, a.Detail, []string{"[task] " + worktree.Describe(a, rec)}
		default:
			return worktree.DispositionKeptUnknown, a.Detail, []string{"[task] " + worktree.Describe(a, rec)}
		}
	}
	out := worktree.Settle(ctx, rec)
	detail = out.Assessment.Detail
	if out.Disposition == worktree.DispositionRemovalFailed {
		detail = out.Text
	}
	return out.Disposition, detail, []string{"[task] " + out.Text}
}

// childTools is the child's pool: the parent's tools minus task (unless the
// depth allows it), narrowed by the profile's tools (agents.Profile.ChildTools),
// and at most one note naming the listed tools the child runs without. A
// child is never refused for its tools.
func (o *Orchestrator) childTools(parent *agentRun, prof *agents.Profile) ([]string, string) {
	var base []string
	withheld := map[string]string{}
	for _, t := range parent.tools {
		if t == "task" && parent.depth+2 > o.cfg.MaxDepth {
			withheld[t] = fmt.Sprintf("not available at depth %d with --max-depth %d; raise --max-depth to let this agent delegate", parent.depth+1, o.cfg.MaxDepth)
			continue
		}
		base = append(base, t)
	}
	if prof == nil {
		return base, ""
	}
	return prof.ChildTools(base, withheld)
}

// profile looks a profile up by name in the current profiles (hot reload:
// every task sees the latest good version). The error says what is
// available, or why the name is missing and how to fix it.
func (o *Orchestrator) profile(name string) (agents.Profile, error) {
	p, err := o.profileSet().Lookup(name)
	if err != nil {
		return agents.Profile{}, fmt.Errorf("task: %w", err)
	}
	return p, nil
}

// profileBinding resolves a profile's model against its parent's binding
// (agents.Set.ResolveModel: Claude aliases, models.yaml) and gives it its
// effective endpoint, with at most one note for the user (an alias that
// fell back to the parent's model). A relative script:PATH is read from the
// directory of the profile file, and must exist.
func profileBinding(set *agents.Set, prof agents.Profile, parent model.Binding) (model.Binding, string, error) {
	b, note, err := set.ResolveModel(prof, parent)
	if err != nil {
		return model.Binding{}, "", err
	}
	if b.Provider == "script" && b != parent {
		dir := filepath.Dir(prof.Source) // the profile file's own directory, a subdirectory too
		if !filepath.IsAbs(b.Model) {
			b.Model = filepath.Join(dir, b.Model)
		}
		if fi, err := os.Stat(b.Model); err != nil || fi.IsDir() {
			return model.Binding{}, "", fmt.Errorf("agent %q: model %s: no such script file (a relative path is read from %s); fix the model: line of %s", prof.Name, prof.Model, dir, prof.Source)
		}
	}
	return providers.Resolve(b, os.Getenv), note, nil
}

// timeoutFor applies DESIGN.md §4 precedence: call > profile > --task-timeout
// > default (none on a terminal, 60 min headless).
func (o *Orchestrator) timeoutFor(args TaskArgs, prof *agents.Profile) time.Duration {
	switch {
	case args.TimeoutMs != nil:
		return time.Duration(*args.TimeoutMs) * time.Millisecond
	case prof != nil && prof.Timeout > 0:
		return prof.Timeout
	case o.cfg.TaskTimeout > 0:
		return o.cfg.TaskTimeout
	case o.cfg.Interactive:
		return 0
	default:
		return DefaultHeadlessTimeout
	}
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func copyFields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// usageOf returns u or the zero usage.
func usageOf(u *model.Usage) model.Usage {
	if u == nil {
		return model.Usage{}
	}
	return *u
}
