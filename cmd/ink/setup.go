package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/console"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/secret"
)

// runEnv is what `ink run` and `ink task` share: the orchestrator, the
// display and the cleanups.
type runEnv struct {
	orc     *orchestrator.Orchestrator
	display *console.Display
	// stdoutGone is closed when a write to stdout failed (its reader went
	// away, as `| head` does); the command then cancels its agents.
	stdoutGone <-chan struct{}
	close      func()
	// home, profiles and log are what `ink mcp` hands its server too.
	home     string
	profiles orchestrator.Profiles
	log      *slog.Logger
}

// preflight is what a command checks, besides the shared flags, before
// anything is written.
type preflight struct {
	// binding, when set, gives the model binding instead of --model or the
	// default choice (the recorded binding of a resumed child).
	binding func(ctx context.Context, home, cwd string) (model.Binding, error)
	// check runs last, with the agent profiles this run will see and the
	// binding it runs on.
	check func(ctx context.Context, profiles *agents.Set, cwd string, b model.Binding) error

	// What the run does beyond its first child, so that it pays only for
	// what it will use. watchProfiles: something of this run can still
	// start a child after its first one is planned — a main agent that may
	// delegate, a child that may have children of its own — and so can use
	// an edit of an agent profile (hot reload); a watcher costs its process
	// about 10 ms to tear down. warmWorkers: children start while the run
	// goes on, so workers kept started ahead of them (a warm pool) spare
	// each one a process start.
	watchProfiles bool
	warmWorkers   bool
	// firstWorker: the command launches its first agent at once, so its
	// worker starts beside the rest of the set-up (Config.FirstWorker).
	firstWorker bool

	// secrets are secrets of the run beside its environment's (the token
	// of `ink mcp --http`), redacted like them.
	secrets []secret.Secret
}

