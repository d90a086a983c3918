package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/orchestrator"
)

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print ink's version (with -v: the worker protocol and configured providers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Printf("ink %s (worker protocol %d, %s %s/%s)\n", orchestrator.InkVersion, orchestrator.ProtocolVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if g.verbose {
				printProviders(cmd)
			}
			return nil
		},
	}
}

func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Show which model providers are configured (never printing secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printProviders(cmd)
			return nil
		},
	}
}

func printProviders(cmd *cobra.Command) {
	for _, st := range providers.Status(cmd.Context(), os.Getenv) {
		mark := "-"
		if st.Configured {
			mark = "✓"
		}
		fmt.Printf("%s %-11s %s\n", mark, st.Name, st.How)
	}
}
