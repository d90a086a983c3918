package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
	"github.com/inkdev/ink/worktree"
)

// Problem is one reason a resume is refused (docs/architecture.md, "Resume", step 2).
type Problem struct {
	// Code is a lookup's or a worker's refusal code (session.Code*), one
	// of the resume check's below, or a worktree problem's.
	Code    session.Code `json:"code"`
	Message string       `json:"message"`
}

// The resume check's own problem codes (docs/architecture.md, "Resume").
const (
	codeEmptyTranscript  session.Code = "empty-transcript"
	codeNoRecord         session.Code = "no-record"
	codeVersionDrift     session.Code = "version-drift"
	codeAgentMissing     session.Code = "agent-missing"
	codeAgentDrift       session.Code = "agent-drift"
	codeThinkingDrift    session.Code = "thinking-drift"
	codeModelDrift       session.Code = "model-drift"
	codeToolsDrift       session.Code = "tools-drift"
	codeSandboxDrift     session.Code = "sandbox-drift"
	codeCwdDrift         session.Code = "cwd-drift"
	codeCwdMissing       session.Code = "cwd-missing"
	codeCwdNotDirectory  session.Code = "cwd-not-directory"
	codeSystemDrift      session.Code = "system-drift"
	codePromptFilesDrift session.Code = "prompt-files-drift"
)

// resumeRefusal renders every problem and ends with the required sentence.
func resumeRefusal(childID string, problems []Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot resume child %q:", childID)
	for _, p := range problems {
		fmt.Fprintf(&b, "\n- %s: %s", p.Code, p.Message)
	}
	b.WriteString("\nStart a new task instead.")
	return b.String()
}

// resume continues a settled child of parent in its own transcript. The
// child is looked up among the children of parent.owner(): the parent's
// own, or for a shell parent those of the session that owns the child.
func (o *Orchestrator) resume(ctx context.Context, parent *agentRun, call taskCall, args TaskArgs) taskAnswer {
	childID := *args.Resume
	refuse := func(problems ...Problem) taskAnswer {
		return o.reject(parent, call, args, resumeRefusal(childID, problems))
	}
	if t := parent.registry().get(childID); t != nil && parent.registry().running(childID) {
		if t.background {
			return refuse(Problem{Code: session.CodeStillRunning, Message: fmt.Sprintf(
				"it is still running in the background of this session; collect it with task_wait({ids: [%q]}) or stop it with task_cancel({id: %q}), then resume it", childID, childID)})
		}
		return refuse(Problem{Code: session.CodeStillRunning, Message: fmt.Sprintf(
			"it is still running in this session (the task call that started it has not returned, or is stopping); wait for it, or stop it with task_cancel({id: %q}), then resume it", childID)})
	}
	info, err := o.findChild(parent, childID)
	if err != nil {
		var le *session.LookupError
		if errors.As(err, &le) {
			return refuse(Problem{Code: le.Code, Message: strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))})
		}
		return refuse(Problem{Code: session.CodeMalformed, Message: err.Error()})
	}
	plan, problems := o.validateResume(ctx, parent, info.Path, call.label)
	if len(problems) > 0 {
		return refuse(problems...)
	}
	// A child with a worktree resumes where the run's launcher puts its
	// children; one without stays local, since a remote child needs one.
	var remoteWT *worktree.Record
	if remote, _ := o.remoteChild(plan.profile); remote && plan.worktree != nil {
		remoteWT = plan.worktree
	}
	spec := o.childSpec(plan.child, args.Prompt, plan.profile, plan.sandbox, remoteWT)
	spec.ExpectHeader, _ = json.Marshal(plan.header)
	spec.Repair = true
	return o.runChild(ctx, childAttempt{
		parent: parent, child: plan.child, call: call, args: args, spec: spec,
		timeout: o.timeoutFor(args, plan.profile), wt: plan.worktree, resumed: true,
	})
}

// findChild finds child childID among the children of parent.owner():
// as the lookup that chose the owner found it, else by looking there.
func (o *Orchestrator) findChild(parent *agentRun, childID string) (session.ChildInfo, error) {
	if f := parent.found; f != nil && f.OwnerPath == parent.owner() && f.Child.Header.ID == childID {
		return f.Child, nil
	}
	ownerID := parent.sessionID
	if parent.childrenOf != "" {
		h, err := o.store.Header(parent.childrenOf)
		if err != nil {
			return session.ChildInfo{}, err
		}
		ownerID = h.ID
	}
	return o.store.FindChild(parent.owner(), ownerID, childID)
}

