package tools

import (
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Bounds on a glob pattern, which together with the length of a path
// (PATH_MAX) bound the work of one match, so that no pattern can make find
// or grep hang between their checks of ctx. The matcher
// (github.com/bmatcuk/doublestar/v4) keeps one backtracking point per
// wildcard kind, so a match costs at most about pattern length × path
// length per alternative of the { } groups.
const (
	// maxGlobAlternatives bounds how many patterns the { } groups of one
	// pattern expand to: the matcher tries them one by one.
	maxGlobAlternatives = 128
	// maxGlobLen bounds a pattern's length in bytes.
	maxGlobLen = 512
)

// globPattern matches slash-separated relative paths. It supports the
// wildcards of path.Match within one path segment, `**` as a whole segment
// for any number of segments (zero included), and `{a,b}` alternatives
// (nested ones too). It is immutable and safe for concurrent use.
type globPattern struct {
	pattern string
}

// compileGlob parses pattern, reporting a malformed or oversized one. A
// leading "./" and leading or trailing slashes are dropped.
func compileGlob(pattern string) (*globPattern, error) {
	p := strings.Trim(strings.TrimPrefix(strings.TrimSpace(pattern), "./"), "/")
	if p == "" {
		return nil, fmt.Errorf("glob pattern is empty")
	}
	if len(p) > maxGlobLen {
		return nil, fmt.Errorf("glob pattern is %d bytes long, more than the %d allowed; use a shorter pattern", len(p), maxGlobLen)
	}
	n, err := countAlternatives(p)
	if err != nil {
		return nil, fmt.Errorf("glob pattern %q %v", pattern, err)
	}
	if n > maxGlobAlternatives {
		return nil, fmt.Errorf("glob pattern %q expands to more than %d alternatives (each { } group multiplies them); use fewer groups or alternatives", pattern, maxGlobAlternatives)
	}
	if !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("glob pattern %q is malformed (check [ ] brackets and \\ escapes)", pattern)
	}
	return &globPattern{pattern: p}, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *globPattern) match(rel string) bool {
	return doublestar.MatchUnvalidated(g.pattern, rel)
}

// matchBaseOrPath reports whether either the base name or the whole
// relative path matches, so "*.go" finds Go files at any depth while
// "cmd/**/main.go" is anchored at the search directory.
func (g *globPattern) matchBaseOrPath(rel string) bool {
	return g.match(path.Base(rel)) || g.match(rel)
}

// countAlternatives counts the brace-free patterns p expands to (capped
// just above maxGlobAlternatives) and checks that its braces pair up; the
// error completes a sentence that starts with the pattern.
func countAlternatives(p string) (int, error) {
	n, i, err := countSequence(p, 0, false)
	if err != nil {
		return 0, err
	}
	if i < len(p) {
		return 0, fmt.Errorf("has a } without a matching {")
	}
	return n, nil
}

// countSequence counts the alternatives of the sequence that starts at i
// and ends at the end of p or, inside a group, at an unescaped ',' or '}'.
// It returns the count and where it stopped.
func countSequence(p string, i int, inGroup bool) (int, int, error) {
	n := 1
	for i < len(p) {
		switch p[i] {
		case '\\':
			i += 2
			continue
		case '[':
			// Braces inside a bracket expression are plain characters.
			if j := strings.IndexByte(p[i+1:], ']'); j >= 0 {
				i += j + 2
				continue
			}
		case '{':
			g, j, err := countGroup(p, i+1)
			if err != nil {
				return 0, 0, err
			}
			n = min(n*g, maxGlobAlternatives+1)
			i = j
			continue
		case ',':
			if inGroup {
				return n, i, nil
			}
		case '}':
			return n, i, nil
		}
		i++
	}
	if inGroup {
		return 0, 0, fmt.Errorf("has a { without a matching }")
	}
	return n, i, nil
}

// countGroup counts the alternatives of the group whose '{' is just
// before i, returning the count and the index after its '}'.
func countGroup(p string, i int) (int, int, error) {
	total := 0
	for {
		n, j, err := countSequence(p, i, true)
		if err != nil {
			return 0, 0, err
		}
		total = min(total+n, maxGlobAlternatives+1)
		if p[j] == '}' {
			return total, j + 1, nil
		}
		i = j + 1
	}
}
