// Package orchestrator is ink's supervisor. It launches every agent — the
// main one and each child — as a worker through a [Launcher], answers the
// workers' task requests, validates resumes, composes task results and
// TaskRecords, and enforces the window of concurrent children, the depth
// limit, timeouts, cancellation, liveness from each worker's heartbeats and
// hung-worker detection. It never runs a model or a tool itself, and it
// writes no agent transcript: workers write their own, except for the end
// entry of an attempt whose worker was lost (no heartbeat for 3 intervals +
// 1 s: liveness.go), which it writes after it has killed the worker. The
// only other transcripts it writes are shell sessions: the parent that `ink
// task` records its task call in, and the session of each `ink mcp`
// connection — both a [Parent].
//
// Every parent attempt keeps a registry of its children (children.go): a
// task call with background: true is answered as soon as its child passed
// every check, and the child's answer waits there, with its live status,
// until task_wait collects it (background.go); children still running when
// their parent's attempt ends are cancelled with it. A [Parent] is the same
// for a front end: it runs task calls (one child, a batch at once, or
// children in the background), reports, waits and cancels, and records it
// all in its own session (parent.go).
//
// Beside the Launcher, what the supervisor reads of worker-owned state
// (transcripts, attempt records, leases) goes through a [Store] and the
// worktree children's workspaces through [Workspaces] (store.go,
// workspace.go); both default to this machine's files and git. The
// launchers themselves live outside: launcher/local (the default) and
// launcher/command (--launcher exec:COMMAND, chosen per child in
// remote.go).
//
// The package is split by job: supervision (launcher.go, pool.go,
// supervise.go, liveness.go, window.go, publish.go, remote.go), task and resume (task.go,
// resume.go, finish.go, result.go, recover.go), children and front-end
// parents (children.go, background.go, parent.go, shell.go, run.go) and the
// prompts children are given (system.go, context.go).
package orchestrator

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/launcher/local"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/session"
)

// DefaultGrace is how long a cancelled worker may take to stop before its
// process group is killed.
const DefaultGrace = 10 * time.Second

// DefaultHeadlessTimeout bounds a child when nothing else does and ink is
// not attached to a terminal.
const DefaultHeadlessTimeout = 60 * time.Minute

// Profiles gives the current agent profiles; *agents.Registry implements it
// (hot reload), and a fixed set works too.
type Profiles interface {
	Current() *agents.Set
}

