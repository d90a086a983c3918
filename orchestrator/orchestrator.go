// Package orchestrator owns the supervisor: it launches every agent (the
// main one and each child) as an ink worker process over ipc, answers the
// workers' task requests, composes task results and TaskRecords, and
// enforces the window of concurrent children, the depth limit, timeouts and
// hung-worker detection. It never runs a model or a tool itself, and it
// writes no agent transcript: workers write their own.
package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/secret"
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
	Cwd     string // the user's working directory (absolute)

	Binding model.Binding // the main agent's model

	MaxParallel int           // window of concurrent children across the tree; default 8
	MaxDepth    int           // deepest child depth; default 1
	TaskTimeout time.Duration // --task-timeout; 0 = default rule
	Interactive bool          // on a terminal: children have no default timeout
	Grace       time.Duration // cancel -> kill grace; default 10 s

	// HeartbeatInterval is the workers' lease heartbeat; default 1 s.
	HeartbeatInterval time.Duration

	Profiles Profiles // nil = no profiles
	Environ  []string // the host environment; the worker gets an allowlist of it
	// Secrets are the configured secrets (secret.FromEnviron of Environ when
	// nil): each worker gets its own binding's key in its attempt spec and
	// the fingerprints of the others, and the supervisor redacts them all
	// from what it writes.
	Secrets []secret.Secret
	Logger  *slog.Logger
	// Sink receives every event, in order; it is called from many
	// goroutines but never concurrently.
	Sink func(Event)
}

// Orchestrator supervises one run (`ink run` or `ink task`). It is safe for
// concurrent use; Close (or KillAll) cleans up every worker it started.
type Orchestrator struct {
	cfg   Config
	slots chan struct{}

	sinkMu sync.Mutex
	seq    uint64

	liveMu sync.Mutex
	live   map[*ipc.Client]bool
	killed bool

	usage *usageBook

	env    map[string]string // cfg.Environ by name
	redact *secret.Redactor
}

// New checks cfg and returns an Orchestrator.
func New(cfg Config) (*Orchestrator, error) {
	if !filepath.IsAbs(cfg.InkHome) {
		return nil, fmt.Errorf("orchestrator: INK_HOME %q must be an absolute path", cfg.InkHome)
	}
	if !filepath.IsAbs(cfg.Cwd) {
		return nil, fmt.Errorf("orchestrator: cwd %q must be an absolute path", cfg.Cwd)
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("orchestrator: find the ink binary: %w", err)
		}
		cfg.Exe = exe
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
	env := make(map[string]string, len(cfg.Environ))
	for _, kv := range cfg.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return &Orchestrator{
		cfg: cfg, slots: make(chan struct{}, cfg.MaxParallel), live: map[*ipc.Client]bool{}, usage: &usageBook{},
		env: env, redact: secret.NewRedactor(cfg.Secrets, nil),
	}, nil
}

// getenv reads the host environment the orchestrator was configured with.
func (o *Orchestrator) getenv(k string) string { return o.env[k] }

// arm gives spec the secrets of its worker: its own binding's credentials
// by value, every other configured secret by fingerprint only.
func (o *Orchestrator) arm(spec *ipc.AttemptSpec) {
	spec.Credentials = providers.Credentials(spec.Binding, o.getenv)
	var others []secret.Secret
	for _, s := range o.cfg.Secrets {
		if _, own := spec.Credentials[s.Name]; !own {
			others = append(others, s)
		}
	}
	spec.Redact = secret.Fingerprints(others)
}

// track registers a live worker so KillAll can reach it; it reports false
// when KillAll already ran (the worker must not be used).
func (o *Orchestrator) track(c *ipc.Client) bool {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	if o.killed {
		return false
	}
	o.live[c] = true
	return true
}

func (o *Orchestrator) untrack(c *ipc.Client) {
	o.liveMu.Lock()
	defer o.liveMu.Unlock()
	delete(o.live, c)
}

// KillAll kills every worker's process group at once (the second Ctrl-C)
// and refuses to start new ones.
func (o *Orchestrator) KillAll() {
	o.liveMu.Lock()
	o.killed = true
	live := make([]*ipc.Client, 0, len(o.live))
	for c := range o.live {
		live = append(live, c)
	}
	o.liveMu.Unlock()
	for _, c := range live {
		c.Kill()
	}
}

// acquireSlot waits for room in the window; it emits task.queued when the
// child has to wait. The returned func gives the slot back.
func (o *Orchestrator) acquireSlot(ctx context.Context, label, sessionID string, fields map[string]any) (func(), error) {
	select {
	case o.slots <- struct{}{}:
		return func() { <-o.slots }, nil
	default:
	}
	o.emit(label, sessionID, "task.queued", fields)
	select {
	case o.slots <- struct{}{}:
		return func() { <-o.slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Outcome statuses of an agent's attempt, as reported by RunResult and
// TaskResult ("rejected" is a TaskRecord status: nothing was launched).
const (
	StatusCompleted   = ipc.StatusCompleted
	StatusAborted     = ipc.StatusAborted
	StatusTimeout     = ipc.StatusTimeout
	StatusCrash       = ipc.StatusCrash
	StatusInterrupted = ipc.StatusInterrupted
	StatusRefused     = ipc.StatusRefused
	StatusRejected    = "rejected"
)

// ProtocolVersion is the worker wire's protocol version.
const ProtocolVersion = ipc.ProtocolVersion
