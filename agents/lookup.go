package agents

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Lookup returns the profile named name, or an error a model or a user can
// act on: the agents that are available, a file of that name that was
// skipped and why, project agents that are not trusted and how to trust
// them, or where to define one when there are none.
func (s *Set) Lookup(name string) (Profile, error) {
	if p, ok := s.Get(name); ok {
		return p, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown agent %q", name)
	names := s.Names()
	untrusted := s.UntrustedMessage()
	switch {
	case len(names) > 0:
		fmt.Fprintf(&b, "; available agents: %s", strings.Join(names, ", "))
	case untrusted != "":
		b.WriteString("; no agents are loaded")
	default:
		fmt.Fprintf(&b, "; no agents are defined (create %s/%s.md to define it), or leave out agent", s.displayInkAgentsDir(), name)
	}
	for _, p := range s.Problems() {
		if strings.TrimSuffix(filepath.Base(p.Path), ".md") == name {
			fmt.Fprintf(&b, "; %s was skipped: %s", p.Path, p.Reason)
		}
	}
	if untrusted != "" {
		b.WriteString("; " + untrusted)
	}
	return Profile{}, fmt.Errorf("%s", b.String())
}
