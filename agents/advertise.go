package agents

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the block Advertise renders.
const (
	// AdvertiseMaxDescription is the most bytes of one description.
	AdvertiseMaxDescription = 1024
	// AdvertiseMaxBytes is the budget of the whole block: descriptions are
	// shortened so that it fits. Names are never dropped, so a set of
	// thousands of agents may pass it with names alone.
	AdvertiseMaxBytes = 24 * 1024
)

// minDescription is the shortest cut of a description worth showing;
// below it, agents are listed by name alone.
const minDescription = 16

const advertiseHeader = "# Agents\n\n"

// Advertise renders the block of the main agent's system prompt that lists
// the agents a task call may name: every loaded agent, sorted by name, as
// "- name: description", each description on one line (whitespace and
// control characters collapsed), none longer than AdvertiseMaxDescription.
// When they do not all fit AdvertiseMaxBytes, every agent keeps its name
// and what tells it apart: boilerplate openings ("Use this agent when you
// need to") are dropped, then each description is cut to its first
// sentence, then the longest are cut to a fair share of the budget, and a
// last line says how to read them whole; when even short descriptions do
// not fit, the agents are listed by name alone. When no agent loads it says why:
// project agents that are not trusted (and how to trust them), or none
// defined (and where to define one). The block ends with a newline.
func Advertise(s *Set) string {
	return advertise(s, advertiseLimits{description: AdvertiseMaxDescription, total: AdvertiseMaxBytes})
}

// advertiseLimits are Advertise's caps; tests lower them.
type advertiseLimits struct {
	description, total int
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
	footer := ""
	if untrusted != "" {
		// Only extremely long project paths make this note long; it never
		// takes more than a quarter of the budget.
		footer = capBlock(fmt.Sprintf("Not loaded: %s.\n", untrusted), limits.total/4)
	}
	descs := make([]string, len(all))
	fixed := b.Len() + len(footer)
	for i, p := range all {
		descs[i] = collapseDescription(p.Description, limits.description)
		fixed += len("- ") + len(p.Name) + len(": ") + len("\n")
	}
	// When the descriptions do not all fit, each keeps what tells agents
	// apart: boilerplate openings go first, then everything after the
	// first sentence, then the longest are cut to a fair share.
	cut, whole := fitDescriptions(descs, limits.total-fixed)
	note := ""
	if !whole {
		note = advertiseShortened
		for i := range descs {
			descs[i] = dropBoilerplate(descs[i])
		}
		if cut, whole = fitDescriptions(descs, limits.total-fixed-len(note)); !whole {
			for i := range descs {
				descs[i] = firstSentence(descs[i])
			}
			cut, whole = fitDescriptions(descs, limits.total-fixed-len(note))
		}
		if !whole && cut < minDescription {
			note = advertiseNamesOnly
		}
	}
	for i, p := range all {
		if !whole && cut < minDescription {
			b.WriteString("- " + p.Name + "\n")
			continue
		}
		b.WriteString("- " + p.Name + ": " + truncateUTF8(descs[i], cut) + "\n")
	}
	b.WriteString(note)
	b.WriteString(footer)
	return b.String()
}

// The notes that end a block whose descriptions were shortened.
const (
	advertiseShortened = "Descriptions are shortened to fit; `ink agents show NAME` prints one whole.\n"
	advertiseNamesOnly = "Only the names fit; `ink agents ls` lists the descriptions.\n"
)

// boilerplate are the openings many Claude Code descriptions share, which
// say nothing about the agent, with what replaces each ("" keeps the rest,
// capitalised). Longer openings come first.
var boilerplate = []struct{ opening, with string }{
	{"use this agent when you need to ", ""},
	{"use this agent when you want to ", ""},
	{"use this agent whenever you need to ", ""},
	{"use this agent when you need ", ""},
	{"use this agent when ", "When "},
	{"use this agent whenever ", "When "},
	{"use this agent to ", ""},
	{"use this agent for ", "For "},
	{"use this agent if ", "If "},
	{"use this agent ", ""},
	{"this agent should be used when ", "When "},
	{"this agent should be used to ", ""},
	{"this agent should be used for ", "For "},
	{"this agent ", ""},
	{"use when ", "When "},
}

// dropBoilerplate removes a boilerplate opening from a one-line
// description.
func dropBoilerplate(d string) string {
	lower := strings.ToLower(d)
	for _, bp := range boilerplate {
		if strings.HasPrefix(lower, bp.opening) && len(d) > len(bp.opening) {
			rest := d[len(bp.opening):]
			if bp.with != "" {
				return bp.with + rest
			}
			r, size := utf8.DecodeRuneInString(rest)
			return string(unicode.ToUpper(r)) + rest[size:]
		}
	}
	return d
}

// firstSentence cuts a one-line description after its first sentence, or
// before its examples, whichever comes first.
func firstSentence(d string) string {
	end := len(d)
	for _, marker := range []string{"<example>", " Examples:", " Example:", " For example:", " e.g.:"} {
		if i := strings.Index(d, marker); i > 0 && i < end {
			end = i
		}
	}
	for i := 0; i+1 < end; i++ {
		switch d[i] {
		case '.', '!', '?':
			// A sentence ends at the mark followed by a space, not inside
			// "e.g." or a version number.
			if d[i+1] == ' ' && i >= 3 && !strings.HasSuffix(d[:i+1], "e.g.") && !strings.HasSuffix(d[:i+1], "i.e.") && !strings.HasSuffix(d[:i+1], "etc.") {
				return d[:i+1]
			}
		}
	}
	return strings.TrimSpace(d[:end])
}

// fitDescriptions returns the largest cut (in bytes) such that the
// descriptions, each cut to at most that many bytes, fit in budget bytes
// together; the longest descriptions are shortened first, short ones are
// kept whole. whole reports that no description needs cutting.
func fitDescriptions(descs []string, budget int) (cut int, whole bool) {
	longest := 0
	for _, d := range descs {
		longest = max(longest, len(d))
	}
	total := func(cut int) int {
		sum := 0
		for _, d := range descs {
			sum += min(len(d), cut)
		}
		return sum
	}
	if total(longest) <= budget {
		return longest, true
	}
	lo, hi := 0, longest // total(lo) fits, total(hi) does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if total(mid) <= budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, false
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
