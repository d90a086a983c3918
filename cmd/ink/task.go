package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/orchestrator"
)

func newTaskCmd(g *globals) *cobra.Command {
	var (
		agent   string
		wt      bool
		timeout time.Duration
		resume  string
		parent  string
	)
	cmd := &cobra.Command{
		Use:   "task [PROMPT]",
		Short: "Run one child agent from the shell (no main agent); its result goes to stdout",
		Long: "Run one child agent, as the task tool would, with no main agent. Its result goes to stdout.\n" +
			"--resume ID continues a child in its own transcript (--parent names the session that owns it;\n" +
			"default: the most recent session of this directory that does). PROMPT - reads stdin.",
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			raw := map[string]any{"prompt": prompt}
			f := cmd.Flags()
			if f.Changed("agent") {
				raw["agent"] = agent
			}
			if f.Changed("worktree") {
				raw["worktree"] = wt
			}
			if f.Changed("timeout") {
				if timeout < time.Second {
					return usageErr("--timeout must be at least 1s, got %s", timeout)
				}
				raw["timeoutMs"] = timeout.Milliseconds()
			}
			if f.Changed("resume") {
				raw["resume"] = resume
			}
			data, _ := json.Marshal(raw)
			targs, err := orchestrator.ParseTaskArgs(data)
			if err != nil {
				return usageErr("%v", err)
			}
			// The child delegates in turn only with --max-depth 2 or more;
			// a one-shot task starts no worker ahead.
			env, err := setup(cmd.Context(), g, lifetime{watchProfiles: g.maxDepth >= 2})
			if err != nil {
				return err
			}
			defer env.close()
			ctx, stop := interruptible(context.Background(), env.orc.KillAll)
			defer stop()
			res, err := env.orc.Task(ctx, orchestrator.TaskOptions{Args: targs, Parent: parent})
			env.display.Close()
			if err != nil {
				if errors.Is(err, orchestrator.ErrBadInput) {
					return usageErr("%v", err)
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			// A failure or refusal is said on stderr with --json too, so
			// that no non-zero exit goes without a message.
			switch {
			case res.IsError:
				fmt.Fprintln(os.Stderr, res.Content)
			case !g.json:
				fmt.Fprintln(os.Stdout, res.Content)
			}
			if code := exitCode(res.Status); code != exitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent profile to run as (see `ink agents ls`)")
	f.BoolVar(&wt, "worktree", false, "run in its own git worktree on branch ink/<id>")
	f.DurationVar(&timeout, "timeout", 0, "stop the child after this long (e.g. 90s, 10m)")
	f.StringVar(&resume, "resume", "", "continue this child id in its own transcript")
	f.StringVar(&parent, "parent", "", "session that owns the child to resume")
	return cmd
}
