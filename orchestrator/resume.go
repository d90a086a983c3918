package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// Problem is one reason a resume is refused (DESIGN.md §5 step 2).
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

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

// resume continues a settled child of parent in its own transcript.
func (o *Orchestrator) resume(ctx context.Context, parent *agentRun, callID string, args TaskArgs, label string) taskAnswer {
	childID := *args.Resume
	refuse := func(problems ...Problem) taskAnswer {
		ans := o.reject(parent, callID, args, resumeRefusal(childID, problems))
		return ans
	}
	info, err := session.FindChild(parent.transcript, parent.sessionID, childID)
	if err != nil {
		var le *session.LookupError
		if errors.As(err, &le) {
			return refuse(Problem{Code: le.Code, Message: strings.TrimPrefix(le.Message, fmt.Sprintf("cannot resume child %q: ", childID))})
		}
		return refuse(Problem{Code: "malformed", Message: err.Error()})
	}
	plan, problems := o.validateResume(ctx, parent, info.Path, label)
	if len(problems) > 0 {
		return refuse(problems...)
	}
	hdr, _ := json.Marshal(plan.header)
	spec := ipc.AttemptSpec{
		InkHome: o.cfg.InkHome, Transcript: info.Path, ExpectHeader: hdr, Repair: true,
		AttemptID: session.NewID(), SessionID: childID, Agent: plan.child.agent, Label: plan.child.label,
		Binding: plan.child.binding, System: plan.child.system, Tools: plan.child.tools,
		Cwd: plan.child.cwd, Root: plan.child.root, Prompt: args.Prompt, Depth: plan.child.depth,
		HeartbeatInterval: o.cfg.HeartbeatInterval, Thinking: plan.thinking,
	}
	return o.runChild(ctx, parent, plan.child, callID, args, spec, o.timeoutFor(args, plan.profile), plan.worktree, true)
}

// resumePlan is a validated resume: the child as it will run again.
type resumePlan struct {
	header   session.Header
	child    *agentRun
	profile  *agents.Profile
	worktree *worktree.Record
	thinking string
}

