package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/sandbox"
)

func newDoctorCmd(g *globals) *cobra.Command {
	return uses(&cobra.Command{
		Use:   "doctor",
		Short: "Show which model providers are configured (never printing secrets)",
		Long: "Show every model provider ink knows, whether it is ready to use and why (which key\n" +
			"variable is set, whether a local server answers), the endpoint it would call, and the\n" +
			"model ink picks when --model is absent; with --model (and --base-url), whether that model\n" +
			"can run, checked as `ink run` checks it. Also shows how Claude Code's model aliases\n" +
			"(sonnet, opus, haiku, fable) resolve, the provider stall limits, and what the bash sandbox\n" +
			"can enforce on this machine (its Landlock ABI, seccomp, mount namespaces). Keys are never printed.\n" +
			"--json prints one JSON document. Exits as `ink run` would refuse when --model cannot run.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			rep, modelErr := diagnose(ctx, g, os.Getenv)
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			} else {
				printDoctor(os.Stdout, rep)
			}
			return modelErr
		},
	}, "model", "base-url", "json")
}

// doctorReport is what `ink doctor` finds, as --json prints it. It never
// holds a secret: endpoints are shown with credentials masked.
type doctorReport struct {
	Providers    []providers.ProviderStatus `json:"providers"`
	Default      *modelCheck                `json:"default"`
	Model        *modelCheck                `json:"model,omitempty"`
	ModelAliases aliasReport                `json:"modelAliases"`
	StallLimits  stallReport                `json:"stallLimits"`
	Sandbox      sandbox.Capabilities       `json:"sandbox"`
	// MCP is whether `ink mcp`, started here with these flags, could run
	// children, and if not, what every tool call of it would answer.
	MCP modelCheck `json:"mcp"`
}