// setup checks every input of a run and then builds the orchestrator from
// the shared flags. Nothing is written (no log, no session) until every
// check passed, so bad input leaves INK_HOME as it was.
func setup(ctx context.Context, g *globals, pre preflight) (*runEnv, error) {
	if g.maxParallel < 1 {
		return nil, usageErr("--max-parallel must be at least 1, got %d", g.maxParallel)
	}
	if g.maxDepth < 0 {
		return nil, usageErr("--max-depth must be 0 or more, got %d", g.maxDepth)
	}
	if g.taskTimeout < 0 {
		return nil, usageErr("--task-timeout must be positive, got %s", g.taskTimeout)
	}
	home, err := writableHome()
	if err != nil {
		return nil, err
	}
	cwd, err := g.workDir()
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var b model.Binding
	if pre.binding != nil {
		b, err = pre.binding(ctx, home, cwd)
	} else {
		b, err = g.binding(ctx)
	}
	if err != nil {
		return nil, err
	}
	heartbeat, err := heartbeatInterval()
	if err != nil {
		return nil, err
	}
	box, writable, err := g.bashSandbox(cwd)
	if err != nil {
		return nil, err
	}
	if g.maxTurns < 1 {
		return nil, usageErr("--max-turns must be 1 or more, got %d", g.maxTurns)
	}
	var window, budget int64
	if g.window != "" {
		if window, err = parseTokens("--context-window", g.window); err != nil {
			return nil, err
		}
	}
	if g.budget != "" {
		if budget, err = parseTokens("--budget", g.budget); err != nil {
			return nil, err
		}
	}
	remote, err := orchestrator.ParseLauncher(g.launcher)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	onKube := g.launcher == orchestrator.KubeLauncher
	if g.shipIncludes && remote == "" && !onKube {
		return nil, usageErr("--ship-includes goes with --launcher exec:COMMAND or kube: a local child's worktree gets its .worktreeinclude files anyway")
	}
	if onKube {
		if err := checkKubeFlags(g); err != nil {
			return nil, err
		}
	}
	relay := &warnRelay{}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	reg, err := profiles(watchCtx, home, cwd, relay.warn, pre.watchProfiles)
	if err != nil {
		stopWatch()
		return nil, err
	}
	if pre.check != nil {
		if err := pre.check(ctx, reg.Current(), cwd, b); err != nil {
			stopWatch()
			return nil, err
		}
	}

	// Every input is good: from here on ink writes.
	// Pruning old session logs stats every one of them: it runs beside
	// the run, never before its first worker, and the run waits for it
	// only as it ends.
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		pruneLogs(filepath.Join(home, "logs"), time.Now())
	}()
	log, closeLogFile := logger(home)
	closeLog := func() {
		closeLogFile()
		<-pruned
	}
	display := console.NewDisplay(os.Stderr, !g.json && isTerminal(os.Stderr))
	display.SetVerbose(g.verbose)
	sink := display.Handle
	gone := make(chan struct{})
	if g.json {
		var once sync.Once
		jl := console.JSONLines(os.Stdout, func(error) { once.Do(func() { close(gone) }) })
		sink = func(e event.Envelope) { jl(e); display.Handle(e) }
	}
	var kr *kubeRemote
	if onKube {
		if kr, err = g.newKubeRemote(ctx, log); err != nil {
			stopWatch()
			closeLog()
			return nil, err
		}
	}
	cfg := orchestrator.Config{
		InkHome: home, Cwd: cwd, Binding: b, MaxParallel: g.maxParallel, MaxDepth: g.maxDepth,
		TaskTimeout: g.taskTimeout, Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr),
		Environ: os.Environ(), Logger: log, HeartbeatInterval: heartbeat,
		Sandbox: box, Writable: writable,
		Network: g.network.value, NetworkExplicit: g.network.given, AllowGitWrites: g.gitWrites,
		MaxTurns: g.maxTurns, ContextWindow: window, Budget: budget,
		Command: selfCommand(), RemoteCommand: remote, RemoteIncludes: g.shipIncludes,
	}
	if pre.warmWorkers {
		cfg.WarmWorkers = orchestrator.DefaultWarmWorkers
	}
	cfg.FirstWorker = pre.firstWorker && remote == "" && kr == nil
	if len(pre.secrets) > 0 {
		cfg.Secrets = append(secret.FromEnviron(cfg.Environ), pre.secrets...)
	}
	cfg.Profiles = reg
	cfg.Sink = sink
	closeKube := func() {}
	if kr != nil {
		cfg.RemoteLauncher, cfg.RemoteKind, closeKube = kr.launcher(), orchestrator.KubeLauncher, kr.close
	}
	orc, err := orchestrator.New(cfg)
	if err != nil {
		closeKube()
		stopWatch()
		closeLog()
		return nil, usageErr("%v", err)
	}
	relay.attach(orc)
	if kr != nil {
		kr.attach(orc)
	}
	if g.verbose {
		display.Note(fmt.Sprintf("logs: %s (this process) and %s (one per agent session)", filepath.Join(home, "logs", "ink.log"), filepath.Join(home, "logs", "<session>.log")))
	}
	stopProfiles := func() {
		if r, ok := reg.(*agents.Registry); ok {
			r.Stop() // without waiting for the watcher's teardown
		}
		stopWatch()
	}
	return &runEnv{orc: orc, display: display, stdoutGone: gone, close: func() { orc.Close(); closeKube(); stopProfiles(); closeLog() }, home: home, profiles: reg, log: log}, nil
}

// bashSandbox checks --sandbox and --writable: a mode that is not one, or a
// directory that is not there, is bad input; a mode asked for by name that
// this machine cannot enforce is refused, saying why.
func (g *globals) bashSandbox(cwd string) (sandbox.Mode, []string, error) {
	var mode sandbox.Mode
	if g.sandbox != "" {
		m, err := sandbox.ParseMode(g.sandbox)
		if err != nil {
			return "", nil, usageErr("--sandbox: %v", err)
		}
		if _, err := sandbox.Decide(m, true, sandbox.Check()); err != nil {
			return "", nil, &exitError{code: exitRefused, msg: err.Error()}
		}
		mode = m
	}
	var writable []string
	for _, d := range g.writable {
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		abs, err := sandbox.CheckWritable(d)
		if err != nil {
			return "", nil, usageErr("--writable: %v", err)
		}
		writable = append(writable, abs)
	}
	return mode, writable, nil
}
