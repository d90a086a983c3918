package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/taskargs"
	"github.com/inkdev/ink/version"
	"github.com/inkdev/ink/worktree"
)

// TaskArgs are the arguments of a `task` call (package taskargs).
type TaskArgs = taskargs.Args

// ParseTaskArgs decodes and checks task arguments with the rules every
// front end shares (taskargs.Parse).
func ParseTaskArgs(raw json.RawMessage) (TaskArgs, error) { return taskargs.Parse(raw) }

// taskAnswer is a composed task result plus its TaskRecord.
type taskAnswer struct {
	Content string
	IsError bool
	Record  session.TaskRecord
	Result  attemptResult
	// Answer is the child's answer as Content starts with it ("" when
	// Content carries none).
	Answer string
	// Started is the child a background call started (nil otherwise): its
	// record is written only once it ends.
	Started *ChildStatus
}

// ipc is the answer on the wire; an answer without a record (a background
// start) carries none.
func (t taskAnswer) ipc() ipc.TaskAnswer {
	a := ipc.TaskAnswer{Content: t.Content, IsError: t.IsError}
	if t.Record.Version != 0 {
		rec := t.Record
		a.Record = &rec
	}
	return a
}

// result is the answer as a front end sees it.
func (t taskAnswer) result() TaskResult {
	r := TaskResult{
		Content: t.Content, IsError: t.IsError, Status: t.Record.Status, Record: t.Record,
		Text: t.Result.Text, Turns: t.Result.Turns, ChildID: t.Record.ChildID, Agent: t.Record.Agent,
		Notes: t.Content,
	}
	if t.Answer != "" && strings.HasPrefix(t.Content, t.Answer) {
		r.Answer, r.Notes = t.Answer, strings.TrimLeft(t.Content[len(t.Answer):], "\n")
	}
	if st := t.Started; st != nil {
		r.ChildID, r.Agent = st.ID, st.Agent
	}
	return r
}

// handleTask answers a worker's task request: a background call at once,
// with its child's id, any other once its child ended.
func (o *Orchestrator) handleTask(ctx context.Context, parent *agentRun, call taskCall, raw json.RawMessage) ipc.TaskAnswer {
	args, err := taskargs.Parse(raw)
	if err != nil {
		return o.reject(parent, call, TaskArgs{}, err.Error()).ipc()
	}
	if args.Background {
		return o.startBackground(ctx, parent, call, args).ipc()
	}
	return o.task(ctx, parent, call, args).ipc()
}

// reject composes a rejection — nothing was launched and nothing changed —
// and reports it as the call's task.end.
func (o *Orchestrator) reject(parent *agentRun, call taskCall, args TaskArgs, reason string) taskAnswer {
	rec := session.TaskRecord{
		Version: 1, AttemptID: session.NewID(), TaskToolCallID: call.id, ParentSessionID: parent.sessionID,
		Launched: false, Cwd: parent.cwd, Status: StatusRejected, Reason: clip(reason, session.MaxReasonRunes),
	}
	if args.Agent != nil {
		rec.Agent = *args.Agent
	}
	o.pub.emit(call.label, parent.sessionID, event.TaskEnd{Status: StatusRejected, Reason: reason, ToolCallID: call.id, Background: call.background})
	return taskAnswer{Content: reason, IsError: true, Record: rec}
}

// task launches (or resumes) the child of one task call and waits for it.
func (o *Orchestrator) task(ctx context.Context, parent *agentRun, call taskCall, args TaskArgs) taskAnswer {
	if args.Resume != nil {
		return o.resume(ctx, parent, call, args)
	}
	plan, reason := o.planChild(ctx, parent, args)
	if reason != "" {
		return o.reject(parent, call, args, reason)
	}
	for _, note := range plan.notes {
		o.Warn(call.label, note)
	}
	return o.launchChild(ctx, parent, call, args, plan)
}

// childPlan is a new child that passed every check before any side effect:
// its profile, binding and tool pool.
type childPlan struct {
	profile  *agents.Profile
	binding  model.Binding
	tools    []string
	worktree bool
	// remote runs the child on a worker that shares no disk with the
	// supervisor (Config.RemoteCommand); it always works in a worktree.
	remote  bool
	sandbox bashSandbox
	// notes tell the user what was adapted (an alias that fell back to the
	// parent's model, tools the child runs without); they become warnings.
	notes []string
}