// validateResume rebuilds the child's launch from today's state and
// compares it with its launch record, collecting every difference.
func (o *Orchestrator) validateResume(ctx context.Context, parent *agentRun, path, label string) (resumePlan, []Problem) {
	var problems []Problem
	add := func(code, format string, a ...any) {
		problems = append(problems, Problem{Code: code, Message: fmt.Sprintf(format, a...)})
	}
	tr, err := session.Open(path)
	if err != nil {
		return resumePlan{}, []Problem{{Code: "malformed", Message: err.Error()}}
	}
	h := tr.Header
	launch := h.Launch
	if launch == nil {
		return resumePlan{}, []Problem{{Code: "missing-launch", Message: fmt.Sprintf("%s has no launch record", path)}}
	}
	plan := resumePlan{header: h}

	// Is it running? A held lease means another worker is writing it.
	if st, err := lease.Probe(path); err == nil && st.State != lease.Free {
		who := ""
		if st.Meta != nil {
			who = fmt.Sprintf(" (pid %d holds its lease)", st.Meta.Pid)
		}
		add("still-running", "the child is still running%s; wait for it to finish, or see `ink leases ls`", who)
	}
	if len(tr.Messages) == 0 {
		add("empty-transcript", "the transcript holds no messages; nothing to continue")
	}
	if scan := session.ScanPairs(tr.Messages); scan.State == session.Refused {
		// Only a crash tail is repaired; anything else is left as it is.
		add(session.CodeMalformed, "%s cannot be continued: %s", path, scan.Reason)
	}
	if _, ended := tr.LastAttemptEnd(); !ended && !o.parentRecorded(parent, h.ID) {
		add("no-record", "no settled record of this child: neither the parent's task result nor the child's own attempt end was written")
	}
	if launch.InkVersion != InkVersion {
		add("version-drift", "launched by ink %s, this is ink %s; resume it with ink %s", launch.InkVersion, InkVersion, launch.InkVersion)
	}

	// Agent.
	var prof *agents.Profile
	if launch.Agent != nil {
		p, err := o.profile(launch.Agent.Name)
		switch {
		case err != nil:
			add("agent-missing", "agent %q is no longer defined (was %s); restore that file to resume it", launch.Agent.Name, launch.Agent.Source)
		case p.RoleSHA256 != launch.Agent.RoleSHA256:
			add("agent-drift", "agent %q changed since launch (%s); restore its earlier text to resume it", launch.Agent.Name, p.Source)
			prof = &p
		default:
			prof = &p
		}
	}
	plan.profile = prof
	if prof != nil {
		plan.thinking = prof.Thinking
	}

	// Model.
	binding := parent.binding
	if prof != nil {
		if b, _, err := profileBinding(o.profileSet(), *prof, parent.binding); err == nil {
			binding = b
		}
	}
	if binding != launch.Binding {
		add("model-drift", "launched on %s%s, would now run on %s%s; resume it on the model it was launched on (--model %s)", launch.Binding.String(), atURL(launch.Binding), binding.String(), atURL(binding), launch.Binding.String())
	}

	// Tools.
	pool, _ := o.childTools(parent, prof)
	if got := sortedCopy(pool); strings.Join(got, ",") != strings.Join(launch.Tools, ",") {
		add("tools-drift", "launched with tools [%s], would now get [%s]; restore the profile's tools: line or the --max-depth %d it ran under", strings.Join(launch.Tools, ", "), strings.Join(got, ", "), launch.MaxDepth)
	}

	// Cwd and worktree.
	cwd, root := parent.cwd, parent.root
	notice := ""
	if launch.Worktree != nil {
		w := launch.Worktree
		rec := worktree.Record{RepoRoot: w.RepoRoot, Baseline: w.Baseline, Path: w.Path, Branch: w.Branch, CreationReflog: w.CreationReflog, Cwd: launch.Cwd}
		for _, p := range worktree.Validate(ctx, rec) {
			add(p.Code, "%s", p.Message)
		}
		plan.worktree = &rec
		cwd, root = launch.Cwd, w.Path
		notice = worktreeNotice(w.Path, w.Branch, w.Baseline, parent.cwd)
	} else if cwd != launch.Cwd {
		add("cwd-drift", "launched in %s, the parent now works in %s; run ink from %s (or pass --cwd)", launch.Cwd, cwd, launch.Cwd)
	}
	if fi, err := os.Stat(launch.Cwd); err != nil {
		add("cwd-missing", "the child's directory %s is gone; put it back to resume the child", launch.Cwd)
	} else if !fi.IsDir() {
		add("cwd-not-directory", "the child's directory %s is no longer a directory; put the directory back to resume the child", launch.Cwd)
	}

	// System prompt (date line normalised) and prompt files.
	body := ""
	if prof != nil {
		body = prof.Body
	}
	system := childSystem(parent.system, body, notice)
	if session.SystemFingerprint(system) != launch.System.SHA256 {
		add("system-drift", "the assembled system prompt changed since launch (ink's instructions, the agents it advertises, the agent's text or the parent's prompt differ)")
	}
	for _, f := range launch.System.Files {
		data, err := os.ReadFile(f.Path)
		if err != nil || sha256Hex(data) != f.SHA256 {
			add("prompt-files-drift", "the project instructions %s changed or are gone since launch; restore them to resume, or start a new task that reads the new ones", f.Path)
		}
	}
	agentName := ""
	if launch.Agent != nil {
		agentName = launch.Agent.Name
	}
	tools := pool
	if tools == nil {
		tools = launch.Tools
	}
	plan.child = &agentRun{
		label: label, sessionID: h.ID, transcript: path, depth: launch.Depth,
		binding: launch.Binding, system: system, files: parent.files, tools: tools, cwd: cwd, root: root, agent: agentName,
	}
	return plan, problems
}

func atURL(b model.Binding) string {
	if b.BaseURL == "" {
		return ""
	}
	return " at " + b.BaseURL
}

// parentRecorded reports whether the parent's transcript holds a TaskRecord
// with launched=true for childID.
func (o *Orchestrator) parentRecorded(parent *agentRun, childID string) bool {
	tr, err := session.Open(parent.transcript)
	if err != nil {
		return false
	}
	for _, m := range tr.Messages {
		if len(m.TaskRecord) == 0 {
			continue
		}
		rec, err := session.ParseTaskRecord(m.TaskRecord)
		if err == nil && rec.ChildID == childID && rec.Launched {
			return true
		}
	}
	return false
}

// lifetimeLine sums every attempt recorded in a child's transcript.
func (o *Orchestrator) lifetimeLine(path string) []string {
	tr, err := session.Open(path)
	if err != nil {
		return nil
	}
	var total model.Usage
	attempts, ended := 0, 0
	for _, a := range tr.Attempts() {
		switch a.Phase {
		case "start":
			attempts++
		case "end":
			ended++
			if a.Usage == nil {
				total.Incomplete = true
			} else {
				total = total.Add(*a.Usage)
			}
		}
	}
	if ended < attempts {
		total.Incomplete = true
	}
	ge := ""
	if total.Incomplete {
		ge = "≥"
	}
	return []string{fmt.Sprintf("(child lifetime: %d attempts, %s%s in / %s%s out)", attempts, ge, CompactTokens(total.Input), ge, CompactTokens(total.Output))}
}

