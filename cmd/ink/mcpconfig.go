package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/inkdev/ink/mcpserver"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/version"
)

func newMCPConfigCmd() *cobra.Command {
	return uses(&cobra.Command{
		Use:   "config CLIENT [-- FLAGS…]",
		Short: "Print what adds ink to an MCP client: claude, codex, cursor or json",
		Long: "Print the configuration that makes an MCP client start this ink over stdio, as the client's own\n" +
			"documentation asks for it: `claude` a `claude mcp add` command to run, `codex` an [mcp_servers.ink]\n" +
			"table for ~/.codex/config.toml, `cursor` an entry for ~/.cursor/mcp.json, `json` an entry for any\n" +
			"mcp.json that expands ${VAR} references. It names this binary by its absolute path, passes the\n" +
			"provider variables and INK_* settings set here (keys by name or reference, never their values),\n" +
			"lets Codex run task without asking, and gives the server the FLAGS after -- (ink mcp's own: --model,\n" +
			"--task-timeout, --sandbox, …). Notes on stderr say where it goes. Nothing is written.",
		Args: func(cmd *cobra.Command, args []string) error {
			if n := len(clientArgs(cmd, args)); n != 1 {
				return usageErr("give one client: ink mcp config %s [-- FLAGS…]", mcpserver.ClientNames("|"))
			}
			return nil
		},
		// Shared flags before -- would configure this command, not the
		// server.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var set []string
			cmd.Flags().Visit(func(f *pflag.Flag) { set = append(set, "--"+f.Name) })
			if len(set) > 0 {
				return usageErr("%s: flags for the server go after --, as in: ink mcp config codex -- %s …", strings.Join(set, ", "), set[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client := clientArgs(cmd, args)[0]
			var flags []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				flags = args[dash:]
			}
			setup, notes, err := mcpClientSetup(cmd.Context(), flags)
			if err != nil {
				return err
			}
			text, more, err := mcpserver.ClientConfig(mcpserver.Client(client), setup)
			if err != nil {
				return usageErr("%v", err)
			}
			if _, err := fmt.Fprint(os.Stdout, text); err != nil {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("write: %v", err)}
			}
			for _, n := range append(more, notes...) {
				fmt.Fprintln(os.Stderr, "ink: "+n)
			}
			return nil
		},
	})
}

// clientArgs are the arguments before --.
func clientArgs(cmd *cobra.Command, args []string) []string {
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		return args[:dash]
	}
	return args
}

