package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

func newRunCmd(g *globals) *cobra.Command {
	return uses(&cobra.Command{
		Use:   "run [PROMPT]",
		Short: "Run the main agent headless; its final answer goes to stdout",
		Long: "Run the main agent headless. It may delegate to child agents with its task tool;\n" +
			"every agent runs as its own process. The final answer goes to stdout, progress to stderr.\n" +
			"PROMPT - reads the prompt from stdin. --session ID continues an earlier main session.\n" +
			"-v shows more on stderr: worker pids, each model turn and tool call, transcripts, logs.\n" +
			"When stdout closes early (`| head`), the agents are cancelled and record how they stopped.",
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			// The main agent delegates only with --max-depth 1 or more.
			delegates := g.maxDepth >= 1
			pre := preflight{watchProfiles: delegates, warmWorkers: delegates, firstWorker: true}
			if g.session != "" {
				pre.check = func(_ context.Context, _ *agents.Set, cwd string, _ model.Binding) error {
					return checkMainSession(g.session, cwd)
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
			res, err := env.orc.Run(ctx, orchestrator.RunOptions{Prompt: prompt, SessionID: g.session})
			env.display.Close()
			if err != nil {
				code := exitUsage
				if refusal := (*orchestrator.SandboxRefusal)(nil); errors.As(err, &refusal) {
					code = exitRefused
				}
				return &exitError{code: code, msg: err.Error()}
			}
			if !g.json && res.Text != "" {
				if _, err := fmt.Fprintln(os.Stdout, res.Text); err != nil {
					fmt.Fprintf(os.Stderr, "ink: stdout was closed before the answer could be written (%v); read it with `%s sessions show %s`\n", unwrapPathError(err), selfCommand(), res.SessionID)
				}
			}
			if res.Status != orchestrator.StatusCompleted {
				return &exitError{code: exitCode(res.Status), msg: fmt.Sprintf("the main agent ended %s: %s%s", res.Status, res.Reason, continueHint(res))}
			}
			return nil
		},
	}, append(supervisorFlags, "session")...)
}

// checkMainSession checks that --session names a main session ink can
// continue, before anything is written: an id, of a session that exists,
// and not a child's (which `ink task --resume` continues).
func checkMainSession(id, cwd string) error {
	home, err := inkHome()
	if err != nil {
		return err
	}
	if !session.ValidID(id) {
		return usageErr("--session %q is not a session id (ids use only a-z, 0-9 and '-'); list sessions with `%s sessions ls`", id, selfCommand())
	}
	if kids, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "children", id+".jsonl")); len(kids) > 0 {
		return usageErr("%s is a child session, not a main session; continue it with `%s task --resume %s \"…\"`", id, selfCommand(), id)
	}
	if mains, _ := filepath.Glob(filepath.Join(home, "sessions", "*", id+".jsonl")); len(mains) == 0 {
		return usageErr("--session %s: no session %s for %s; list sessions with `%s sessions ls`", id, id, cwd, selfCommand())
	}
	return nil
}

// continueHint says how to continue the main session of res, or, when it
// holds nothing to continue (the main agent never got to write), that a new
// run is the way.
func continueHint(res orchestrator.RunResult) string {
	if res.SessionID == "" {
		return ""
	}
	if tr, err := session.OpenLean(res.Transcript); err != nil || len(tr.Messages) == 0 {
		return fmt.Sprintf(" (nothing was recorded in session %s; run the prompt again)", res.SessionID)
	}
	return fmt.Sprintf(" (session %s; continue it with `%s run --session %s \"…\"`)", res.SessionID, selfCommand(), res.SessionID)
}

// exitCode maps an outcome status to ink's exit code (see main.go).
func exitCode(status orchestrator.Status) int {
	switch status {
	case orchestrator.StatusCompleted:
		return exitOK
	case orchestrator.StatusTimeout:
		return exitTimeout
	case orchestrator.StatusAborted, orchestrator.StatusInterrupted:
		return exitInterrupted
	case orchestrator.StatusRefused, orchestrator.StatusRejected:
		return exitRefused
	default:
		return exitFailed
	}
}
