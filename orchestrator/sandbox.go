package orchestrator

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/session"
)

// SandboxRefusal is why an agent's sandbox was refused: a profile asked
// for more than the run's ceiling, or this machine cannot enforce a mode,
// network cut or read-only git directory asked for by name. The input was
// good; ink will not run the agent as asked.
type SandboxRefusal struct{ Err error }

func (e *SandboxRefusal) Error() string { return e.Err.Error() }
func (e *SandboxRefusal) Unwrap() error { return e.Err }

// bashSandbox is the sandbox an agent's bash runs under.
type bashSandbox struct {
	decision sandbox.Decision
	explicit bool
	writable []string
	// network is whether bash reaches the network; networkAsked whether
	// it was granted (--network, network: true), as the launch record
	// keeps it; networkExplicit says its cut was asked for by name.
	network         sandbox.NetworkDecision
	networkAsked    bool
	networkExplicit bool
	// gitWrites is --allow-git-writes, for an agent in the user's
	// checkout; namespaces how its bash gets the mount namespace that
	// keeps the checkout's git state read-only.
	gitWrites  bool
	namespaces sandbox.Namespaces
}

// Ceiling is the most a run with cfg lets bash do: its Sandbox
// (workspace-write when empty), Network and Writable, with the project (of
// cfg.Cwd) that a profile's writable: directories must stay in and the git
// directories they must keep out of. Every agent's sandbox is admitted
// under it; `ink agents show` says what a profile needs beyond it.
func Ceiling(cfg Config) sandbox.Ceiling {
	c := sandbox.Ceiling{
		Mode: cfg.Sandbox, Explicit: cfg.Sandbox != "",
		Network: cfg.Network, NetworkExplicit: cfg.NetworkExplicit,
		Writable: cfg.Writable,
	}
	if c.Mode == "" {
		c.Mode = sandbox.WorkspaceWrite
	}
	project := agents.ProjectRoot(cfg.Cwd)
	if real, err := filepath.EvalSymlinks(project); err == nil {
		project = real
	}
	c.Project = project
	if co, ok := sandbox.FindCheckout(project); ok {
		c.GitDirs = co.GitDirs()
	}
	return c
}

// sandboxFor settles the bash sandbox of an agent with tools and profile
// prof (nil for none) whose root is root ("" for a worktree child, whose
// git state is confined another way). --sandbox, --network and
// --writable are a ceiling: the profile's sandbox:, network: and
// writable: narrow it, and asking for more is an error that names the
// flag that would allow it (Ceiling.Admit). A mode or network cut asked
// for by name that this machine cannot enforce is an error that says why;
// a defaulted one is dropped with one warning per run. So is keeping the
// checkout's git directory read-only, for an agent that works in the
// user's checkout under workspace-write.
func (o *Orchestrator) sandboxFor(label, sessionID string, tools []string, prof *agents.Profile, root string) (bashSandbox, error) {
	b, err := o.settleSandbox(label, sessionID, tools, prof, root)
	if err != nil {
		return b, &SandboxRefusal{Err: err}
	}
	return b, nil
}

