package orchestrator

import (
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/worktree"
)

// mainSystem assembles the main agent's system prompt, ending with the
// project's instruction files. The date line has the fixed form
// "- Date: YYYY-MM-DD" so that transcripts' fingerprints can ignore it.
func mainSystem(cwd string, now time.Time, tools []string, set *agents.Set, files ...contextFile) string {
	var b strings.Builder
	b.WriteString("You are ink, a coding agent working in the user's repository from a terminal.\n")
	b.WriteString("Work carefully, read before you edit, and finish with a short, plain report of what you did and found.\n\n")
	b.WriteString("# Environment\n")
	fmt.Fprintf(&b, "- Working directory: %s\n", cwd)
	fmt.Fprintf(&b, "- Date: %s\n", now.Format("2006-01-02"))
	fmt.Fprintf(&b, "- Tools: %s\n", strings.Join(tools, ", "))
	b.WriteString("\n# Tools\n")
	b.WriteString("Calls to read, grep, find, ls and task in one message run in parallel; edit, write and bash run one at a time.\n")
	b.WriteString("Paths are relative to the working directory; tools refuse paths outside it.\n")
	if contains(tools, "task") {
		b.WriteString("\n# Delegation\n")
		b.WriteString("The task tool runs a child agent as its own process with a clean context and returns its final answer.\n")
		b.WriteString("Use several task calls in one message for independent investigations; give each a self-contained prompt.\n")
		b.WriteString("For independent work that takes long, start children with background: true, keep working, and collect their results with task_wait before you finish.\n")
		b.WriteString("Pass worktree: true for risky edits: the child then works in its own git worktree and branch.\n")
		b.WriteString("A child that failed, timed out or was interrupted can be continued with task({resume: \"<child id>\", prompt: \"...\"}).\n")
		if set != nil {
			b.WriteString("\n")
			b.WriteString(agents.Advertise(set))
			b.WriteString("\n")
		}
	}
	b.WriteString(renderContext(files))
	return b.String()
}

// childSystem is the parent's system prompt plus the subagent suffix, the
// worktree notice and the profile body (docs/architecture.md, "The task tool").
func childSystem(parent string, profileBody string, worktreeNotice string) string {
	var b strings.Builder
	b.WriteString(parent)
	b.WriteString("\n# Subagent mode\n")
	b.WriteString("You are a one-shot subagent launched by another agent through the task tool. ")
	b.WriteString("Your final message is returned verbatim to that agent as the task result, so make it complete and self-contained. ")
	b.WriteString("Do not ask questions: nobody can answer them; make reasonable assumptions and state them. ")
	b.WriteString("You have no task tool unless it is listed in your tools.\n")
	if worktreeNotice != "" {
		b.WriteString("\n# Worktree\n")
		b.WriteString(worktreeNotice)
		b.WriteString("\n")
	}
	if strings.TrimSpace(profileBody) != "" {
		b.WriteString("\n# Agent profile\n")
		b.WriteString(strings.TrimSpace(profileBody))
		b.WriteString("\n")
	}
	return b.String()
}

// worktreeNotice tells a worktree child where it works. Launch and resume
// must build the same text, or a resume would see system drift.
func worktreeNotice(path, branch, baseline, parentCwd string) string {
	return fmt.Sprintf("You work in your own git worktree at %s, on branch %s, created from the parent's HEAD (%s). "+
		"The parent's uncommitted changes are not there. Paths you were given refer to the parent checkout %s; translate them to the worktree. "+
		"Commit your work on your branch before you finish; the user will review and merge it.", path, branch, worktree.ShortSHA(baseline), parentCwd)
}
