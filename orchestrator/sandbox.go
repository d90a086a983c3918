package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/session"
)

// bashSandbox is the sandbox an agent's bash runs under.
type bashSandbox struct {
	decision sandbox.Decision
	explicit bool
	writable []string
}

// sandboxFor settles the bash sandbox of an agent with tools and profile
// prof (nil for none): --sandbox when given, else the profile's sandbox:,
// else the default for its tools; --writable and the profile's writable:
// add directories. A mode asked for by name that this machine cannot
// enforce is an error that says why; a defaulted one is dropped with one
// warning per run.
func (o *Orchestrator) sandboxFor(label, sessionID string, tools []string, prof *agents.Profile) (bashSandbox, error) {
	b := bashSandbox{writable: slices.Clone(o.cfg.Writable)}
	mode := o.cfg.Sandbox
	b.explicit = mode != ""
	pmode, pwritable := profileSandbox(prof)
	if mode == "" && pmode != "" {
		mode, b.explicit = sandbox.Mode(pmode), true
	}
	b.writable = append(b.writable, pwritable...)
	if mode == "" {
		mode = sandbox.DefaultMode(tools)
	}
	d, err := sandbox.Decide(mode, b.explicit, o.landlock)
	if err != nil {
		return b, err
	}
	if d.Warning != "" {
		o.sandboxWarned.Do(func() { o.pub.emit(label, sessionID, event.Warning{Text: d.Warning}) })
	}
	b.decision = d
	return b, nil
}

// apply puts the sandbox into an attempt spec.
func (b bashSandbox) apply(spec *ipc.AttemptSpec) {
	spec.Sandbox, spec.SandboxExplicit, spec.Writable = string(b.decision.Effective), b.explicit, b.writable
}

// ref is the sandbox as a launch record keeps it: the mode asked for, so
// that a resume on a machine or with flags that would change it is told.
func (b bashSandbox) ref() *session.SandboxRef {
	return &session.SandboxRef{Mode: string(b.decision.Requested), Writable: b.writable}
}

// sandboxDrift says how a resume's sandbox differs from the launch's, or
// "" when it does not (or the launch predates the sandbox).
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
	return ""
}

// profileSandbox is the sandbox a profile asks for: its sandbox: mode and
// writable: directories (none without a profile).
func profileSandbox(prof *agents.Profile) (string, []string) {
	if prof == nil {
		return "", nil
	}
	return prof.Sandbox, prof.Writable
}