// planChild runs the checks of a new child in their documented order —
// depth, agent profile, model binding, worktree request, tool pool — and
// returns the first refusal, or "" and the plan.
func (o *Orchestrator) planChild(ctx context.Context, parent *agentRun, args TaskArgs) (childPlan, string) {
	var plan childPlan
	if why := o.budget.exhausted(); why != "" {
		return plan, why
	}
	if parent.depth+1 > o.cfg.MaxDepth {
		return plan, fmt.Sprintf("task: depth limit reached (--max-depth %d); do the work yourself", o.cfg.MaxDepth)
	}
	req, err := requestChild(o.profileSet(), args, parent.binding, o.getenv)
	if err != nil {
		return plan, "task: " + err.Error()
	}
	plan.profile, plan.binding, plan.worktree = req.profile, req.binding, req.worktree
	if req.note != "" {
		plan.notes = append(plan.notes, req.note)
	}
	var why string
	if plan.remote, why = o.remoteChild(plan.profile); why != "" {
		return plan, why
	}
	if plan.remote {
		if args.Worktree != nil && !*args.Worktree {
			return plan, "task: children run on remote workers here (--launcher exec:…), and a remote child always works in a worktree: leave out worktree: false, or use an agent whose profile says launcher: local"
		}
		plan.worktree = true
	}
	if plan.worktree {
		if _, err := o.ws.Detect(ctx, parent.cwd); err != nil {
			return plan, fmt.Sprintf("task: %v", err)
		}
	}
	pool, note := o.childTools(parent, plan.profile)
	if note != "" {
		plan.notes = append(plan.notes, note)
	}
	plan.tools = pool
	boxRoot := parent.root // a worktree child's git state is confined another way
	if plan.worktree || parent.gitDir != "" {
		boxRoot = ""
	}
	if plan.sandbox, err = o.sandboxFor(parent.label, parent.sessionID, pool, plan.profile, boxRoot); err != nil {
		return plan, fmt.Sprintf("task: %v", err)
	}
	return plan, ""
}

// launchChild makes a new child's worktree (when asked) and transcript spec
// and runs its first attempt.
func (o *Orchestrator) launchChild(ctx context.Context, parent *agentRun, call taskCall, args TaskArgs, plan childPlan) taskAnswer {
	childID := session.NewID()
	cwd, root := parent.cwd, parent.root
	var wt *worktree.Record
	if plan.worktree {
		repo, err := o.ws.Detect(ctx, parent.cwd)
		if err == nil {
			var rec worktree.Record
			rec, err = o.ws.Create(ctx, repo, o.cfg.InkHome, childID, worktree.Origin{ParentSession: parent.sessionID, ToolCallID: call.id})
			wt = &rec
		}
		if err != nil {
			return o.reject(parent, call, args, fmt.Sprintf("task: %v (or retry the task without worktree)", err))
		}
		cwd, root = wt.Cwd, wt.Path
	}
	notice := ""
	if wt != nil {
		notice = worktreeNotice(wt.Path, wt.Branch, wt.Baseline, parent.cwd)
	}
	body, agentName, thinking := "", "", parent.thinking
	if p := plan.profile; p != nil {
		body, agentName, thinking = p.Body, p.Name, cmp.Or(p.Thinking, parent.thinking)
	}
	system := childSystem(parent.base, plan.tools, body, notice)
	launch := &session.LaunchRecord{
		Version: 1, ParentSessionID: parent.sessionID, ChildID: childID, InkVersion: version.Ink,
		Binding: plan.binding, Cwd: cwd, Tools: sortedCopy(plan.tools),
		System: session.SystemRef{SHA256: session.SystemFingerprint(system), Files: parent.files},
		Depth:  parent.depth + 1, MaxDepth: o.cfg.MaxDepth, Sandbox: plan.sandbox.ref(), Thinking: thinking,
	}
	if p := plan.profile; p != nil {
		launch.Agent = &session.AgentRef{Name: p.Name, Source: p.Source, RoleSHA256: p.RoleSHA256}
	}
	if wt != nil {
		launch.Worktree = &session.WorktreeRef{RepoRoot: wt.RepoRoot, Baseline: wt.Baseline, Path: wt.Path, Branch: wt.Branch, CreationReflog: wt.CreationReflog}
	}
	child := &agentRun{
		label: call.label, sessionID: childID, transcript: session.ChildPath(parent.owner(), childID),
		depth: parent.depth + 1, binding: plan.binding, system: system, base: parent.base, files: parent.files, tools: plan.tools,
		cwd: cwd, root: root, agent: agentName, gitDir: parent.gitDir, thinking: thinking,
	}
	if wt != nil {
		child.gitDir = wt.PrivateGitDir()
	}
	var remote *worktree.Record
	if plan.remote {
		remote = wt
	}
	spec := o.childSpec(child, args.Prompt, plan.profile, plan.sandbox, remote)
	spec.Create = &session.Header{Type: "session", Version: session.Version, ID: childID, CreatedAt: time.Now().UTC(), Cwd: cwd, Parent: parent.sessionID, Launch: launch}
	return o.runChild(ctx, childAttempt{
		parent: parent, child: child, call: call, args: args, spec: spec,
		timeout: o.timeoutFor(args, plan.profile), wt: wt,
	})
}