// settleSandbox is sandboxFor without the error's type.
func (o *Orchestrator) settleSandbox(label, sessionID string, tools []string, prof *agents.Profile, root string) (bashSandbox, error) {
	g, err := Ceiling(o.cfg).Admit(ProfileAsk(prof), sandbox.DefaultMode(tools))
	if err != nil {
		return bashSandbox{}, err
	}
	b := bashSandbox{explicit: g.Explicit, writable: g.Writable, networkAsked: g.Network, networkExplicit: g.NetworkExplicit}
	d, err := sandbox.Decide(g.Mode, g.Explicit, o.landlock)
	if err != nil {
		return b, err
	}
	if d.Warning != "" {
		o.sandboxWarned.Do(func() { o.pub.emit(label, sessionID, event.Warning{Text: d.Warning}) })
	}
	b.decision = d
	if b.network, err = sandbox.DecideNetwork(d, g.Network, g.NetworkExplicit, o.network); err != nil {
		return b, err
	}
	if w := b.network.Warning; w != "" {
		o.netWarned.Do(func() { o.pub.emit(label, sessionID, event.Warning{Text: w}) })
	}
	if d.Effective != sandbox.WorkspaceWrite || root == "" {
		return b, nil
	}
	if _, ok := sandbox.AgentCheckout(root); !ok {
		return b, nil
	}
	b.gitWrites = o.cfg.AllowGitWrites
	ns, nsErr := o.namespaces()
	var unavailable *sandbox.NamespacesUnavailableError
	if nsErr == nil || !errors.As(nsErr, &unavailable) {
		// Without an ink binary to probe with, no worker starts either,
		// and that failure is the one to report.
		b.namespaces = ns
		return b, nil
	}
	what := "bash may write the repository's git directory (hooks and config included)"
	if b.gitWrites {
		what = "bash may write the repository's git config and hooks too"
	}
	if g.Explicit {
		return b, fmt.Errorf("cannot run bash in the %s sandbox: %v, so %s; "+
			"enable them, or run without --sandbox %s (and without a profile's sandbox:) to accept that with a warning",
			d.Effective, nsErr, what, d.Effective)
	}
	o.gitWarned.Do(func() {
		o.pub.emit(label, sessionID, event.Warning{Text: fmt.Sprintf("%v; %s", nsErr, what)})
	})
	return b, nil
}

// ProfileAsk is the sandbox a profile asks for (nothing without one).
func ProfileAsk(prof *agents.Profile) sandbox.Ask {
	if prof == nil {
		return sandbox.Ask{}
	}
	return sandbox.Ask{Source: prof.Source, Mode: sandbox.Mode(prof.Sandbox), Network: prof.Network,
		Writable: prof.Writable, Reloaded: prof.Reloaded}
}

// apply puts the sandbox into an attempt spec.
func (b bashSandbox) apply(spec *ipc.AttemptSpec) {
	spec.Sandbox, spec.SandboxExplicit, spec.Writable = string(b.decision.Effective), b.explicit, b.writable
	spec.Network, spec.NetworkExplicit = b.network.Allowed, b.networkExplicit
	spec.AllowGitWrites, spec.Namespaces = b.gitWrites, string(b.namespaces)
}

// ref is the sandbox as a launch record keeps it: the mode asked for and
// whether the network was, so that a resume on a machine or with flags
// that would change them is told.
func (b bashSandbox) ref() *session.SandboxRef {
	network := b.networkAsked
	return &session.SandboxRef{Mode: string(b.decision.Requested), Writable: b.writable, Network: &network, GitWrites: b.gitWrites}
}

// sandboxDrift says how a resume's sandbox differs from the launch's, or
// "" when it does not (or the launch predates the sandbox, or the
// network's place in it).
func sandboxDrift(launched *session.SandboxRef, now bashSandbox) string {
	if launched == nil {
		return ""
	}
	if launched.Mode != string(now.decision.Requested) {
		return fmt.Sprintf("launched with bash under the %s sandbox, would now run under %s; resume it with --sandbox %s", launched.Mode, now.decision.Requested, launched.Mode)
	}
	if !slices.Equal(launched.Writable, now.writable) {
		return fmt.Sprintf("launched with the writable directories [%s], would now get [%s]; resume it with the same --writable directories", strings.Join(launched.Writable, ", "), strings.Join(now.writable, ", "))
	}
	if launched.Network != nil {
		was, is := *launched.Network, now.networkAsked
		switch {
		case was && !is:
			return "launched with the network for bash, would now run without it; resume it with --network"
		case !was && is:
			return "launched with bash cut off the network, would now reach it; resume it without --network (or with --network=false)"
		}
	}
	if launched.GitWrites != now.gitWrites {
		if launched.GitWrites {
			return "launched with the checkout's git directory writable by bash, would now have it read-only; resume it with --allow-git-writes"
		}
		return "launched with the checkout's git directory read-only for bash, would now have it writable; resume it without --allow-git-writes"
	}
	return ""
}