// resumePlan is a validated resume: the child as it will run again.
type resumePlan struct {
	header   session.Header
	child    *agentRun
	profile  *agents.Profile
	worktree *worktree.Record
	thinking string
	sandbox  bashSandbox
}

// validateResume rebuilds the child's launch from today's state and
// compares it with its launch record, collecting every difference.
func (o *Orchestrator) validateResume(ctx context.Context, parent *agentRun, path, label string) (resumePlan, []Problem) {
	var problems []Problem
	add := func(code session.Code, format string, a ...any) {
		problems = append(problems, Problem{Code: code, Message: fmt.Sprintf(format, a...)})
	}
	// The header and the end of the transcript are all validation reads:
	// the worker reads the whole history once, under the lease, and
	// refuses one it cannot continue (its calls and results out of step, a
	// damaged line) before it writes anything.
	tail, err := o.store.Tail(path)
	if err != nil {
		return resumePlan{}, []Problem{{Code: session.CodeMalformed, Message: err.Error()}}
	}
	h := tail.Header
	launch := h.Launch
	if launch == nil {
		return resumePlan{}, []Problem{{Code: session.CodeMissingLaunch, Message: fmt.Sprintf("%s has no launch record", path)}}
	}
	plan := resumePlan{header: h}

	// Is it running? A held lease means another worker is writing it.
	st, perr := o.store.Probe(path)
	if perr == nil && st.State != lease.Free {
		who := ""
		if st.Meta != nil {
			who = fmt.Sprintf(" (pid %d holds its lease)", st.Meta.Pid)
		}
		add(session.CodeStillRunning, "the child is still running%s; wait for it to finish, or see `ink leases ls`", who)
	}
	if !tail.HasMessages {
		add(codeEmptyTranscript, "the transcript holds no messages; nothing to continue")
	}
	// An attempt that started and never ended, whose lease is free and
	// whose holder provably is gone, was lost with its host (every
	// process killed at once, the machine stopped): it is interrupted,
	// and the worker that continues it records so. One that may still run
	// elsewhere is not settled.
	if tail.LastEnd == nil && !(tail.StartedSince && perr == nil && st.Lost() != lease.NotLost) && !o.parentRecorded(parent.owner(), h.ID) {
		add(codeNoRecord, "no settled record of this child: neither the parent's task result nor the child's own attempt end was written, and its last holder may still run (its lease names another host)")
	}
	if launch.InkVersion != version.Ink {
		add(codeVersionDrift, "launched by ink %s, this is ink %s; resume it with ink %s", launch.InkVersion, version.Ink, launch.InkVersion)
	}

	// Agent.
	var prof *agents.Profile
	if launch.Agent != nil {
		p, err := o.profile(launch.Agent.Name)
		switch {
		case err != nil:
			add(codeAgentMissing, "agent %q is no longer defined (was %s); restore that file to resume it", launch.Agent.Name, launch.Agent.Source)
		case p.RoleSHA256 != launch.Agent.RoleSHA256:
			add(codeAgentDrift, "agent %q changed since launch (%s); restore its earlier text to resume it", launch.Agent.Name, p.Source)
			prof = &p
		default:
			prof = &p
		}
	}
	plan.profile = prof
	// Thinking: the profile's level, else the parent's, as at launch.
	plan.thinking = parent.thinking
	if prof != nil && prof.Thinking != "" {
		plan.thinking = prof.Thinking
	}
	if plan.thinking != launch.Thinking {
		add(codeThinkingDrift, "launched with thinking %s, would now run with thinking %s; restore the agent's thinking: line to resume it", thinkingName(launch.Thinking), thinkingName(plan.thinking))
	}

	// Model.
	binding := parent.binding
	if prof != nil {
		if b, _, err := o.profileBinding(*prof, parent.binding); err == nil {
			binding = b
		}
	}
	if binding != launch.Binding {
		add(codeModelDrift, "launched on %s%s, would now run on %s%s; resume it on the model it was launched on (--model %s)", launch.Binding.String(), atURL(launch.Binding), binding.String(), atURL(binding), launch.Binding.String())
	}

	// Tools.
	pool, _ := o.childTools(parent, prof)
	if got := sortedCopy(pool); strings.Join(got, ",") != strings.Join(launch.Tools, ",") {
		add(codeToolsDrift, "launched with tools [%s], would now get [%s]; restore the profile's tools: line or the --max-depth %d it ran under", strings.Join(launch.Tools, ", "), strings.Join(got, ", "), launch.MaxDepth)
	}

	// Sandbox.
	boxRoot := parent.root // a worktree child's git state is confined another way
	if launch.Worktree != nil || parent.gitDir != "" {
		boxRoot = ""
	}
	box, err := o.sandboxFor(parent.label, parent.sessionID, pool, prof, boxRoot)
	if err != nil {
		add(codeSandboxDrift, "%v", err)
	} else if why := sandboxDrift(launch.Sandbox, box); why != "" {
		add(codeSandboxDrift, "%s", why)
	}
	plan.sandbox = box

	// Cwd and worktree.
	cwd, root := parent.cwd, parent.root
	notice := ""
	if launch.Worktree != nil {
		w := launch.Worktree
		rec := worktree.Record{RepoRoot: w.RepoRoot, Baseline: w.Baseline, Path: w.Path, Branch: w.Branch, CreationReflog: w.CreationReflog, Cwd: launch.Cwd}
		for _, p := range o.ws.Validate(ctx, rec) {
			add(session.Code(p.Code), "%s", p.Message)
		}
		plan.worktree = &rec
		cwd, root = launch.Cwd, w.Path
		notice = worktreeNotice(w.Path, w.Branch, w.Baseline, parent.cwd)
	} else if cwd != launch.Cwd {
		add(codeCwdDrift, "launched in %s, the parent now works in %s; run ink from %s (or pass --cwd)", launch.Cwd, cwd, launch.Cwd)
	}
	// A removed worktree's own problem already says what happened to the
	// directory, and that it cannot be put back.
	if fi, err := os.Stat(launch.Cwd); err != nil {
		if !hasProblem(problems, worktree.ProblemMissing) {
			add(codeCwdMissing, "the child's directory %s is gone; put it back to resume the child", launch.Cwd)
		}
	} else if !fi.IsDir() {
		add(codeCwdNotDirectory, "the child's directory %s is no longer a directory; put the directory back to resume the child", launch.Cwd)
	}

	// System prompt (date line normalised) and prompt files.
	body := ""
	if prof != nil {
		body = prof.Body
	}
	tools := pool
	if tools == nil {
		tools = launch.Tools
	}
	system := childSystem(parent.base, tools, body, notice)
	if session.SystemFingerprint(system) != launch.System.SHA256 {
		add(codeSystemDrift, "the assembled system prompt changed since launch (ink's instructions, the agents it advertises, the agent's text or the parent's prompt differ)")
	}
	for _, f := range launch.System.Files {
		if !agents.ContextUnchanged(f.Path, f.SHA256) {
			add(codePromptFilesDrift, "the project instructions %s changed or are gone since launch; restore them to resume, or start a new task that reads the new ones", f.Path)
		}
	}
	agentName := ""
	if launch.Agent != nil {
		agentName = launch.Agent.Name
	}
	plan.child = &agentRun{
		label: label, sessionID: h.ID, transcript: path, depth: launch.Depth,
		binding: launch.Binding, system: system, base: parent.base, files: parent.files, tools: tools, cwd: cwd, root: root, agent: agentName,
		thinking: plan.thinking, gitDir: parent.gitDir,
	}
	if plan.worktree != nil {
		plan.child.gitDir = plan.worktree.PrivateGitDir()
	}
	return plan, problems
}

// thinkingName is how a thinking level reads in a message.
func thinkingName(level string) string {
	if level == "" {
		return "none"
	}
	return fmt.Sprintf("%q", level)
}

func atURL(b model.Binding) string {
	if b.BaseURL == "" {
		return ""
	}
	return " at " + b.BaseURL
}

// parentRecorded reports whether the transcript at path holds a TaskRecord
// with launched=true for childID, on a task result or among the records a
// message collected (task_wait).
func (o *Orchestrator) parentRecorded(path, childID string) bool {
	tr, err := o.store.Open(path, true)
	if err != nil {
		return false
	}
	for _, m := range tr.Messages {
		for _, rec := range session.TaskRecordsOf(m) {
			if rec.ChildID == childID && rec.Launched {
				return true
			}
		}
	}
	return false
}

// hasProblem reports whether problems holds one with code.
func hasProblem(problems []Problem, code session.Code) bool {
	for _, p := range problems {
		if p.Code == code {
			return true
		}
	}
	return false
}
