// Package mcpserver is ink's Model Context Protocol server, `ink mcp`. It
// gives any MCP client — Claude Code, Codex, Cursor, opencode — ink's
// children as tools: each runs as its own process with its own transcript
// (resumable after a crash, a timeout or a lost client) and, when asked,
// in its own git worktree.
//
// # Sessions
//
// One MCP connection is one ink parent session: an orchestrator.Parent,
// made on the connection's first tool call, whose shell session (written
// only by this server, under its lease, created when its first child
// launches) records every task call and its result. The children live
// under it. When the connection ends — stdin closes, the HTTP session is
// deleted or idles out, the server is stopped — its children are stopped
// as host lost: each records interrupted / "host lost" and stays
// resumable, from the next MCP session (task with resume) or from the shell
// (`ink task --resume ID`).
//
// # HTTP
//
// Over streamable HTTP (Server.Handler) a request reaches a session only
// with the server's bearer token (generated per server with NewToken and
// kept in TokenPath, or read by ReadTokenFile; checked by the SDK's
// auth.RequireBearerToken) and without an Origin header (the transport
// requires servers to validate Origin; MCP clients are programs and send
// none). Anything else gets 401 or 403 before the SDK's handler sees it, so
// it opens no session and writes nothing.
//
// # Tools
//
// task (one child, a batch of children run at once, or children started in
// the background), task_status, task_wait and task_cancel follow the
// children of this session; worktrees_list, worktree_diff and
// worktree_merge review and merge their branches with the command line's
// rules; agents_list names the agent profiles task can run. Each tool's
// arguments are one Go type: its inputSchema is generated from it and
// calls are decoded into it by package toolargs, and the task tools' are
// checked by the parsers the rest of ink uses (package taskargs), so a bad
// call gets the same message as on the command line or from ink's own
// agents, as a tool error, and changes no file.
//
// # Parallelism
//
// Some clients run calls to one MCP tool one after another unless it is
// annotated read-only, so the annotations say honestly what each tool does
// and task offers parallelism that does not depend on the client: a batch
// (tasks) runs its children at once, and background children run while the
// client does other work.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/version"
)

// Config configures a Server.
type Config struct {
	// Orchestrator runs every session's children; required unless
	// Unavailable is set.
	Orchestrator *orchestrator.Orchestrator
	// Profiles are the agent profiles (agents_list); nil lists none.
	Profiles orchestrator.Profiles
	// InkHome is $INK_HOME (worktree tools); required.
	InkHome string
	// Version is ink's version, announced to clients.
	Version string
	// Logger receives the server's own log; nil discards it.
	Logger *slog.Logger
	// Unavailable, when set, says why no child can run (no usable model)
	// and how to fix it. The server still answers: its instructions say
	// so, and every tool call is an error with this text, so that the
	// client shows it rather than losing the server without a word.
	Unavailable string
}

// Server is ink's MCP server. One Server serves one stdio connection or
// many HTTP sessions; each connection gets its own parent session. It is
// safe for concurrent use; Close stops every session's children.
type Server struct {
	cfg Config
	mcp *mcp.Server

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*connection
	n        int
	closed   bool
}

// connection is one MCP connection and its parent session.
type connection struct {
	parent *orchestrator.Parent
	id     string // the MCP session id ("" over stdio)
}