// Config configures an Orchestrator. Zero values take the defaults noted.
type Config struct {
	InkHome string // required: $INK_HOME
	Exe     string // the ink binary to run workers from; default os.Executable()
	// Command is how the user runs ink from their shell, for the commands
	// results suggest at a shell (`ink task --resume …`); default "ink".
	Command string
	Cwd     string // the user's working directory (absolute)

	Binding model.Binding // the main agent's model

	MaxParallel int           // window of concurrent children across the tree; default 8
	MaxDepth    int           // deepest child depth; default 1
	TaskTimeout time.Duration // --task-timeout; 0 = default rule
	Interactive bool          // on a terminal: children have no default timeout
	Grace       time.Duration // cancel -> kill grace; default 10 s

	// HeartbeatInterval is the workers' lease heartbeat; default 1 s.
	HeartbeatInterval time.Duration

	// MaxTurns caps every agent's model turns per attempt (--max-turns; 0:
	// DefaultMaxTurns); a capped agent gets one last turn without tools to
	// answer.
	MaxTurns int
	// ContextWindow overrides every model's context window in tokens
	// (--context-window; 0: each model's own).
	ContextWindow int64
	// Budget is the tokens the whole tree may spend (--budget; 0: no
	// limit). Agents land softly as it nears its end; then no more
	// children start.
	Budget int64

	// Sandbox is the bash sandbox mode the user asked for (--sandbox):
	// the ceiling of every agent, which a profile may narrow but never
	// widen; empty means workspace-write as the ceiling, and each agent's
	// profile or default decides within it. Writable lists extra
	// directories bash may write (--writable), absolute: the only ones
	// outside the project a profile may name too.
	Sandbox  sandbox.Mode
	Writable []string
	// Network lets bash reach the network (--network); NetworkExplicit
	// says --network was given, with either value (--network=false asks
	// for the cut by name).
	Network         bool
	NetworkExplicit bool
	// AllowGitWrites lets bash of agents working in the user's checkout
	// write its git directory, but for config and hooks
	// (--allow-git-writes).
	AllowGitWrites bool

	Profiles Profiles // nil = no profiles
	Environ  []string // the host environment; the worker gets an allowlist of it
	// Secrets are the configured secrets (secret.FromEnviron of Environ when
	// nil): each worker gets its own binding's key in its attempt spec and
	// the fingerprints of the others, and the supervisor redacts them all
	// from what it writes.
	Secrets []secret.Secret
	Logger  *slog.Logger
	// Launcher starts workers; nil means a fresh local process per attempt
	// over go-plugin.
	Launcher Launcher
	// RemoteCommand, when set (--launcher exec:COMMAND), runs every child
	// whose profile does not say `launcher: local` on a worker that shares
	// no disk with this supervisor, reached through COMMAND (which runs
	// `ink worker --remote`); each such child works in a worktree.
	// RemoteLauncher replaces the exec launcher: launcher/kube's for
	// --launcher kube, a fake in tests.
	RemoteCommand  string
	RemoteLauncher Launcher
	// RemoteKind names the remote launcher's kind: KubeLauncher for
	// launcher/kube's (--launcher kube), "" otherwise.
	RemoteKind string
	// RemoteIncludes ships a remote child's .worktreeinclude files too
	// (--ship-includes); they often hold secrets, so by default they stay.
	RemoteIncludes bool
	// WarmWorkers, when above 0, keeps up to that many workers started
	// ahead of the children that will need them (a warm pool; see
	// DefaultWarmWorkers), sized to what the parents are about to start
	// (see warmPool), refilled in the background, so that a child skips
	// the process start. The main agent of a run takes no pool worker,
	// and the pool starts with its first task call, so that a run that
	// never delegates never pays for it. It pays
	// only in a supervisor that starts children while it runs — `ink run`
	// whose main agent delegates, a server — not in a one-shot `ink task`.
	// It needs a launcher that can start idle workers (the default one
	// can). The pool is shut down when Run returns, by Close and by
	// KillAll.
	WarmWorkers int
	// FirstWorker says the front end launches one agent locally at once
	// (`ink run`'s main agent, `ink task`'s child): New starts a worker
	// for it in the background, so that its process start runs beside
	// the front end's own work (see firstWorker). An agent that never
	// launches leaves it to Close. It needs a launcher that can start
	// idle workers (the default one can); it is not used with
	// RemoteCommand or RemoteLauncher, whose children may not run here.
	FirstWorker bool
	// Store is what the supervisor reads of the state its workers own
	// (transcripts, attempt records, leases) and the transcripts it writes
	// itself (a lost attempt's end, a shell session); nil is INK_HOME's
	// files, written through FS.
	Store Store
	// Workspaces prepares and settles worktree children; nil is package
	// worktree on this machine's git.
	Workspaces Workspaces
	// FS is what the supervisor's own durable files (a shell session and
	// its lease) are written through; nil is the real filesystem. Tests
	// pass a crashing one.
	FS durable.FS
	// Sink receives every event, in order; it is called from many
	// goroutines but never concurrently.
	Sink func(event.Envelope)
}

// Orchestrator supervises one run (`ink run` or `ink task`). It is safe for
// concurrent use; every worker it starts is ended before Run or Task
// returns, and KillAll ends them at once.
type Orchestrator struct {
	cfg      Config
	launcher Launcher
	// remote launches remote attempts; nil without --launcher exec:….
	remote Launcher
	store  Store      // cfg.Store or the files of INK_HOME
	ws     Workspaces // cfg.Workspaces or package worktree
	pool   *warmPool  // nil without WarmWorkers
	// first is the first agent's worker, started by New (nil without
	// Config.FirstWorker).
	first  *firstWorker
	window *window
	pub    publisher
	live   liveSet
	usage  usageBook
	budget treeBudget

	env    map[string]string // cfg.Environ by name
	redact *secret.Redactor

	// landlock is what sandbox.Check said, once; sandboxWarned makes its
	// warning a once-per-run affair, and so do netWarned and gitWarned
	// for the network's and the git directory's.
	landlock      error
	sandboxWarned sync.Once
	netWarned     sync.Once
	gitWarned     sync.Once
	// network is what sandbox.CheckNetwork said, once.
	network error
	// namespaces finds, once, how bash gets the mount namespace that keeps
	// the checkout's git state read-only (sandbox.ProbeNamespaces).
	namespaces func() (sandbox.Namespaces, error)
	// probing holds namespaces run ahead (probeAhead) until it is done.
	probing sync.WaitGroup
}

