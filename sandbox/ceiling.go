package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Ceiling is the most a run lets bash do: what the user granted on the
// command line. A profile may narrow it, never widen it (Admit).
type Ceiling struct {
	// Mode is --sandbox, or WorkspaceWrite when it was not given.
	Mode Mode
	// Explicit says the user named Mode (--sandbox).
	Explicit bool
	// Network is --network: bash may reach the network.
	Network bool
	// NetworkExplicit says the user gave --network, with either value.
	NetworkExplicit bool
	// Writable are the --writable directories, as CheckWritable returned
	// them: the only directories outside Project a profile may name.
	Writable []string
	// Project is the project root (absolute, symlinks resolved): a
	// profile's writable: directories must lie inside it.
	Project string
	// GitDirs are the project's git directories (Checkout.GitDirs): no
	// profile's writable: directory may hold one or lie inside one.
	GitDirs []string
}

// Ask is the sandbox one agent profile asks for.
type Ask struct {
	// Source is the profile's file, for messages.
	Source string
	// Mode is the profile's sandbox:, "" when absent.
	Mode Mode
	// Network is the profile's network:, nil when absent.
	Network *bool
	// Writable are the profile's writable: directories, absolute.
	Writable []string
	// Reloaded says the file was loaded while the run was going (written
	// then, by an agent or anyone else): such a profile may ask for no
	// sandbox at all.
	Reloaded bool
}

// Empty reports whether a asks for nothing about the sandbox.
func (a Ask) Empty() bool { return a.Mode == "" && a.Network == nil && len(a.Writable) == 0 }

// Grant is the sandbox one agent runs under, before the machine has its
// say (Decide, DecideNetwork).
type Grant struct {
	// Mode is the agent's mode; Explicit says the user or the profile
	// named it, rather than it being the default.
	Mode     Mode
	Explicit bool
	// Network says bash may reach the network; NetworkExplicit says the
	// cut (when it is one) was asked for by name.
	Network         bool
	NetworkExplicit bool
	// Writable are the directories bash may write besides the root:
	// --writable, then the profile's.
	Writable []string
}

// Need is one thing a profile asks for beyond a ceiling, and the flag
// that would allow it.
type Need struct {
	// What is the field as the profile wrote it, e.g. "sandbox: danger-full-access".
	What string
	// Why it is beyond the ceiling.
	Why string
	// Flag is the command-line flag that allows it; "" when none does.
	Flag string
}

func (n Need) String() string {
	if n.Flag == "" {
		return fmt.Sprintf("%s %s", n.What, n.Why)
	}
	return fmt.Sprintf("%s %s; run ink with %s to allow it", n.What, n.Why, n.Flag)
}

// Needs lists what a asks for beyond c, in the order of the fields: a
// mode wider than c.Mode, network: true without --network (or
// danger-full-access), a writable: directory outside the project (unless
// given with --writable) or holding or inside its git directory, and for
// a profile loaded during the run, any sandbox field at all. nil when a
// fits within c.
func (c Ceiling) Needs(a Ask) []Need {
	if a.Reloaded && !a.Empty() {
		return []Need{{What: "a sandbox field (sandbox:, writable: or network:)",
			Why: "in a profile written while the run was going, which may not set the sandbox; restart ink to load it as a profile you trust"}}
	}
	var needs []Need
	if a.Mode != "" && a.Mode.Wider(c.Mode) {
		needs = append(needs, Need{What: "sandbox: " + string(a.Mode),
			Why: fmt.Sprintf("is wider than the run's sandbox, %s (a profile may narrow the sandbox, never widen it)", c.Mode), Flag: "--sandbox " + string(a.Mode)})
	}
	if a.Network != nil && *a.Network && !c.networkAllowed() {
		needs = append(needs, Need{What: "network: true", Why: "asks for the network, which the run does not give bash", Flag: "--network"})
	}
	for _, dir := range a.Writable {
		if n, ok := c.writableNeed(dir); !ok {
			needs = append(needs, n)
		}
	}
	return needs
}

// networkAllowed reports whether c lets bash reach the network.
func (c Ceiling) networkAllowed() bool { return c.Network || c.Mode == DangerFullAccess }

// writableNeed checks one writable: directory of a profile.
func (c Ceiling) writableNeed(dir string) (Need, bool) {
	what := "writable: " + dir
	real, err := CheckWritable(dir)
	if err != nil {
		return Need{What: what, Why: "cannot be used: " + err.Error()}, false
	}
	if slices.Contains(c.Writable, real) {
		return Need{}, true
	}
	if c.Project == "" || !within(c.Project, real) {
		project := c.Project
		if project == "" {
			project = "(none)"
		}
		return Need{What: what, Why: fmt.Sprintf("lies outside the project %s, and a profile may only name directories inside it", project),
			Flag: "--writable " + real}, false
	}
	for _, g := range c.GitDirs {
		if within(g, real) || within(real, g) {
			return Need{What: what, Why: fmt.Sprintf("holds or lies inside the repository's git directory %s, which bash may not write", g)}, false
		}
	}
	return Need{}, true
}

// Admit settles the sandbox of an agent whose profile asks for a (the
// zero Ask without a profile) under c. def is the agent's default mode
// (DefaultMode of its tools). The profile's mode wins over --sandbox and
// the default, and its network: over --network, as long as it stays
// within c; anything beyond c is an error that names the profile, what it
// asked for and the flag that would allow it. The profile's writable:
// directories are returned with symlinks resolved.
func (c Ceiling) Admit(a Ask, def Mode) (Grant, error) {
	if needs := c.Needs(a); len(needs) > 0 {
		parts := make([]string, len(needs))
		for i, n := range needs {
			parts[i] = n.String()
		}
		return Grant{}, fmt.Errorf("agent profile %s: %s", a.Source, strings.Join(parts, "; "))
	}
	g := Grant{Mode: c.Mode, Explicit: c.Explicit, Writable: slices.Clone(c.Writable)}
	switch {
	case a.Mode != "":
		g.Mode, g.Explicit = a.Mode, true
	case !c.Explicit:
		g.Mode = def
		if g.Mode.Wider(c.Mode) {
			g.Mode = c.Mode
		}
	}
	g.Network = c.Network
	cutNamed := c.NetworkExplicit
	if a.Network != nil {
		g.Network, cutNamed = *a.Network, true
	}
	g.NetworkExplicit = !g.Network && (cutNamed || g.Explicit)
	for _, dir := range a.Writable {
		real, _ := CheckWritable(dir) // Needs checked it
		if !slices.Contains(g.Writable, real) {
			g.Writable = append(g.Writable, real)
		}
	}
	return g, nil
}

// within reports whether path p is dir or lies below it; both clean and
// absolute.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}
