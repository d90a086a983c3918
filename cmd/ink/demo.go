package main

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/console"
	"github.com/inkdev/ink/event"
)

func newDemoCmd(g *globals) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Offline walk-through: fan-out, a worktree fix, and a killed child resumed, on a scratch repository (no API key)",
		Long: "ink demo builds a scratch git repository in a temporary directory and plays three scenes on\n" +
			"ink's offline script model, every agent its own process: a main agent runs two read-only\n" +
			"children and one that fixes a bug in its own worktree; then a child is killed (SIGKILL) in the\n" +
			"middle of a command and resumed, its transcript's cut-off tail repaired. The directory is\n" +
			"removed afterwards unless --keep. --json prints the events as `ink run --json` does, and the\n" +
			"report on stderr. -v shows more progress. Ctrl-C stops it (exit 130).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			display := console.NewDisplay(os.Stderr, !g.json && isTerminal(os.Stderr))
			display.SetVerbose(g.verbose)
			sink, out := display.Handle, os.Stdout
			gone := make(chan struct{})
			if g.json {
				var once sync.Once
				jl := console.JSONLines(os.Stdout, func(error) { once.Do(func() { close(gone) }) })
				sink, out = func(e event.Envelope) { jl(e); display.Handle(e) }, os.Stderr
			}
			survivePipeClose()
			kill := make(chan struct{})
			var killOnce sync.Once
			ctx, stop := interruptible(context.Background(), gone, display.Note, func() { killOnce.Do(func() { close(kill) }) })
			defer stop()
			err := console.Demo(ctx, console.DemoOptions{
				Keep: keep, Out: out, Sink: sink, Environ: os.Environ(), Command: selfCommand(), Kill: kill,
			})
			display.Close()
			switch {
			case errors.Is(err, console.ErrDemoInterrupted):
				return &exitError{code: exitInterrupted, msg: "demo interrupted"}
			case err != nil:
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the scratch directory to look around afterwards")
	return uses(cmd, "json", "verbose")
}