// childSpec is the spec of one attempt of child — new or resumed — built
// in this one place: who the child is and what it runs on, its profile's
// limits over the run's (profileLimits, then limits), its bash sandbox,
// and where it works: a remote child ships its worktree (remote, nil for
// a local child), a local one's bash may write the git directory of the
// worktree it works in, named from ink's record, never from the worktree.
// The caller adds how the transcript opens (Create, or ExpectHeader and
// Repair); supervise adds what only the launch knows (arm).
func (o *Orchestrator) childSpec(child *agentRun, prompt string, prof *agents.Profile, box bashSandbox, remote *worktree.Record) ipc.AttemptSpec {
	spec := ipc.AttemptSpec{
		InkHome: o.cfg.InkHome, Transcript: child.transcript,
		AttemptID: session.NewID(), SessionID: child.sessionID, Agent: child.agent, Label: child.label,
		Binding: child.binding, System: child.system, Tools: child.tools, Cwd: child.cwd, Root: child.root, Prompt: prompt,
		Depth: child.depth, HeartbeatInterval: o.cfg.HeartbeatInterval, Thinking: child.thinking,
	}
	profileLimits(&spec, prof)
	o.limits(&spec)
	box.apply(&spec)
	if remote != nil {
		spec.Remote = remoteSpecOf(*remote)
		child.gitDir = ""
	}
	spec.WorktreeGitDir = child.gitDir
	return spec
}

// runChild runs one attempt of a child inside the window and composes the
// answer. A resumed child keeps its worktree whatever its state. Once every
// check passed the child is in its parent's registry, where task_status,
// task_wait and task_cancel find it.
func (o *Orchestrator) runChild(ctx context.Context, e childAttempt) taskAnswer {
	// A resume from a shell-like parent records its call only once the
	// worker accepted the child (see runTracked).
	if e.parent.onLaunch != nil && !e.resumed {
		if err := e.parent.onLaunch(e.call, e.args); err != nil {
			ans := o.reject(e.parent, e.call, e.args, fmt.Sprintf("task: %v", err))
			if e.wt != nil && !e.resumed {
				_, _, lines := o.settleWorktree(*e.wt, false, false)
				ans.Content += "\n" + strings.Join(lines, "\n")
			}
			return ans
		}
	}
	// A new worktree is locked from its creation; a resumed one is locked
	// again, so that no prune or `ink worktrees rm` takes it from under the
	// worker. settleWorktree unlocks it after the attempt.
	if e.wt != nil && e.resumed {
		if info, err := o.ws.Find(ctx, o.cfg.InkHome, e.wt.ChildID()); err == nil && info.Locked && info.LockPIDAlive && info.LockPID != os.Getpid() {
			return o.reject(e.parent, e.call, e.args, fmt.Sprintf("task: the worktree %s is in use by process %d (%s); resume it once that process has ended. Start a new task instead.", e.wt.Path, info.LockPID, info.LockReason))
		}
		if err := o.ws.Lock(ctx, *e.wt, fmt.Sprintf("ink %s pid %d", e.child.sessionID, os.Getpid())); err != nil {
			return o.reject(e.parent, e.call, e.args, fmt.Sprintf("task: cannot lock the worktree %s: %v. Start a new task instead.", e.wt.Path, err))
		}
	}
	ctx, tc := e.parent.registry().track(ctx, e)
	e.child.track = tc
	if e.call.registered != nil {
		e.call.registered(tc)
	}
	ans := o.runTracked(ctx, e)
	tc.end(ans)
	return ans
}

