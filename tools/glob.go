package tools

import (
	"fmt"
	"path"
	"strings"
)

// globPattern matches slash-separated relative paths. It supports the
// wildcards of path.Match within one path segment, `**` as a whole segment
// for any number of segments (zero included), and `{a,b}` alternatives.
// It is immutable and safe for concurrent use.
type globPattern struct {
	alts [][]string // each alternative, split into segments
}

// maxBraceGroups bounds `{a,b}` groups so a pattern cannot expand into an
// enormous number of alternatives.
const maxBraceGroups = 8

// compileGlob parses pattern, reporting a malformed one.
func compileGlob(pattern string) (*globPattern, error) {
	pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "./")
	if pattern == "" {
		return nil, fmt.Errorf("glob pattern is empty")
	}
	if strings.Count(pattern, "{") > maxBraceGroups {
		return nil, fmt.Errorf("glob pattern %q has more than %d { } groups; use fewer alternatives", pattern, maxBraceGroups)
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{}
	for _, p := range expanded {
		segs := strings.Split(strings.Trim(p, "/"), "/")
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("glob pattern %q is malformed (check [ ] brackets and \\ escapes)", pattern)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *globPattern) match(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, alt := range g.alts {
		if matchSegments(alt, parts) {
			return true
		}
	}
	return false
}

// matchBaseOrPath reports whether either the base name or the whole
// relative path matches, so "*.go" finds Go files at any depth while
// "cmd/**/main.go" is anchored at the search directory.
func (g *globPattern) matchBaseOrPath(rel string) bool {
	return g.match(path.Base(rel)) || g.match(rel)
}

func matchSegments(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(parts); i++ {
				if matchSegments(rest, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// expandBraces expands `{a,b}` alternatives, nested ones included.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("glob pattern %q has a } without a matching {", p)
			}
			depth--
			if depth == 0 {
				var out []string
				prefix, suffix := p[:open], p[i+1:]
				for _, alt := range splitTopLevel(p[open+1 : i]) {
					more, err := expandBraces(prefix + alt + suffix)
					if err != nil {
						return nil, err
					}
					out = append(out, more...)
				}
				return out, nil
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("glob pattern %q has a { without a matching }", p)
	}
	return []string{p}, nil
}

// splitTopLevel splits s on commas that are not inside nested braces.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
