package console

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// Scene 3 of the demo: what ink is for after a crash.

const (
	// demoLongTask is the prompt of the child scene 3 kills; the demo
	// script answers it with a bash command that takes a while.
	demoLongTask = "Run the calc test suite and report what it says."
	// demoResumePrompt continues it.
	demoResumePrompt = "You were cut short. Check what the interrupted command did, then finish the task."
)

// killAndResume plays scene 3: `ink task` starts a child, the demo kills
// its worker with SIGKILL while its bash command runs (as the OOM killer
// or a crash would), and `ink task --resume` continues it in the same
// transcript, whose cut-off tail the resume repairs.
func (d *demo) killAndResume(ctx context.Context) error {
	fmt.Fprintf(d.out, "\nscene 3: a child is killed in the middle of a command, then resumed\n\n")
	fmt.Fprintf(d.out, "  $ %s task %q\n", d.opts.Command, demoLongTask)
	var (
		mu     sync.Mutex
		pid    int
		victim string
		killed int
	)
	// Kill the child's worker once its bash command has started.
	watch := func(e event.Envelope) {
		mu.Lock()
		defer mu.Unlock()
		switch b := e.Body.(type) {
		case event.TaskStart:
			if victim == "" {
				pid, victim = b.Pid, e.Agent
			}
		case event.ToolStart:
			if e.Agent == victim && b.Name == "bash" && killed == 0 && pid > 0 {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed = pid
				}
			}
		}
	}
	o, err := d.orchestrator(watch)
	if err != nil {
		return err
	}
	first, err := o.Task(ctx, orchestrator.TaskOptions{Args: orchestrator.TaskArgs{Prompt: demoLongTask}})
	if err != nil {
		return err
	}
	mu.Lock()
	k := killed
	mu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	child := first.Record.ChildID
	d.resumedChild = child
	if k == 0 || child == "" {
		return fmt.Errorf("demo: the child of scene 3 ended %s before the demo could kill it: %s", first.Status, firstLine(first.Record.Reason))
	}
	fmt.Fprintf(d.out, "  the demo killed its worker (pid %d) with SIGKILL while its bash command ran\n", k)
	fmt.Fprintf(d.out, "  → %s: %s\n\n", first.Status, firstLine(first.Record.Reason))

	fmt.Fprintf(d.out, "  $ %s task --resume %s %q\n", d.opts.Command, child, demoResumePrompt)
	o, err = d.orchestrator(nil)
	if err != nil {
		return err
	}
	second, err := o.Task(ctx, orchestrator.TaskOptions{Args: orchestrator.TaskArgs{Prompt: demoResumePrompt, Resume: &child}})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	fmt.Fprintf(d.out, "  → %s, in the same transcript:\n  %s\n\n", second.Status, first.Record.Transcript.Path)
	if err := d.showRepairedTail(first.Record.Transcript.Path); err != nil {
		return err
	}
	if second.Status != orchestrator.StatusCompleted {
		return fmt.Errorf("demo: the resumed child ended %s: %s", second.Status, firstLine(second.Record.Reason))
	}
	return nil
}

// showRepairedTail prints the transcript from the call the kill cut off:
// the result the resume wrote for it, and what the child did next.
func (d *demo) showRepairedTail(path string) error {
	tr, err := session.Open(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	msgs := tr.Messages
	start := -1
	for i, m := range msgs {
		for _, r := range m.Results {
			if r.Content == session.UnknownOutcomeText && i > 0 {
				start = i - 1
			}
		}
	}
	if start < 0 {
		return fmt.Errorf("demo: the resumed transcript %s has no repaired call", path)
	}
	fmt.Fprintf(d.out, "  the child's transcript from the interrupted call on:\n")
	for _, m := range msgs[start:] {
		for _, line := range transcriptLines(m) {
			fmt.Fprintf(d.out, "    %s\n", line)
		}
	}
	fmt.Fprintf(d.out, "  The interrupted bash call was not run again: the resume recorded that its outcome\n  is unknown, and the child checked before going on.\n")
	return nil
}

// transcriptLines renders one message on short lines, as people skim a
// transcript.
func transcriptLines(m model.Message) []string {
	var out []string
	switch m.Role {
	case model.RoleUser:
		out = append(out, "user: "+orchestrator.FirstRunes(oneLine(m.Text()), 90))
	case model.RoleAssistant:
		if t := oneLine(m.Text()); t != "" {
			out = append(out, "assistant: "+orchestrator.FirstRunes(t, 90))
		}
		for _, c := range m.ToolCalls {
			out = append(out, fmt.Sprintf("assistant → %s %s", c.Name, argSummary(c.Args)))
		}
	case model.RoleToolResult:
		for _, r := range m.Results {
			tag, note := "ok", ""
			if r.IsError {
				tag = "error"
			}
			if r.Content == session.UnknownOutcomeText {
				note = "   ← written by the resume"
			}
			out = append(out, fmt.Sprintf("result ← %s (%s): %s%s", r.ToolName, tag, orchestrator.FirstRunes(oneLine(r.Content), 90), note))
		}
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
