package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"strings"

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
				fmt.Println()
				printProviders(cmd.Context(), os.Stdout, os.Getenv)
			}
			return nil
		},
	}
}

func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Show which model providers are configured (never printing secrets)",
		Long: "Show every model provider ink knows, whether it is ready to use and why (which key\n" +
			"variable is set, whether a local server answers), the endpoint it would call, and the\n" +
			"model ink picks when --model is absent. Keys are never printed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printProviders(cmd.Context(), os.Stdout, os.Getenv)
			return nil
		},
	}
}

// printProviders writes the provider table of `ink doctor` and `ink version
// -v`: one row per provider with its endpoint, then the default choice. It
// names key variables, never their values.
func printProviders(ctx context.Context, w io.Writer, env func(string) string) {
	if ctx == nil {
		ctx = context.Background()
	}
	fmt.Fprintln(w, "model providers (✓ ready to use; keys are never shown):")
	for _, st := range providers.Status(ctx, env) {
		mark := "-"
		if st.Configured {
			mark = "✓"
		}
		fmt.Fprintf(w, "%s %-11s %s\n", mark, st.Name, st.How)
		if st.Endpoint != "" {
			fmt.Fprintf(w, "  %-11s endpoint %s\n", "", displayEndpoint(st.Endpoint))
		}
	}
	b, err := providers.Default(ctx, env)
	if err != nil {
		fmt.Fprintln(w, "default model: none — set a provider's key, start a local Ollama, or pass --model PROVIDER/MODEL; `ink demo` needs no model")
		return
	}
	fmt.Fprintf(w, "default model (when --model is absent): %s at %s\n", b, displayEndpoint(b.BaseURL))
}

// displayEndpoint shows an endpoint without anything that may be a
// credential: user info and query parameters are masked.
func displayEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an endpoint that is not a valid URL)"
	}
	hadUser := u.User != nil
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "***"
	}
	u.Fragment = ""
	out := u.String()
	if hadUser {
		out = strings.Replace(out, "://", "://***@", 1)
	}
	return out
}
