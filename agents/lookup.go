package agents

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// lookupListAll is the most agents an unknown-agent message lists in full;
// beyond it, the message lists the closest names only.
const lookupListAll = 20

// Lookup returns the profile named name (as written, or as its slug), or
// an error a model or a user can act on: the closest names (by edit
// distance, slug or prefix), the available agents when there are few, a
// file declaring that name (or named after it) that was skipped and why,
// project agents that are not trusted and how to trust them, or where to
// define one when there are none.
func (s *Set) Lookup(name string) (Profile, error) {
	if p, ok := s.Get(name); ok {
		return p, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown agent %q", name)
	names := s.Names()
	untrusted := s.UntrustedMessage()
	closest := s.Closest(name, 5)
	switch {
	case len(names) > 0 && len(names) <= lookupListAll:
		if len(closest) > 0 {
			fmt.Fprintf(&b, "; did you mean %s?", strings.Join(quoteAll(closest), " or "))
		}
		fmt.Fprintf(&b, "; available agents: %s", strings.Join(names, ", "))
	case len(names) > 0:
		if len(closest) > 0 {
			fmt.Fprintf(&b, "; did you mean %s?", strings.Join(quoteAll(closest), " or "))
		}
		fmt.Fprintf(&b, "; %d agents are loaded (`ink agents ls` lists them)", len(names))
	case untrusted != "":
		b.WriteString("; no agents are loaded")
	default:
		fmt.Fprintf(&b, "; no agents are defined (create %s/%s.md to define it), or leave out agent", s.displayInkAgentsDir(), Slug(name))
	}
	want := Slug(name)
	for _, p := range s.Problems() {
		base := strings.TrimSuffix(filepath.Base(p.Path), ".md")
		if p.Agent == name || (want != "" && (Slug(p.Agent) == want || Slug(base) == want)) {
			fmt.Fprintf(&b, "; %s was skipped: %s", p.Path, p.Reason)
		}
	}
	if untrusted != "" {
		b.WriteString("; " + untrusted)
	}
	return Profile{}, fmt.Errorf("%s", b.String())
}

// Closest returns up to n loaded agent names nearest to name: names whose
// slug starts with name's slug (or the other way round), that contain it,
// that share most of its beginning, then those within a small edit
// distance of it, nearest first. It returns none when nothing
// is near.
func (s *Set) Closest(name string, n int) []string {
	want := Slug(name)
	if want == "" {
		return nil
	}
	type candidate struct {
		name string
		rank int
	}
	var found []candidate
	limit := max(2, len([]rune(want))/3)
	for _, candidateName := range s.Names() {
		slug := s.byName[candidateName].Slug
		if slug == "" {
			slug = Slug(candidateName)
		}
		rank := -1
		switch {
		case slug == want:
			rank = 0
		case strings.HasPrefix(slug, want) || (len(slug) >= 3 && strings.HasPrefix(want, slug)):
			rank = 1
		case len(want) >= 3 && strings.Contains(slug, want):
			rank = 2
		case commonPrefix(slug, want) >= max(6, len(want)*2/3):
			rank = 3
		default:
			if d := editDistance(slug, want); d <= limit {
				rank = 3 + d
			}
		}
		if rank >= 0 {
			found = append(found, candidate{candidateName, rank})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].rank < found[j].rank })
	var out []string
	for _, c := range found {
		if len(out) == n {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// commonPrefix is the length in bytes of the longest common prefix of a
// and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance between a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
