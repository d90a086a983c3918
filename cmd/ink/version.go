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
	"github.com/inkdev/ink/version"
)

func newVersionCmd(g *globals) *cobra.Command {
	return uses(&cobra.Command{
		Use:   "version",
		Short: "Print ink's version and worker protocol (-v: also the configured providers)",
		Long: "Print ink's version, its worker protocol, and the Go version and platform it was built for.\n" +
			"-v also shows which model providers are configured (as `ink doctor` does). --json prints one\n" +
			"JSON object: version, protocol, go, os, arch (and providers with -v).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if g.json {
				v := versionJSON{Version: version.Ink, Protocol: orchestrator.ProtocolVersion, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
				if g.verbose {
					for _, st := range providers.Status(ctx, os.Getenv) {
						st.Endpoint = displayEndpointOrEmpty(st.Endpoint)
						v.Providers = append(v.Providers, st)
					}
				}
				return printJSON(v)
			}
			fmt.Printf("ink %s (worker protocol %d, %s %s/%s)\n", version.Ink, orchestrator.ProtocolVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if g.verbose {
				fmt.Println()
				printProviders(ctx, os.Stdout, os.Getenv)
			}
			return nil
		},
	}, "json", "verbose")
}

// versionJSON is what `ink version --json` prints.
type versionJSON struct {
	Version   string                     `json:"version"`
	Protocol  int                        `json:"protocol"`
	Go        string                     `json:"go"`
	OS        string                     `json:"os"`
	Arch      string                     `json:"arch"`
	Providers []providers.ProviderStatus `json:"providers,omitempty"`
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
