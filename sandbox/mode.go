package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// Mode is how far bash and everything it starts are confined. The names
// are Codex's, so users recognise them. The zero value is no mode at all:
// ParseMode never returns it, and callers treat it as "not set".
type Mode string

// The sandbox modes.
const (
	// ReadOnly lets commands read every file and write only a private
	// temporary directory ($TMPDIR), made fresh for each command.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite adds the agent's root (its worktree, for a worktree
	// child), the user's cache directory and any extra writable
	// directories to what ReadOnly may write. It is the default.
	WorkspaceWrite Mode = "workspace-write"
	// DangerFullAccess runs commands unconfined: they may write anywhere
	// the user may.
	DangerFullAccess Mode = "danger-full-access"
)

// Modes returns every mode, from the most to the least confined.
func Modes() []Mode { return []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess} }

// String returns the mode's name as users type it.
func (m Mode) String() string { return string(m) }

// Confined reports whether m restricts anything: true for ReadOnly and
// WorkspaceWrite.
func (m Mode) Confined() bool { return m == ReadOnly || m == WorkspaceWrite }

// Wider reports whether m lets commands do more than other: ReadOnly is
// narrower than WorkspaceWrite, which is narrower than DangerFullAccess.
// A value that is not a mode counts as wider than every mode, so that a
// check built on Wider fails closed.
func (m Mode) Wider(other Mode) bool { return m.rank() > other.rank() }

// rank orders the modes from the most to the least confined.
func (m Mode) rank() int {
	if i := slices.Index(Modes(), m); i >= 0 {
		return i
	}
	return len(Modes())
}

// ParseMode reads a mode name as a user types it (in a flag or a profile).
// Surrounding spaces and letter case are forgiven; anything else that is
// not a mode name is an error that lists the modes.
func ParseMode(s string) (Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if m := Mode(name); slices.Contains(Modes(), m) {
		return m, nil
	}
	if name == "" {
		return "", fmt.Errorf("sandbox mode is empty; pick one of %s", modeList())
	}
	return "", fmt.Errorf("unknown sandbox mode %q; pick one of %s", s, modeList())
}

// MarshalText returns the mode's name; it fails on a value that is not a
// mode, so an invalid mode never reaches a file.
func (m Mode) MarshalText() ([]byte, error) {
	if !slices.Contains(Modes(), m) {
		return nil, fmt.Errorf("unknown sandbox mode %q; pick one of %s", string(m), modeList())
	}
	return []byte(m), nil
}

// UnmarshalText reads a mode name with ParseMode, so JSON and YAML fields
// of type Mode are validated as they are read.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// DefaultMode is the mode of an agent whose profile and command line name
// none: WorkspaceWrite, but ReadOnly for an agent that has neither the
// edit nor the write tool, since such an agent is not meant to change
// files. tools is the agent's resolved tool list (ink's tool names).
func DefaultMode(tools []string) Mode {
	if slices.Contains(tools, "edit") || slices.Contains(tools, "write") {
		return WorkspaceWrite
	}
	return ReadOnly
}

// modeList is the modes as a message lists them.
func modeList() string {
	names := make([]string, 0, 3)
	for _, m := range Modes() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}
