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
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/version"
)

func newMCPCmd(g *globals) *cobra.Command {
	var (
		httpAddr    string
		allowRemote bool
		tokenFile   string
		idle        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve ink's child agents to an MCP client (Claude Code, Codex, Cursor, …) over stdio or HTTP",
		Long: "Serve ink's child agents as MCP tools: task (one child, a batch run at once, or background children),\n" +
			"task_status, task_wait, task_cancel, worktrees_list, worktree_diff, worktree_merge and agents_list.\n" +
			"Over stdio by default (`ink mcp config claude|codex|cursor|json` prints what adds it to a client);\n" +
			"--http ADDR serves streamable HTTP on loopback; every request must carry \"Authorization: Bearer TOKEN\", where TOKEN\n" +
			"is generated at start (printed on stderr, kept in $INK_HOME/mcp/PORT.token until the server stops) or read from\n" +
			"--token-file. One connection is one ink session in this directory\n" +
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
			var token string
			if httpAddr != "" {
				var err error
				if addr, err = mcpserver.ListenAddr(httpAddr, allowRemote); err != nil {
					return usageErr("%v", err)
				}
				if allowRemote && tokenFile == "" {
					return usageErr("--allow-remote serves beyond this machine: give the token its clients will send with --token-file FILE " +
						"(make one with `(umask 077; openssl rand -hex 32 > FILE)`), and put TLS in front of the port, or the token crosses the network in clear")
				}
				if tokenFile != "" {
					if token, err = mcpserver.ReadTokenFile(tokenFile); err != nil {
						return usageErr("%v", err)
					}
				} else if token, err = mcpserver.NewToken(); err != nil {
					return &exitError{code: exitFailed, msg: err.Error()}
				}
			} else if cmd.Flags().Changed("allow-remote") || cmd.Flags().Changed("idle-timeout") || cmd.Flags().Changed("token-file") {
				return usageErr("--allow-remote, --token-file and --idle-timeout go with --http; over stdio the client starts the server itself, and the session ends when it closes the pipe")
			}
			// A server lives long: it keeps profiles fresh and workers warm.
			// Over stdio, a server that cannot run children still answers,
			// saying why, rather than vanish from its client.
			env, err := func() (*runEnv, error) {
				if err := unexpandedVars(os.Environ()); err != nil && addr == "" {
					return nil, err
				}
				pre := preflight{watchProfiles: true, warmWorkers: true}
				if token != "" {
					pre.secrets = []secret.Secret{{Name: "ink mcp token", Value: token}}
				}
				return setup(cmd.Context(), g, pre)
			}()
			if err != nil {
				if addr == "" {
					return serveUnavailable(err)
				}
				return err
			}
			defer env.close()
			defer env.display.Close()
			srv, err := mcpserver.New(mcpserver.Config{Orchestrator: env.orc, Profiles: env.profiles, InkHome: env.home, Version: version.Ink, Logger: env.log})
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
			return serveHTTP(ctx, srv, httpServe{addr: addr, token: token, tokenFile: tokenFile, home: env.home, idle: idle})
		},
	}
	f := cmd.Flags()
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on ADDR (HOST:PORT, or a port on 127.0.0.1) instead of stdio")
	f.BoolVar(&allowRemote, "allow-remote", false, "let --http listen beyond loopback (needs --token-file; whoever has the token can run agents that edit your files)")
	f.StringVar(&tokenFile, "token-file", "", "with --http: the bearer token clients must send, read from FILE (mode 0600, 32+ characters) instead of generated")
	f.DurationVar(&idle, "idle-timeout", 30*time.Minute, "with --http: end a session whose client sent nothing for this long (0: never)")
	cmd.AddCommand(newMCPConfigCmd())
	return cmd
}

// httpServe is what serveHTTP serves: the checked address, the bearer
// token (from tokenFile, or generated when tokenFile is empty) and the idle
// timeout of a session.
type httpServe struct {
	addr, token, tokenFile, home string
	idle                         time.Duration
}

// serveHTTP serves srv on h.addr until ctx ends, then stops every
// session's children as host lost and shuts the listener down. A generated
// token is printed once on stderr and kept in $INK_HOME/mcp/PORT.token
// (mode 0600) while the server runs.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, h httpServe) error {
	handler, err := srv.Handler(ctx, mcpserver.HTTPConfig{Token: h.token, Idle: h.idle})
	if err != nil {
		return &exitError{code: exitFailed, msg: err.Error()}
	}
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("mcp: cannot listen on %s: %v", h.addr, err)}
	}
	fmt.Fprintf(os.Stderr, "ink: MCP server listening on http://%s/ (streamable HTTP); stop it with Ctrl-C\n", ln.Addr())
	if h.tokenFile != "" {
		fmt.Fprintf(os.Stderr, "ink: clients must send the header \"Authorization: Bearer TOKEN\" with the token of %s\n", h.tokenFile)
	} else {
		path := mcpserver.TokenPath(h.home, ln.Addr().(*net.TCPAddr).Port)
		if err := mcpserver.WriteToken(path, h.token); err != nil {
			ln.Close()
			return &exitError{code: exitFailed, msg: err.Error()}
		}
		defer mcpserver.RemoveToken(path, h.token)
		fmt.Fprintf(os.Stderr, "ink: clients must send the header \"Authorization: Bearer TOKEN\"; this server's TOKEN, also in %s until it stops:\n%s\n", path, h.token)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
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