// childAnswers answers the task calls of a main transcript left without a
// result because its writer died: from the child's own transcript when the
// child's last attempt ended, else with the outcome-unknown text naming the
// child so the model can resume it. Calls whose child cannot be found are
// left to the worker's generic repair.
func childAnswers(tr *session.Transcript) []ipc.Answer {
	answered := map[string]bool{}
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			answered[r.ToolCallID] = true
		}
	}
	children, _ := session.ListChildren(tr.Path)
	// Children already accounted for by a TaskRecord, and how many of
	// their attempts the records account for.
	used := map[string]bool{}
	recorded := map[string]int{}
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			if rec, err := session.ParseTaskRecord(m.TaskRecord); err == nil && rec.ChildID != "" {
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
			p = firstPrompt(path)
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
			var child *session.ChildSummary
			for i := range children {
				ch := &children[i]
				if used[ch.ID] && (args.Resume == nil || *args.Resume != ch.ID) {
					continue
				}
				if args.Resume != nil && *args.Resume == ch.ID {
					child = ch
					break
				}
				if args.Resume == nil && promptOf(ch.Path) == args.Prompt {
					child = ch
					break
				}
			}
			if child == nil {
				continue
			}
			used[child.ID] = true
			out = append(out, answerFromChild(tr, c, args, child.Path, recorded[child.ID]))
			recorded[child.ID]++
		}
	}
	return out
}

// firstPrompt is the text of a transcript's first user message.
func firstPrompt(path string) string {
	tr, err := session.Open(path)
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
// attempt's answer is never passed off as this call's.
func answerFromChild(parent *session.Transcript, call model.ToolCall, args TaskArgs, childPath string, prior int) ipc.Answer {
	ctr, err := session.Open(childPath)
	result := func(content string, isErr bool, rec *session.TaskRecord) ipc.Answer {
		a := ipc.Answer{Message: model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: call.ID, ToolName: "task", Content: content, IsError: isErr}}}}
		if rec != nil {
			a.TaskRecord, _ = json.Marshal(rec)
		}
		return a
	}
	if err != nil {
		return result(fmt.Sprintf("interrupted before a result was recorded — the outcome is unknown; check before relying on it. The child's transcript %s cannot be read: %v", childPath, err), true, nil)
	}
	id := ctr.Header.ID
	end, ended := attemptEnd(ctr, prior)
	if !ended || end.Status == "" {
		return result(fmt.Sprintf("interrupted before a result was recorded — the outcome is unknown; check before relying on it.\nchild session id: %s — continue it with task({resume: %q, prompt: \"…\"})\nwork is preserved in the full transcript:\n  %s", id, id, childPath), true, nil)
	}
	u := usageOf(end.Usage)
	content, isErr := composeResult(resultInput{
		Status: end.Status, Reason: end.Reason, Text: end.FinalText, Turns: end.Turns, Usage: u,
		Timeout: "its timeout", ChildID: id, Transcript: childPath, Prompt: args.Prompt,
	})
	content = "[task] recovered from the child's own transcript: the parent stopped before this result was recorded.\n" + content
	rec := session.TaskRecord{
		Version: 1, AttemptID: end.AttemptID, TaskToolCallID: call.ID, ParentSessionID: parent.Header.ID, ChildID: id,
		Launched: true, Status: end.Status, Reason: clip(end.Reason, 300), Turns: end.Turns,
		TextPresent: strings.TrimSpace(end.FinalText) != "", Usage: &u, Cwd: ctr.Header.Cwd,
		Transcript: &session.TranscriptRef{Present: true, Path: childPath},
	}
	if l := ctr.Header.Launch; l != nil {
		b := l.Binding
		rec.Binding = &b
		rec.Tools = l.Tools
		if l.Agent != nil {
			rec.Agent = l.Agent.Name
		}
	}
	return result(content, isErr, &rec)
}

// attemptEnd returns the end entry of the attempt that started after the
// first prior attempts of tr, if it started and ended.
func attemptEnd(tr *session.Transcript, prior int) (session.AttemptEntry, bool) {
	started, target := 0, ""
	for _, a := range tr.Attempts() {
		switch {
		case a.Phase == session.PhaseStart && target == "":
			if started == prior {
				target = a.AttemptID
			}
			started++
		case a.Phase == session.PhaseEnd && target != "" && a.AttemptID == target:
			return a, true
		}
	}
	return session.AttemptEntry{}, false
}
