package orchestrator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/worktree"
)

// mainSystem assembles the main agent's system prompt, ending with the
// project's instruction files. The date line has the fixed form
// "- Date: YYYY-MM-DD" so that transcripts' fingerprints can ignore it.
func mainSystem(cwd string, now time.Time, tools []string, set *agents.Set, files ...agents.ContextFile) string {
	var b strings.Builder
	b.WriteString("You are ink, a coding agent working in the user's repository from a terminal.\n")
	b.WriteString("Work carefully, read before you edit, and finish with a short, plain report of what you did and found.\n\n")
	b.WriteString("# Environment\n")
	fmt.Fprintf(&b, "- Working directory: %s\n", cwd)
	fmt.Fprintf(&b, "- Date: %s\n", now.Format("2006-01-02"))
	fmt.Fprintf(&b, "- Tools: %s\n", strings.Join(tools, ", "))
	b.WriteString("\n# Tools\n")
	if line := concurrencyLine(tools); line != "" {
		b.WriteString(line)
	}
	b.WriteString("Paths are relative to the working directory; tools refuse paths outside it.\n")
	if slices.Contains(tools, "task") {
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

// concurrencyLine says which of tools run in parallel when called in one
// message and which run one at a time, naming only tools the agent has.
func concurrencyLine(tools []string) string {
	var parallel, serial []string
	for _, t := range []string{"read", "grep", "find", "ls", "task"} {
		if slices.Contains(tools, t) {
			parallel = append(parallel, t)
		}
	}
	for _, t := range []string{"edit", "write", "bash"} {
		if slices.Contains(tools, t) {
			serial = append(serial, t)
		}
	}
	var parts []string
	if len(parallel) > 0 {
		parts = append(parts, fmt.Sprintf("calls to %s in one message run in parallel", andList(parallel)))
	}
	if len(serial) > 0 {
		parts = append(parts, fmt.Sprintf("%s run one at a time", andList(serial)))
	}
	if len(parts) == 0 {
		return ""
	}
	line := strings.Join(parts, "; ")
	return strings.ToUpper(line[:1]) + line[1:] + ".\n"
}

// andList joins words as "a, b and c".
func andList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// promptBase is what an agent's system prompt is assembled from besides
// its tools: the directory and date it names, the agents it may advertise
// and the project's instruction files. A child's prompt is built from its
// parent's base with the child's own tools, so that it describes what the
// child has: no delegation section, agent list or task tool unless the
// child may delegate.
type promptBase struct {
	cwd   string
	date  time.Time
	set   *agents.Set
	files []agents.ContextFile
}

// system is the system prompt of a main agent with tools.
func (p promptBase) system(tools []string) string {
	return mainSystem(p.cwd, p.date, tools, p.set, p.files...)
}

// childSystem is the system prompt of a child with tools, built on its
// parent's base: the base prompt for those tools plus the subagent suffix,
// the worktree notice and the profile body (docs/architecture.md, "The
// task tool").
func childSystem(base promptBase, tools []string, profileBody string, worktreeNotice string) string {
	var b strings.Builder
	b.WriteString(base.system(tools))
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