// New returns a server with every tool registered.
func New(cfg Config) (*Server, error) {
	if cfg.Unavailable == "" && (cfg.Orchestrator == nil || cfg.InkHome == "") {
		return nil, errors.New("mcpserver: Config needs an Orchestrator and InkHome")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Version == "" {
		cfg.Version = version.Ink
	}
	s := &Server{cfg: cfg, sessions: map[*mcp.ServerSession]*connection{}}
	instr := instructions
	if cfg.Unavailable != "" {
		instr = "ink cannot run child agents here: " + cfg.Unavailable + " Every ink tool answers with this message until the server is restarted with a usable model."
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "ink", Title: "ink: process-isolated, resumable child agents", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instr,
		Logger:       cfg.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	s.addTaskTools()
	s.addWorktreeTools()
	s.addAgentTools()
	return s, nil
}

// instructions tell the client's model what ink is for.
const instructions = "ink runs child coding agents as separate processes, each with a fresh context, its own resumable " +
	"transcript and, on request, its own git worktree. Delegate self-contained work with task. For independent pieces " +
	"of work, run them at once — several items in one task call's tasks list, or background: true and task_wait — rather " +
	"than one task call after another. A child that failed or was interrupted is continued with task({resume: id, prompt}). " +
	"Review worktree children with worktree_diff and merge them with worktree_merge."

// Run serves one connection over t (stdio: &mcp.StdioTransport{}) until the
// client goes away or ctx ends, then stops that connection's children as
// host lost and returns once they have recorded it.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: connect: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Stop the children first: the session's Close waits for the calls
		// in flight, which end with their children.
		s.endSession(ss)
		ss.Close()
		err = <-done
	}
	s.endSession(ss)
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		err = nil
	}
	return err
}

// parent returns the parent session of the connection ss, made on first
// use; when the connection ends, its children are stopped as host lost.
func (s *Server) parent(ss *mcp.ServerSession) (*orchestrator.Parent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the ink MCP server is shutting down")
	}
	if c := s.sessions[ss]; c != nil {
		return c.parent, nil
	}
	s.n++
	label := "mcp"
	if s.n > 1 {
		label = fmt.Sprintf("mcp%d", s.n)
	}
	c := &connection{parent: s.cfg.Orchestrator.NewParent(orchestrator.ParentOptions{Label: label}), id: ss.ID()}
	s.sessions[ss] = c
	go func() {
		// Wait returns once the connection is closed and its calls ended;
		// a call in flight sees the connection break first (callContext).
		ss.Wait()
		s.endSession(ss)
	}()
	s.cfg.Logger.Info("MCP session", "session", c.parent.SessionID(), "mcpSession", c.id)
	return c.parent, nil
}

// endSession stops the children of the connection ss as host lost and
// forgets it.
func (s *Server) endSession(ss *mcp.ServerSession) {
	s.mu.Lock()
	c := s.sessions[ss]
	delete(s.sessions, ss)
	s.mu.Unlock()
	if c != nil {
		c.parent.Close(orchestrator.ErrHostLost)
	}
}

// endSessionID ends the connection with the MCP session id (HTTP DELETE).
func (s *Server) endSessionID(id string) {
	s.mu.Lock()
	var found *mcp.ServerSession
	for ss, c := range s.sessions {
		if c.id == id {
			found = ss
		}
	}
	s.mu.Unlock()
	if found != nil {
		s.endSession(found)
	}
}

// Close stops the children of every connection as host lost, waits until
// they have recorded it, and refuses new sessions.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	var all []*mcp.ServerSession
	for ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.endSession(ss) }()
	}
	wg.Wait()
}

// callContext is the context a tool call's children run under. The SDK
// cancels a call's context for two reasons, told apart by its cause: the
// client cancelled the call (notifications/cancelled: its children are
// aborted), or the connection broke (the client is gone: every child of
// the session stops as host lost). release must be called when the call
// returns.
func (s *Server) callContext(ctx context.Context, ss *mcp.ServerSession, p *orchestrator.Parent) (context.Context, func()) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), context.Canceled) {
			cancel(orchestrator.StopCause(orchestrator.StatusAborted, "cancelled by the MCP client"))
			return
		}
		cancel(orchestrator.ErrHostLost)
		go s.endSession(ss)
	})
	return out, func() { stop(); cancel(nil) }
}

// add registers t with h; while no child can run (Config.Unavailable),
// every call of t answers with why.
func (s *Server) add(t *mcp.Tool, h mcp.ToolHandler) {
	if why := s.cfg.Unavailable; why != "" {
		h = func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolError("ink cannot run child agents: " + why), nil
		}
	}
	s.mcp.AddTool(t, h)
}

// toolError is an isError result with text.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// textResult is a result with text (and isError when failed).
func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
