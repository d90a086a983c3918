package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/orchestrator"
)

func newRunCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "run [PROMPT]",
		Short: "Run the main agent headless; its final answer goes to stdout",
		Long: "Run the main agent headless. It may delegate to child agents with its task tool;\n" +
			"every agent runs as its own process. The final answer goes to stdout, progress to stderr.\n" +
			"PROMPT - reads the prompt from stdin. --session ID continues an earlier main session.",
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			// The main agent delegates only with --max-depth 1 or more.
			delegates := g.maxDepth >= 1
			env, err := setup(cmd.Context(), g, lifetime{watchProfiles: delegates, warmWorkers: delegates})
			if err != nil {
				return err
			}
			defer env.close()
			ctx, stop := interruptible(context.Background(), env.orc.KillAll)
			defer stop()
			res, err := env.orc.Run(ctx, orchestrator.RunOptions{Prompt: prompt, SessionID: g.session})
			env.display.Close()
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			if !g.json && res.Text != "" {
				fmt.Fprintln(os.Stdout, res.Text)
			}
			if res.Status != orchestrator.StatusCompleted {
				msg := fmt.Sprintf("the main agent ended %s: %s (session %s; continue it with `ink run --session %s \"…\"`)", res.Status, res.Reason, res.SessionID, res.SessionID)
				return &exitError{code: exitCode(res.Status), msg: msg}
			}
			return nil
		},
	}
}

// exitCode maps an outcome status to the exit codes of DESIGN.md §10.
func exitCode(status string) int {
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
