package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/inkdev/ink/mcpserver"
	"github.com/inkdev/ink/orchestrator"
)

func newMCPCmd(g *globals) *cobra.Command {
	var (
		httpAddr    string
		allowRemote bool
		idle        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve ink's child agents to an MCP client (Claude Code, Codex, Cursor, …) over stdio or HTTP",
		Long: "Serve ink's child agents as MCP tools: task (one child, a batch run at once, or background children),\n" +
			"task_status, task_wait, task_cancel, worktrees_list, worktree_diff, worktree_merge and agents_list.\n" +
			"Over stdio by default (`ink mcp config claude|codex|cursor|json` prints what adds it to a client);\n" +
			"--http ADDR serves streamable HTTP on loopback. One connection is one ink session in this directory\n" +
			"(or --cwd); when the client goes away its children stop, record that the host was lost, and can be\n" +
			"resumed later. Over stdio, a server that cannot run children (no usable model) still answers, and\n" +
			"every tool call says why.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.session != "" {
				return usageErr("--session continues a main session of `ink run`; ink mcp starts a session of its own for every connection, so drop --session")
			}
			if g.json && httpAddr == "" {
				return usageErr("--json would print events into the MCP stream on stdout; drop --json, or serve over --http, where stdout is free")
			}
			if idle < 0 {
				return usageErr("--idle-timeout must be 0 (never) or more, got %s", idle)
			}
			addr := ""
			if httpAddr != "" {
				var err error
				if addr, err = mcpserver.ListenAddr(httpAddr, allowRemote); err != nil {
					return usageErr("%v", err)
				}
			} else if cmd.Flags().Changed("allow-remote") || cmd.Flags().Changed("idle-timeout") {
				return usageErr("--allow-remote and --idle-timeout go with --http; over stdio the session ends when the client closes the pipe")
			}
			// A server lives long: it keeps profiles fresh and workers warm.
			// Over stdio, a server that cannot run children still answers,
			// saying why, rather than vanish from its client.
			env, err := func() (*runEnv, error) {
				if err := unexpandedVars(os.Environ()); err != nil && addr == "" {
					return nil, err
				}
				return setup(cmd.Context(), g, preflight{watchProfiles: true, warmWorkers: true})
			}()
			if err != nil {
				if addr == "" {
					return serveUnavailable(err)
				}
				return err
			}
			defer env.close()
			defer env.display.Close()
			srv, err := mcpserver.New(mcpserver.Config{Orchestrator: env.orc, Profiles: env.profiles, InkHome: env.home, Version: orchestrator.InkVersion, Logger: env.log})
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			ctx, stop := interruptible(context.Background(), nil, env.display.Note, env.orc.KillAll)
			defer stop()
			if addr == "" {
				err = srv.Run(ctx, &mcp.StdioTransport{})
				srv.Close()
				if err != nil && ctx.Err() == nil {
					return &exitError{code: exitFailed, msg: fmt.Sprintf("mcp: %v", err)}
				}
				return nil
			}
			return serveHTTP(ctx, srv, addr, idle)
		},
	}
	f := cmd.Flags()
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (HOST:PORT, or a port on 127.0.0.1) instead of stdio")
	f.BoolVar(&allowRemote, "allow-remote", false, "let --http listen beyond loopback (whoever reaches it can run agents that edit your files)")
	f.DurationVar(&idle, "idle-timeout", 30*time.Minute, "with --http: end a session whose client sent nothing for this long (0: never)")
	cmd.AddCommand(newMCPConfigCmd())
	return cmd
}

// serveHTTP serves srv on addr until ctx ends, then stops every session's
// children as host lost and shuts the listener down.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr string, idle time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("mcp: cannot listen on %s: %v", addr, err)}
	}
	hs := &http.Server{Handler: srv.Handler(ctx, idle), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "ink: MCP server listening on http://%s/ (streamable HTTP); stop it with Ctrl-C\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	srv.Close()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("mcp: %v", err)}
	}
	return nil
}
