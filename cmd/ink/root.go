package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/orchestrator"
)

// globals are the flags every command shares.
type globals struct {
	model       string
	baseURL     string
	cwd         string
	json        bool
	maxParallel int
	maxDepth    int
	taskTimeout time.Duration
	session     string
	sandbox     string
	writable    []string
	network     givenBool
	gitWrites   bool
	launcher    string
	// shipIncludes sends .worktreeinclude files to remote workers.
	shipIncludes bool
	maxTurns     int
	window       string
	budget       string
	verbose      bool
	// kube holds the --kube-* flags of --launcher kube.
	kube kubeOpts
}

func newRoot() *cobra.Command { return newRootFor(&globals{}) }

// newRootFor is the command tree with its shared flags read into g.
func newRootFor(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "ink",
		Short:         "Delegate coding-agent work to child agents that run as separate processes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v (see `%s --help`)", err, c.CommandPath())
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkSharedFlags(cmd); err != nil {
			return err
		}
		if n := kubeGiven(cmd); n != "" && g.launcher != orchestrator.KubeLauncher && (cmd.Parent() == nil || cmd.Parent().Name() != "kube") {
			return usageErr("%s goes with --launcher kube; add it, or drop %s", n, n)
		}
		return nil
	}
	root.SetHelpFunc(helpShowingUsedFlags(root.HelpFunc()))
	pf := root.PersistentFlags()
	pf.StringVar(&g.model, "model", "", "model as PROVIDER/MODEL (anthropic, openai, deepseek, ollama, vllm, openrouter) or script:PATH")
	pf.StringVar(&g.baseURL, "base-url", "", "endpoint for an OpenAI-compatible server (includes /v1)")
	pf.StringVar(&g.cwd, "cwd", "", "working directory (default: the current directory)")
	pf.BoolVar(&g.json, "json", false, "print one JSON object per line on stdout")
	pf.IntVar(&g.maxParallel, "max-parallel", 8, "children running at once across the whole tree")
	pf.IntVar(&g.maxDepth, "max-depth", 1, "how deep children may delegate (1: children cannot delegate)")
	pf.DurationVar(&g.taskTimeout, "task-timeout", 0, "default child timeout (default: none on a terminal, 60m otherwise)")
	pf.StringVar(&g.session, "session", "", "continue this main session")
	pf.IntVar(&g.maxTurns, "max-turns", orchestrator.DefaultMaxTurns, "cap every agent's model turns per attempt; a capped agent gets one last turn to answer")
	pf.StringVar(&g.window, "context-window", "", "context window in tokens for every model, e.g. 128k (default: each model's own)")
	pf.StringVar(&g.budget, "budget", "", "tokens the whole tree of agents may spend, e.g. 2M; agents wrap up as it runs out (default: no limit)")
	pf.StringVar(&g.sandbox, "sandbox", "", "confine bash: read-only, workspace-write or danger-full-access (default: workspace-write, read-only for agents without edit and write)")
	pf.StringArrayVar(&g.writable, "writable", nil, "another directory bash may write under workspace-write (repeatable)")
	pf.VarPF(&g.network, "network", "", "let bash reach the network under read-only and workspace-write (default: no network)").NoOptDefVal = "true"
	pf.BoolVar(&g.gitWrites, "allow-git-writes", false, "let bash commit in your checkout under workspace-write: its git directory becomes writable, except config and hooks")
	pf.StringVar(&g.launcher, "launcher", "local", "where children run: local; kube — each child attempt in a Pod of your Kubernetes cluster (see --kube-*); or exec:COMMAND — a command that runs `ink worker --remote` on another machine or in a container (e.g. 'exec:ssh buildbox ink worker --remote'); each remote child works in a worktree")
	pf.BoolVar(&g.shipIncludes, "ship-includes", false, "with --launcher exec:… or kube, also send a remote child the .worktreeinclude files of its worktree (they often hold secrets)")
	addKubeFlags(g, root)
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "more detail on stderr (see each command's help)")

	root.AddCommand(
		newRunCmd(g), newTaskCmd(g), newDemoCmd(g), newVersionCmd(g), newDoctorCmd(g),
		newSessionsCmd(g), newLeasesCmd(g), newStatusCmd(g), newWorktreesCmd(g),
		newAgentsCmd(g), newTrustCmd(g), newMCPCmd(g), newKubeCmd(g),
		&cobra.Command{Use: "worker", Hidden: true, RunE: func(*cobra.Command, []string) error {
			return usageErr("`ink worker` is started by ink itself, not by hand")
		}},
	)
	return root
}