// runTracked runs a registered child's attempt: it waits for a slot in the
// window, supervises the worker and composes the answer.
func (o *Orchestrator) runTracked(ctx context.Context, e childAttempt) taskAnswer {
	release, err := o.window.acquire(ctx, e.call.ticket, func() {
		e.child.track.queued()
		o.pub.emit(e.parent.label, e.parent.sessionID, event.TaskQueued{ChildID: e.child.sessionID, AgentName: e.child.agent, Child: e.child.label, ToolCallID: e.call.id, Background: e.call.background})
	})
	if err != nil {
		return o.finish(e, attemptResult{AttemptID: e.spec.AttemptID, Status: StatusAborted, Reason: fmt.Sprintf("cancelled while queued: %v", err)})
	}
	// The slot is held until task.end is out, so the events never show
	// more children than the window.
	defer release()
	// Children that waited for a slot while others spent the budget do not
	// start once it is gone.
	if why := o.budget.exhausted(); why != "" {
		ans := o.reject(e.parent, e.call, e.args, why)
		if e.wt != nil && !e.resumed {
			_, _, lines := o.settleWorktree(*e.wt, false, false)
			ans.Content += "\n" + strings.Join(lines, "\n")
		}
		return ans
	}
	wtPath := ""
	if e.wt != nil {
		wtPath = e.wt.Path
	}
	taskStart := func(pid int) {
		o.pub.emit(e.child.label, e.child.sessionID, event.TaskStart{
			ChildID: e.child.sessionID, AgentName: e.child.agent, Child: e.child.label, ToolCallID: e.call.id,
			Worktree: wtPath, AttemptID: e.spec.AttemptID, Pid: pid, Resumed: e.resumed, Sandbox: e.spec.Sandbox, Network: e.spec.Network,
			Background: e.call.background,
		})
		e.child.track.running(pid)
	}
	onStart := taskStart
	if e.resumed && e.parent.onLaunch != nil {
		// A resume from a shell-like parent records its task call once the
		// worker has accepted the child (its first event): a worker that
		// refuses it under the lease then leaves no file behind, like every
		// other refusal.
		pid := 0
		onStart = func(p int) { pid = p }
		e.child.onAccept = func() error {
			if err := e.parent.onLaunch(e.call, e.args); err != nil {
				return err
			}
			taskStart(pid)
			return nil
		}
	}
	if !e.resumed {
		// The call that starts the child is durable before the child can
		// write a byte (a shell parent's; a worker syncs its own).
		e.child.launchReady = e.parent.launchReady
	}
	res := o.supervise(ctx, e.child, e.spec, e.timeout, onStart)
	o.usage.add(e.child.label, res.Usage)
	e.started = true
	return o.finish(e, res)
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

// profileSet is the current agent profiles, or nil.
func (o *Orchestrator) profileSet() *agents.Set {
	if o.cfg.Profiles == nil {
		return nil
	}
	return o.cfg.Profiles.Current()
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
// in the current profiles (resolveProfileBinding).
func (o *Orchestrator) profileBinding(prof agents.Profile, parent model.Binding) (model.Binding, string, error) {
	return resolveProfileBinding(o.profileSet(), prof, parent, o.getenv)
}

// timeoutFor applies the timeout precedence: the call's timeoutMs, else the
// profile's timeout:, else --task-timeout, else none on a terminal and 60
// minutes headless.
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

// profileLimits gives a child's spec what its profile sets: its thinking
// level (else the parent's, already in spec), its turn cap and its context
// window (a profile's win over --max-turns and --context-window).
func profileLimits(spec *ipc.AttemptSpec, prof *agents.Profile) {
	if prof == nil {
		return
	}
	if prof.Thinking != "" {
		spec.Thinking = prof.Thinking
	}
	if prof.MaxTurns > 0 {
		spec.MaxTurns = prof.MaxTurns
	}
	if prof.ContextWindow > 0 {
		spec.ContextWindow = prof.ContextWindow
	}
}
