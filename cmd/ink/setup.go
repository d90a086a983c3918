package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/console"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/sandbox"
)

// runEnv is what `ink run` and `ink task` share: the orchestrator, the
// display and the cleanups.
type runEnv struct {
	orc     *orchestrator.Orchestrator
	display *console.Display
	close   func()
}

// lifetime says what a front end's supervisor does beyond its first child,
// so that it pays only for what it will use.
type lifetime struct {
	// watchProfiles: something of this run can still start a child after
	// its first one is planned — a main agent that may delegate, a child
	// that may have children of its own — and so can use an edit of an
	// agent profile (hot reload). A watcher costs its process about 10 ms
	// to tear down when it exits.
	watchProfiles bool
	// warmWorkers: children start while the run goes on, so workers kept
	// started ahead of them (a warm pool) spare each one a process start.
	warmWorkers bool
}

// setup builds the orchestrator from the shared flags.
func setup(ctx context.Context, g *globals, life lifetime) (*runEnv, error) {
	if g.maxParallel < 1 {
		return nil, usageErr("--max-parallel must be at least 1, got %d", g.maxParallel)
	}
	if g.maxDepth < 0 {
		return nil, usageErr("--max-depth must be 0 or more, got %d", g.maxDepth)
	}
	if g.taskTimeout < 0 {
		return nil, usageErr("--task-timeout must be positive, got %s", g.taskTimeout)
	}
	home, err := inkHome()
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
	b, err := g.binding(ctx)
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
	if g.maxTurns < 0 {
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
	log, closeLog := logger(home)
	display := console.NewDisplay(os.Stderr, !g.json && isTerminal(os.Stderr))
	sink := display.Handle
	if g.json {
		jl := console.JSONLines(os.Stdout)
		sink = func(e event.Envelope) { jl(e); display.Handle(e) }
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	cfg := orchestrator.Config{
		InkHome: home, Cwd: cwd, Binding: b, MaxParallel: g.maxParallel, MaxDepth: g.maxDepth,
		TaskTimeout: g.taskTimeout, Interactive: isTerminal(os.Stdin) && isTerminal(os.Stderr),
		Environ: os.Environ(), Logger: log, HeartbeatInterval: heartbeat,
		Sandbox: box, Writable: writable,
		MaxTurns: g.maxTurns, ContextWindow: window, Budget: budget,
	}
	if life.warmWorkers {
		cfg.WarmWorkers = orchestrator.DefaultWarmWorkers
	}
	relay := &warnRelay{}
	reg, err := profiles(watchCtx, home, cwd, relay.warn, life.watchProfiles)
	if err != nil {
		stopWatch()
		closeLog()
		return nil, err
	}
	cfg.Profiles = reg
	cfg.Sink = sink
	orc, err := orchestrator.New(cfg)
	if err != nil {
		stopWatch()
		closeLog()
		return nil, usageErr("%v", err)
	}
	relay.attach(orc)
	stopProfiles := func() {
		if r, ok := reg.(*agents.Registry); ok {
			r.Stop() // without waiting for the watcher's teardown
		}
		stopWatch()
	}
	return &runEnv{orc: orc, display: display, close: func() { orc.Close(); stopProfiles(); closeLog() }}, nil
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
