package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/worktree"
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
			"default: the most recent session of this directory that does), on the model it was launched\n" +
			"on unless --model names another (a different model is refused as model-drift).\n" +
			"PROMPT - reads stdin. -v shows more on stderr: worker pids, each model turn and tool call.\n" +
			"When stdout closes early (`| head`), the child is cancelled and records how it stopped.",
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
			if parent != "" && targs.Resume == nil {
				return usageErr("--parent names the session that owns the child to resume; it goes with --resume ID")
			}
			// The child delegates in turn only with --max-depth 2 or more;
			// a one-shot task keeps no warm pool, but its child's worker
			// starts beside the rest of the set-up.
			pre := preflight{watchProfiles: g.maxDepth >= 2, firstWorker: targs.Resume == nil, check: func(ctx context.Context, set *agents.Set, cwd string, b model.Binding) error {
				return checkTaskInput(ctx, set, cwd, b, targs)
			}}
			var found *orchestrator.Resumed
			if targs.Resume != nil {
				pre.binding = func(ctx context.Context, home, cwd string) (model.Binding, error) {
					r, err := resumedChild(home, cwd, *targs.Resume, parent)
					if err != nil {
						return model.Binding{}, err
					}
					found = &r
					if f.Changed("model") || f.Changed("base-url") {
						return g.binding(ctx)
					}
					return recordedBinding(ctx, r.Child.Header)
				}
			}
			env, err := setup(cmd.Context(), g, pre)
			if err != nil {
				return err
			}
			defer env.close()
			survivePipeClose()
			ctx, stop := interruptible(context.Background(), env.stdoutGone, env.display.Note, env.orc.KillAll)
			defer stop()
			res, err := env.orc.Task(ctx, orchestrator.TaskOptions{Args: targs, Parent: parent, Found: found})
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
				if _, err := fmt.Fprintln(os.Stdout, res.Content); err != nil && res.ParentSession != "" {
					fmt.Fprintf(os.Stderr, "ink: stdout was closed before the result could be written (%v); read it with `%s sessions show %s`\n", unwrapPathError(err), selfCommand(), res.ParentSession)
				}
			}
			code := exitCode(res.Status)
			if code == exitOK && res.IsError {
				// Completed without an answer (a cap stopped it first): a
				// failure, said on stderr above.
				code = exitFailed
			}
			if code != exitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "run as the agent profile `NAME` (list them with: ink agents ls)")
	f.BoolVar(&wt, "worktree", false, "run in its own git worktree on branch ink/<id> (needs a git repository with a commit)")
	f.DurationVar(&timeout, "timeout", 0, "stop the child after this long (e.g. 90s, 10m)")
	f.StringVar(&resume, "resume", "", "continue the child `ID` in its own transcript, on its recorded model")
	f.StringVar(&parent, "parent", "", "the `SESSION` that owns the child to resume (default: the newest of this directory that does)")
	return uses(cmd, supervisorFlags...)
}

// checkTaskInput checks what `ink task` asks for against this directory
// before anything is written, by the supervisor's own rules
// (orchestrator.CheckTask), and says a refusal in the words of the flags:
// bad input is exit 2, git failing to answer is a failure. parent is the
// binding the child would inherit.
func checkTaskInput(ctx context.Context, set *agents.Set, cwd string, parent model.Binding, args orchestrator.TaskArgs) error {
	err := orchestrator.CheckTask(ctx, set, cwd, parent, args, os.Getenv)
	var in *orchestrator.InputError
	if !errors.As(err, &in) {
		return err
	}
	why := "--worktree"
	if in.Why != "" {
		why = in.Why
	}
	switch {
	case in.Arg == orchestrator.ArgAgent:
		return usageErr("--agent: %v", in.Err)
	case errors.Is(err, worktree.ErrNotRepository):
		return usageErr("%s: %s is not inside a git repository; run ink from a git repository (or pass --cwd), or pass --worktree=false", why, cwd)
	case errors.Is(err, orchestrator.ErrBadInput):
		return usageErr("%s: %v", why, in.Err)
	default:
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%s: %v", why, in.Err)}
	}
}
