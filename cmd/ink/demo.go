package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/console"
)

func newDemoCmd(g *globals) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Offline walk-through: a main agent and three child processes on a scratch repository (no API key)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			display := console.NewDisplay(os.Stderr, isTerminal(os.Stderr))
			ctx, stop := interruptible(context.Background(), func() {})
			defer stop()
			err := console.Demo(ctx, console.DemoOptions{Keep: keep, Out: os.Stdout, Sink: display.Handle, Environ: os.Environ()})
			display.Close()
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the scratch directory to look around afterwards")
	return cmd
}