// New checks cfg and returns an Orchestrator.
func New(cfg Config) (*Orchestrator, error) {
	if !filepath.IsAbs(cfg.InkHome) {
		return nil, fmt.Errorf("orchestrator: INK_HOME %q must be an absolute path", cfg.InkHome)
	}
	if !filepath.IsAbs(cfg.Cwd) {
		return nil, fmt.Errorf("orchestrator: cwd %q must be an absolute path", cfg.Cwd)
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = 8
	}
	if cfg.MaxDepth < 0 {
		return nil, fmt.Errorf("orchestrator: --max-depth must be 0 or more")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Secrets == nil {
		cfg.Secrets = secret.FromEnviron(cfg.Environ)
	}
	launcher := cfg.Launcher
	if launcher == nil {
		exe := cfg.Exe
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("orchestrator: find the ink binary: %w", err)
			}
		}
		launcher = local.New(exe, cfg.Environ, cfg.Logger)
	}
	env := make(map[string]string, len(cfg.Environ))
	for _, kv := range cfg.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	o := &Orchestrator{
		cfg: cfg, launcher: launcher, window: newWindow(cfg.MaxParallel),
		env: env, redact: secret.NewRedactor(cfg.Secrets, nil), landlock: sandbox.Check(),
		network: sandbox.CheckNetwork(),
	}
	o.store, o.ws = cfg.Store, cfg.Workspaces
	if o.store == nil {
		o.store = fileStore{fs: cfg.FS, interval: cfg.HeartbeatInterval}
	}
	if o.ws == nil {
		o.ws = gitWorkspaces{}
	}
	o.remote = cfg.RemoteLauncher
	if o.remote == nil && cfg.RemoteCommand != "" {
		o.remote = command.New(command.Config{Command: cfg.RemoteCommand, Environ: cfg.Environ, Logger: cfg.Logger, Includes: cfg.RemoteIncludes, Warn: o.Warn})
	}
	o.namespaces = sync.OnceValues(func() (sandbox.Namespaces, error) {
		exe := cfg.Exe
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return sandbox.NoNamespaces, fmt.Errorf("find the ink binary: %w", err)
			}
		}
		return sandbox.ProbeNamespaces(exe)
	})
	if starter, ok := launcher.(ipc.IdleStarter); ok && cfg.WarmWorkers > 0 {
		o.pool = newWarmPool(launcher, starter, cfg.InkHome, cfg.Cwd, cfg.WarmWorkers, o.window.freeSlots, o.window.expectedCount, cfg.Logger)
		o.launcher = o.pool
		o.window.onFree = o.pool.nudge
	}
	if starter, ok := launcher.(ipc.IdleStarter); ok && cfg.FirstWorker && o.remote == nil {
		o.first = startFirstWorker(starter, cfg.InkHome, cfg.Cwd)
	}
	if pl, ok := launcher.(*local.Launcher); ok {
		pl.Warn = func(text string) { o.Warn("", text) }
	}
	o.pub.sink = cfg.Sink
	o.budget.limit = cfg.Budget
	return o, nil
}

// getenv reads the host environment the orchestrator was configured with.
func (o *Orchestrator) getenv(k string) string { return o.env[k] }