// mcpClientSetup checks flags as `ink mcp` reads them and returns what a
// client configuration starts: this binary, the flags, and the variables
// the server needs from the client's environment; notes say what the
// server would lack.
func mcpClientSetup(ctx context.Context, flags []string) (mcpserver.ClientSetup, []string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	g := &globals{}
	mcpCmd, _, err := newRootFor(g).Find([]string{"mcp"})
	if err != nil {
		return mcpserver.ClientSetup{}, nil, err
	}
	if err := mcpCmd.ParseFlags(flags); err != nil {
		return mcpserver.ClientSetup{}, nil, usageErr("the flags after --: %v (see `ink mcp --help`)", err)
	}
	if rest := mcpCmd.Flags().Args(); len(rest) > 0 {
		return mcpserver.ClientSetup{}, nil, usageErr("the flags after --: ink mcp takes no arguments, got %q", rest)
	}
	if err := checkSharedFlags(mcpCmd); err != nil {
		return mcpserver.ClientSetup{}, nil, err
	}
	for _, f := range []string{"http", "allow-remote", "idle-timeout"} {
		if mcpCmd.Flags().Changed(f) {
			return mcpserver.ClientSetup{}, nil, usageErr("--%s: a client configuration starts ink mcp over stdio; to serve HTTP, start `ink mcp --http ADDR` yourself and give the client its URL", f)
		}
	}
	for _, f := range []string{"session", "json"} {
		if mcpCmd.Flags().Changed(f) {
			return mcpserver.ClientSetup{}, nil, usageErr("--%s does not go with ink mcp over stdio (see `ink mcp --help`)", f)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return mcpserver.ClientSetup{}, nil, &exitError{code: exitFailed, msg: fmt.Sprintf("cannot tell where this ink is: %v", err)}
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	if builtByGoRun(exe) {
		return mcpserver.ClientSetup{}, nil, usageErr("this ink was built by `go run` and lives in Go's build cache, which does not keep it; install ink (go install ./cmd/ink from its clone, or go install %s/cmd/ink@latest) and run `ink mcp config` with the installed binary", modulePath)
	}
	setup := mcpserver.ClientSetup{Command: exe, Args: flags}
	setup.Forward, setup.Values = mcpForwardVars(os.Environ())
	timeout := g.taskTimeout
	if timeout == 0 {
		timeout = orchestrator.DefaultHeadlessTimeout
	}
	// A task call waits for its children: give it their timeout and then
	// some, since children of a batch may wait for a free slot first.
	setup.ToolTimeout = 2*timeout + 5*time.Minute
	var notes []string
	if _, err := g.binding(ctx); err != nil {
		notes = append(notes, fmt.Sprintf("started with this environment, ink mcp would have no usable model and answer every tool call with why: %s", errorText(err)))
	}
	return setup, notes, nil
}

// mcpForwardVars picks from environ the variables an `ink mcp` server needs
// from its client's environment: the provider variables that are set
// (keys, endpoints, stall limits) and ink's INK_* settings. values holds
// the values of those that are not secret (INK_* settings not named like
// a key), which a configuration may hold.
func mcpForwardVars(environ []string) (names []string, values map[string]string) {
	values = map[string]string{}
	internal := map[string]bool{"INK_WORKER": true, "INK_WORKER_LOG": true, "INK_WORKER_POOLED": true}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || internal[k] {
			continue
		}
		switch {
		case providers.IsProviderVar(k):
			names = append(names, k)
		case strings.HasPrefix(k, "INK_"):
			names = append(names, k)
			if !secret.IsKeyName(k) {
				values[k] = v
			}
		}
	}
	sort.Strings(names)
	return names, values
}

// unexpandedRef matches a value that is a reference to a variable, as MCP
// client configurations write them: ${NAME}, ${env:NAME}, $NAME.
var unexpandedRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\$(\{(env:)?[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}|[A-Za-z_][A-Za-z0-9_]*)$`)
})

// unexpandedVars reports provider variables and INK_* settings whose value
// is still a reference such as ${ANTHROPIC_API_KEY}: a client that does
// not expand references passed the text on.
func unexpandedVars(environ []string) error {
	var bad []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if (providers.IsProviderVar(k) || strings.HasPrefix(k, "INK_")) && unexpandedRef().MatchString(strings.TrimSpace(v)) {
			bad = append(bad, fmt.Sprintf("%s is the text %q", k, v))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return usageErr("%s: the MCP client passed a reference without expanding it; give the value in the client's configuration, or use the reference form it expands (`ink mcp config CLIENT` prints one)", strings.Join(bad, "; "))
}

// errorText is what err says to a user.
func errorText(err error) string {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.msg
	}
	return err.Error()
}

// serveUnavailable serves MCP over stdio without running any child: the
// server's instructions and every tool call say why (err) and how to fix
// it, so that the client shows it instead of losing the server without a
// word. It is said on stderr too. The exit code is err's.
func serveUnavailable(err error) error {
	why := errorText(err)
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(os.Stderr, "ink: %s\nink: serving MCP anyway: every tool call answers with this message\n", why)
	srv, nerr := mcpserver.New(mcpserver.Config{Unavailable: why, Version: version.Ink})
	if nerr != nil {
		return &exitError{code: exitFailed, msg: nerr.Error()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv.Run(ctx, &mcp.StdioTransport{})
	return &exitError{code: code}
}