// inkHome is $INK_HOME or ~/.ink, absolute. A path that exists and is not
// a directory is refused, naming the variable to set; commands that write
// there also call checkHomeWritable.
func inkHome() (string, error) {
	home := ""
	if h := os.Getenv("INK_HOME"); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", usageErr("INK_HOME %q: %v", h, err)
		}
		home = abs
	} else {
		dir, err := os.UserHomeDir()
		if err != nil {
			return "", usageErr("cannot find your home directory (%v); set INK_HOME to a directory where ink may keep its sessions", err)
		}
		home = filepath.Join(dir, ".ink")
	}
	if err := checkHomeIsDir(home); err != nil {
		return "", err
	}
	return home, nil
}

// writableHome is inkHome for a command that writes there.
func writableHome() (string, error) {
	home, err := inkHome()
	if err != nil {
		return "", err
	}
	return home, checkHomeWritable(home)
}

// workDir resolves --cwd (or the current directory) to an absolute,
// symlink-free directory.
func (g *globals) workDir() (string, error) {
	dir := g.cwd
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", usageErr("cannot read the current directory: %v", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageErr("--cwd %q: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", usageErr("--cwd %q does not exist; pass an existing directory", dir)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", usageErr("--cwd %q is not a directory", dir)
	}
	return real, nil
}

// binding resolves --model (or the default choice) to a binding with its
// effective endpoint, and checks up front that a worker can open it (a key
// is set, the endpoint is a URL), so a bad choice is a usage error before
// anything is written. The endpoint goes into launch records: it must not
// carry credentials.
func (g *globals) binding(ctx context.Context) (model.Binding, error) {
	if g.model == "" {
		if g.baseURL != "" {
			return model.Binding{}, usageErr("--base-url needs --model to name the server's model, e.g. --model openai/llama3.1 --base-url %s", g.baseURL)
		}
		b, err := providers.Default(ctx, os.Getenv)
		if err != nil {
			return model.Binding{}, usageErr("%v", err)
		}
		return b, checkBinding(b, "the default model")
	}
	b, err := g.flagBinding()
	if err != nil {
		return model.Binding{}, usageErr("--model: %v", err)
	}
	if b.Provider == "script" {
		if g.baseURL != "" {
			return model.Binding{}, usageErr("--base-url is for a model server; the script model %s runs offline, so drop --base-url", g.model)
		}
		abs, err := filepath.Abs(b.Model)
		if err != nil {
			return model.Binding{}, usageErr("--model %s: %v", g.model, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return model.Binding{}, usageErr("--model %s: the script file does not exist", g.model)
		}
		b.Model = abs
		return b, checkScript("--model "+g.model, abs)
	}
	if g.baseURL != "" {
		if err := checkEndpoint(g.baseURL); err != nil {
			return model.Binding{}, usageErr("--base-url %q: %v", g.baseURL, err)
		}
		b.BaseURL = g.baseURL
	}
	b = providers.Resolve(b, os.Getenv)
	if err := checkBinding(b, "--model "+g.model); err != nil {
		return model.Binding{}, err
	}
	return b, checkServerAnswers(ctx, b, "--model "+g.model, g.baseURL != "")
}

// flagBinding reads --model: PROVIDER/MODEL, script:PATH, or one of
// Claude Code's aliases (sonnet, opus, haiku, fable), which the user's
// models.yaml or INK_MODEL_<ALIAS> may map.
func (g *globals) flagBinding() (model.Binding, error) {
	var aliases *agents.ModelAliases
	if lower := strings.ToLower(strings.TrimSpace(g.model)); agents.ClaudeModelAliases[lower] != "" {
		home, err := inkHome()
		if err != nil {
			return model.Binding{}, err
		}
		aliases, _ = agents.LoadModelAliases(home, os.Getenv)
	}
	return agents.ResolveFlag(g.model, aliases)
}

// checkBinding checks b the way a worker will before it opens it
// (contacting nothing) and refuses an endpoint with credentials in it.
func checkBinding(b model.Binding, what string) error {
	if b.Provider == "script" {
		return nil
	}
	if _, err := providers.Check(b, os.Getenv); err != nil {
		return usageErr("%v", err)
	}
	if providers.EndpointHasCredentials(b.BaseURL) {
		return usageErr("%s: the endpoint carries credentials; ink records endpoints in session files, so put the key in the provider's key variable (e.g. OPENAI_API_KEY) and give the URL without it", what)
	}
	return nil
}

// checkEndpoint says what is wrong with a --base-url, if anything.
func checkEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not an http(s) URL (%v); give the server's address, e.g. http://127.0.0.1:8000/v1", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an http(s) URL; give the server's address, e.g. http://127.0.0.1:8000/v1")
	}
	return nil
}