// modelCheck is one model binding and whether `ink run` would accept it.
type modelCheck struct {
	Model    string `json:"model,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Ready    bool   `json:"ready"`
	Problem  string `json:"problem,omitempty"`
}

type aliasReport struct {
	File    string       `json:"file,omitempty"`
	Error   string       `json:"error,omitempty"`
	Aliases []aliasEntry `json:"aliases"`
}

// aliasEntry says what a Claude model alias runs on: on anthropic, and on
// every other provider (the user's mapping, or "" for the parent's model).
type aliasEntry struct {
	Alias     string `json:"alias"`
	Anthropic string `json:"anthropic"`
	Elsewhere string `json:"elsewhere,omitempty"`
	From      string `json:"from,omitempty"`
}

type stallReport struct {
	ResponseHeader string `json:"responseHeader,omitempty"`
	StreamIdle     string `json:"streamIdle,omitempty"`
	Error          string `json:"error,omitempty"`
}

// diagnose gathers the doctor's report. modelErr is the error `ink run`
// would give for --model/--base-url (nil when they are absent or fine).
func diagnose(ctx context.Context, g *globals, env func(string) string) (rep doctorReport, modelErr error) {
	for _, st := range providers.Status(ctx, env) {
		st.Endpoint = displayEndpointOrEmpty(st.Endpoint)
		rep.Providers = append(rep.Providers, st)
	}
	rep.Default = &modelCheck{}
	if b, err := providers.Default(ctx, env); err != nil {
		rep.Default.Problem = err.Error()
	} else {
		rep.Default.Model, rep.Default.Endpoint = b.String(), displayEndpointOrEmpty(b.BaseURL)
		rep.Default.Ready = true
		if err := checkBinding(b, "the default model"); err != nil {
			rep.Default.Ready, rep.Default.Problem = false, err.Error()
		}
	}
	if g.model != "" || g.baseURL != "" {
		rep.Model = &modelCheck{Model: g.model}
		b, err := g.binding(ctx)
		if err != nil {
			rep.Model.Problem, modelErr = err.Error(), err
		} else {
			rep.Model.Model, rep.Model.Endpoint, rep.Model.Ready = b.String(), displayEndpointOrEmpty(b.BaseURL), true
		}
	}
	rep.ModelAliases.Aliases = []aliasEntry{}
	if home, err := inkHome(); err == nil {
		aliases, err := agents.LoadModelAliases(home, env)
		rep.ModelAliases.File = aliases.File
		if err != nil {
			rep.ModelAliases.Error = err.Error()
		}
		names := make([]string, 0, len(agents.ClaudeModelAliases))
		for alias := range agents.ClaudeModelAliases {
			names = append(names, alias)
		}
		sort.Strings(names)
		for _, alias := range names {
			e := aliasEntry{Alias: alias, Anthropic: "anthropic/" + agents.ClaudeModelAliases[alias]}
			if b, from, ok, _ := aliases.Lookup(alias); ok {
				e.Elsewhere, e.From = b.String(), from
			}
			rep.ModelAliases.Aliases = append(rep.ModelAliases.Aliases, e)
		}
	}
	header, idle, err := providers.StallTimeouts(env)
	if err != nil {
		rep.StallLimits.Error = err.Error()
	} else {
		rep.StallLimits.ResponseHeader, rep.StallLimits.StreamIdle = stallShown(header), stallShown(idle)
	}
	if exe, err := os.Executable(); err == nil {
		rep.Sandbox = sandbox.Probe(exe)
	}
	rep.MCP = mcpCheck(rep)
	return rep, modelErr
}

// mcpCheck is whether `ink mcp` started here with the same flags could run
// children: the model it would use, or the message every tool call of it
// would answer with.
func mcpCheck(rep doctorReport) modelCheck {
	if err := unexpandedVars(os.Environ()); err != nil {
		return modelCheck{Problem: errorText(err)}
	}
	m := rep.Default
	if rep.Model != nil {
		m = rep.Model
	}
	return *m
}

// stallShown renders a stall limit as providers.StallTimeouts gives it.
func stallShown(d time.Duration) string {
	switch {
	case d == 0:
		return model.DefaultStallTimeout.String()
	case d < 0:
		return "off"
	}
	return d.String()
}

// printDoctor writes the report for people.
func printDoctor(w io.Writer, rep doctorReport) {
	fmt.Fprintln(w, "model providers (✓ ready to use; keys are never shown):")
	for _, st := range rep.Providers {
		mark := "-"
		if st.Configured {
			mark = "✓"
		}
		fmt.Fprintf(w, "%s %-11s %s\n", mark, st.Name, st.How)
		if st.Endpoint != "" {
			fmt.Fprintf(w, "  %-11s endpoint %s\n", "", st.Endpoint)
		}
	}
	switch d := rep.Default; {
	case d.Model == "":
		fmt.Fprintln(w, "default model: none — set a provider's key, start a local Ollama, or pass --model PROVIDER/MODEL; `ink demo` needs no model")
	case d.Ready:
		fmt.Fprintf(w, "default model (when --model is absent): %s at %s\n", d.Model, d.Endpoint)
	default:
		fmt.Fprintf(w, "default model (when --model is absent): ✗ %s at %s: %s\n", d.Model, d.Endpoint, d.Problem)
	}
	if m := rep.Model; m != nil {
		if m.Ready {
			fmt.Fprintf(w, "--model: ✓ %s at %s\n", m.Model, m.Endpoint)
		} else {
			fmt.Fprintf(w, "--model: ✗ %s\n", m.Problem)
		}
	}
	fmt.Fprintf(w, "model aliases in agent profiles (model: sonnet, …):\n")
	for _, a := range rep.ModelAliases.Aliases {
		elsewhere := "the parent's model (nothing maps it)"
		if a.Elsewhere != "" {
			elsewhere = a.Elsewhere + " (from " + a.From + ")"
		}
		fmt.Fprintf(w, "  %-7s %s on anthropic; elsewhere %s\n", a.Alias, a.Anthropic, elsewhere)
	}
	if rep.ModelAliases.Error != "" {
		fmt.Fprintf(w, "  ✗ %s\n", rep.ModelAliases.Error)
	} else if rep.ModelAliases.File != "" {
		fmt.Fprintf(w, "  (map them in %s, e.g. \"aliases: {sonnet: openai/gpt-5}\", or with INK_MODEL_SONNET, …)\n", rep.ModelAliases.File)
	}
	if rep.StallLimits.Error != "" {
		fmt.Fprintf(w, "stall limits: ✗ %s\n", rep.StallLimits.Error)
	} else {
		fmt.Fprintf(w, "stall limits: response headers %s, stream idle %s (%s, %s)\n", rep.StallLimits.ResponseHeader, rep.StallLimits.StreamIdle, model.ResponseHeaderTimeoutVar, model.StreamIdleTimeoutVar)
	}
	if m := rep.MCP; m.Ready {
		fmt.Fprintf(w, "ink mcp: ✓ runs children on %s here; an MCP client starts it with the client's environment: `ink mcp config claude|codex|cursor|json` prints a configuration that passes what is set here\n", m.Model)
	} else {
		fmt.Fprintf(w, "ink mcp: ✗ started here, it would answer every tool call with: %s\n", m.Problem)
	}
	sb := rep.Sandbox
	abi := "no Landlock"
	if sb.ABI > 0 {
		abi = fmt.Sprintf("Landlock ABI %d", sb.ABI)
	}
	fmt.Fprintf(w, "bash sandbox (Linux %s, %s; ✓ marks what is enforced here, ✗ what is not):\n", sb.Kernel, abi)
	for _, c := range sb.List {
		mark := "✗"
		if c.Enforced {
			mark = "✓"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.What, c.Why)
	}
}

// displayEndpointOrEmpty is displayEndpoint, keeping "" as "".
func displayEndpointOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return displayEndpoint(s)
}