// arm gives spec, as its worker is launched, what only the launch knows:
// the tree's budget and what it has left, the worker's window over one
// message's calls, and what it needs to reach its provider and nothing
// more — its own binding's credentials by value, the provider settings set
// on the host (the stall limits), every other configured secret by
// fingerprint only.
func (o *Orchestrator) arm(spec *ipc.AttemptSpec) {
	if o.budget.limit > 0 {
		spec.Budget, spec.BudgetRemaining = o.budget.limit, o.budget.remaining()
	}
	// The worker's own window over one message's safe calls is at least
	// the tree's, so every task call of a message reaches the supervisor,
	// which queues what the tree's window cannot take yet (task.queued).
	spec.MaxParallel = max(o.cfg.MaxParallel, loopWindow)
	spec.Credentials = providers.Credentials(spec.Binding, o.getenv)
	spec.Settings = providers.WorkerSettings(o.getenv)
	var others []secret.Secret
	for _, s := range o.cfg.Secrets {
		if _, own := spec.Credentials[s.Name]; !own {
			others = append(others, s)
		}
	}
	spec.Redact = secret.Fingerprints(others)
}

// KillAll kills every worker's process group at once (the second Ctrl-C)
// and refuses to start new ones.
func (o *Orchestrator) KillAll() {
	o.Close()
	o.live.killAll()
}

// Close ends the idle workers of the warm pool (Config.WarmWorkers) and the
// first worker (Config.FirstWorker) if no agent took it, waits for them
// and for the sandbox check run ahead (probeAhead); running workers are
// not touched. Call it when the front end stops starting children; Run
// calls it when it returns. Launching after Close starts fresh workers.
// It is idempotent.
func (o *Orchestrator) Close() {
	o.first.close()
	o.probing.Wait()
	if o.pool != nil {
		o.pool.close()
	}
}

// liveSet tracks the running workers so that KillAll reaches them. It is
// safe for concurrent use.
type liveSet struct {
	mu     sync.Mutex
	m      map[Worker]bool
	killed bool
}

// add registers w; it reports false when KillAll already ran (w must then
// be killed, not used).
func (l *liveSet) add(w Worker) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		return false
	}
	if l.m == nil {
		l.m = map[Worker]bool{}
	}
	l.m[w] = true
	return true
}

func (l *liveSet) remove(w Worker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, w)
}

// each calls f for every running worker.
func (l *liveSet) each(f func(Worker)) {
	l.mu.Lock()
	live := make([]Worker, 0, len(l.m))
	for w := range l.m {
		live = append(live, w)
	}
	l.mu.Unlock()
	for _, w := range live {
		f(w)
	}
}

func (l *liveSet) killAll() {
	l.mu.Lock()
	l.killed = true
	live := make([]Worker, 0, len(l.m))
	for w := range l.m {
		live = append(live, w)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range live {
		wg.Add(1)
		go func() { defer wg.Done(); w.Kill() }()
	}
	wg.Wait()
}

// usageBook sums usage per agent label for run.end. It is safe for
// concurrent use.
type usageBook struct {
	mu sync.Mutex
	m  map[string]model.Usage
}

func (u *usageBook) add(label string, v model.Usage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]model.Usage{}
	}
	u.m[label] = u.m[label].Add(v)
}

func (u *usageBook) snapshot() map[string]model.Usage {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]model.Usage, len(u.m))
	for k, v := range u.m {
		out[k] = v
	}
	return out
}

// Status is how an agent's attempt or task ended (session.Status): one
// type for the transcript, the wire and every result.
type Status = session.Status

// The statuses, as reported by RunResult and TaskResult (aliases of
// session's: "rejected" is a TaskRecord status, nothing was launched;
// "refused" is a worker's refusal of an attempt).
const (
	StatusCompleted   = session.StatusCompleted
	StatusAborted     = session.StatusAborted
	StatusTimeout     = session.StatusTimeout
	StatusCrash       = session.StatusCrash
	StatusInterrupted = session.StatusInterrupted
	StatusRefused     = session.StatusRefused
	StatusRejected    = session.StatusRejected
	// StatusStarted is the Status of a TaskResult whose child was started
	// in the background: its outcome comes later, through task_wait.
	StatusStarted = session.StatusStarted
)

// ProtocolVersion is the worker wire's protocol version.
const ProtocolVersion = ipc.ProtocolVersion