// readPrompt takes the prompt argument; "-" reads stdin.
func readPrompt(args []string, stdin io.Reader) (string, error) {
	if len(args) == 0 {
		return "", usageErr("no prompt given: pass it as an argument, or - to read it from stdin")
	}
	if len(args) > 1 {
		return "", usageErr("give the prompt as one argument (quote it); got %d arguments", len(args))
	}
	p := args[0]
	if p == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return "", usageErr("read the prompt from stdin: %v", err)
		}
		p = string(data)
	}
	if strings.TrimSpace(p) == "" {
		return "", usageErr("the prompt is blank; say what the agent should do")
	}
	return p, nil
}

// profiles loads the agent profiles for cwd, hot-reloaded when watch is
// set. When the file watcher cannot start (the system's inotify limits),
// the profiles are loaded once instead, with a warning that edits need a
// restart.
func profiles(ctx context.Context, home, cwd string, warn func(string), watch bool) (orchestrator.Profiles, error) {
	trust, err := agents.LoadTrust(home)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	userHome, _ := os.UserHomeDir()
	opts := agents.LoadOptions{Home: userHome, InkHome: home, ProjectRoot: agents.ProjectRoot(cwd), Trust: trust}
	if !watch {
		set := agents.Load(opts)
		agents.Announce(set, home, warn)
		return fixedProfiles{set}, nil
	}
	reg, err := agents.Watch(ctx, opts, nil, warn)
	if err == nil {
		return reg, nil
	}
	warn(fmt.Sprintf("%v; agent profiles are loaded once, so edits to them need a restart of ink", err))
	set := agents.Load(opts)
	agents.Announce(set, home, warn)
	return fixedProfiles{set}, nil
}

// fixedProfiles are profiles loaded once.
type fixedProfiles struct{ set *agents.Set }

// Current returns the profiles as loaded.
func (f fixedProfiles) Current() *agents.Set { return f.set }

// isTerminal reports whether f is a terminal (not merely a character
// device such as /dev/null).
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// interruptible returns a context cancelled by the first SIGINT/SIGTERM,
// or when stdoutGone is closed (nobody reads the output any more); the
// second signal calls kill. say writes ink's own lines to the user. stop
// releases the signal handler.
func interruptible(parent context.Context, stdoutGone <-chan struct{}, say func(string), kill func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case sig := <-ch:
				n++
				if n == 1 {
					say(firstSignalNote(sig, isTerminal(os.Stdin)))
					cancel()
				} else {
					say("killing every agent")
					kill()
				}
			case <-stdoutGone:
				stdoutGone = nil
				if ctx.Err() == nil {
					say("stdout was closed (its reader went away): cancelling every agent; each records how it stopped")
					cancel()
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel() }
}

// firstSignalNote says what the first SIGINT or SIGTERM does. Only a
// person at a terminal pressed Ctrl-C: a signal from elsewhere (an MCP
// client stopping its server, a supervisor) is named as it is.
func firstSignalNote(sig os.Signal, terminal bool) string {
	if sig == os.Interrupt && terminal {
		return "cancelling every agent (press Ctrl-C again to kill them)"
	}
	name := "SIGTERM"
	if sig == os.Interrupt {
		name = "SIGINT"
	}
	return fmt.Sprintf("cancelling every agent on %s, each records how it stopped (a second signal kills them)", name)
}

// survivePipeClose makes a write to a closed pipe fail with EPIPE instead
// of killing ink with SIGPIPE, so that a supervisor whose stdout reader
// went away (`ink run … | head -3`) still ends its agents, records them
// and cleans up. Workers are unaffected: a signal handled here is reset to
// the default in the processes ink starts.
func survivePipeClose() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// parseTokens reads the token count of flag (model.ParseTokens): 1500,
// 200k, 2M.
func parseTokens(flag, s string) (int64, error) {
	n, ok := model.ParseTokens(s)
	if !ok {
		return 0, usageErr("%s %q is not a token count; give a positive number such as 1500, 200k or 2M", flag, s)
	}
	return n, nil
}
