package agents

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the block Advertise renders.
const (
	// AdvertiseMaxAgents is the most agents the block lists.
	AdvertiseMaxAgents = 16
	// AdvertiseMaxDescription is the most bytes of one description.
	AdvertiseMaxDescription = 512
	// AdvertiseMaxBytes is the most bytes of the whole block.
	AdvertiseMaxBytes = 12 * 1024
)

const advertiseHeader = "# Agents\n\n"

// Advertise renders the block of the main agent's system prompt that lists
// the agents a task call may name: at most AdvertiseMaxAgents lines
// "- name: description", sorted by name, each description on one line
// (whitespace and control characters collapsed) and at most
// AdvertiseMaxDescription bytes, the whole block at most AdvertiseMaxBytes,
// then how many were left out. When no agent loads it says why: project
// agents that are not trusted (and how to trust them), or none defined (and
// where to define one). The block ends with a newline.
func Advertise(s *Set) string {
	return advertise(s, advertiseLimits{agents: AdvertiseMaxAgents, description: AdvertiseMaxDescription, total: AdvertiseMaxBytes})
}

// advertiseLimits are Advertise's caps; tests lower them.
type advertiseLimits struct {
	agents, description, total int
}

func advertise(s *Set, limits advertiseLimits) string {
	var b strings.Builder
	b.WriteString(advertiseHeader)
	untrusted := s.UntrustedMessage()
	all := s.All()
	if len(all) == 0 {
		if untrusted != "" {
			fmt.Fprintf(&b, "No agents are loaded: %s. Until then the task tool runs children without a profile; do not write agent files to work around this.\n", untrusted)
			return capBlock(b.String(), limits.total)
		}
		fmt.Fprintf(&b, "No agents are defined, so the task tool runs children without a profile. A user defines one in %s/NAME.md: a line ---, then \"name: NAME\" and \"description: when to use it\", a line ---, then the agent's instructions.\n", s.displayInkAgentsDir())
		return b.String()
	}
	b.WriteString("Give one of these names as `agent` in a task call to hand the work to that agent:\n")

	var footer strings.Builder
	if untrusted != "" {
		fmt.Fprintf(&footer, "Not loaded: %s.\n", untrusted)
	}
	// Reserve room for the longest omission line this list could need.
	reserve := footer.Len() + len(omittedLine(len(all)))
	shown := 0
	for _, p := range all {
		if shown == limits.agents {
			break
		}
		line := "- " + p.Name + ": " + collapseDescription(p.Description, limits.description) + "\n"
		if b.Len()+len(line)+reserve > limits.total {
			break
		}
		b.WriteString(line)
		shown++
	}
	if omitted := len(all) - shown; omitted > 0 {
		b.WriteString(omittedLine(omitted))
	}
	b.WriteString(footer.String())
	return capBlock(b.String(), limits.total)
}

// capBlock cuts a block that is still too long (only a note on untrusted
// agents with extremely long paths can make it so) to max bytes, ending in
// "…" and a newline.
func capBlock(block string, max int) string {
	if len(block) <= max {
		return block
	}
	return truncateUTF8(strings.TrimSuffix(block, "\n"), max-1) + "\n"
}

func omittedLine(n int) string {
	if n == 1 {
		return "(1 more agent omitted; see `ink agents ls`)\n"
	}
	return fmt.Sprintf("(%d more agents omitted; see `ink agents ls`)\n", n)
}

// collapseDescription puts a description on one line: every run of
// whitespace or control characters becomes one space, invalid UTF-8 is
// replaced, and the result is cut to max bytes.
func collapseDescription(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return truncateUTF8(b.String(), max)
}

// truncateUTF8 returns s when it fits in max bytes, else its longest prefix
// that ends on a character boundary and leaves room for "…", followed by "…".
func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// displayInkAgentsDir is where a user defines personal agents, as shown in
// messages.
func (s *Set) displayInkAgentsDir() string {
	if s == nil {
		return "~/.ink/agents"
	}
	return s.inkAgentsDir
}
