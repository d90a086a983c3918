package agents

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

// Reasons for a file whose frontmatter cannot be found. They are part of
// what users see, and tests hold them exactly.
const (
	reasonNoFrontmatter = "no frontmatter: the file must start with a line '---'"
	reasonUnterminated  = "frontmatter is not closed by a line '---'"
)

const (
	frontmatterDelimiter = "---"
	utf8ByteOrderMark    = "\ufeff"
	// frontmatterOpenerLine is the file line of the opening "---"; a
	// frontmatter line n (1-based) is file line n+frontmatterOpenerLine.
	frontmatterOpenerLine = 1
)

// splitFrontmatter separates a profile file into its YAML frontmatter and its
// body. The file opens with a line "---"; the frontmatter ends at the next
// line of three or more dashes (Claude Code files sometimes close it with a
// long rule such as "-----"). It tolerates a UTF-8 byte order mark, CRLF line
// endings and a missing final newline; the delimiter lines may carry
// trailing blanks. Both results use LF line endings. On failure it returns
// the reason and false.
func splitFrontmatter(data []byte) (front, body string, reason string, ok bool) {
	data = bytes.TrimPrefix(data, []byte(utf8ByteOrderMark))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")

	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != frontmatterDelimiter {
		return "", "", reasonNoFrontmatter, false
	}
	// Walk the remaining lines looking for the closing delimiter, tracking
	// the offset so the frontmatter is sliced out byte-exact.
	offset := 0
	for offset <= len(rest) {
		line, _, found := strings.Cut(rest[offset:], "\n")
		if isClosingFence(line) {
			front = rest[:offset]
			after := offset + len(line)
			if found {
				after++
			}
			return front, strings.TrimSpace(rest[after:]), "", true
		}
		if !found {
			break
		}
		offset += len(line) + 1
	}
	return "", "", reasonUnterminated, false
}

// isClosingFence reports whether line is three or more dashes, ignoring
// trailing blanks.
func isClosingFence(line string) bool {
	line = strings.TrimRight(line, " \t\r")
	return len(line) >= len(frontmatterDelimiter) && strings.Trim(line, "-") == ""
}

// field is one top-level frontmatter field: its key, its value as YAML
// decodes it, and the file line of the key.
type field struct {
	key   string
	value any
	line  int
	// raw is the value as written: the rest of the key's line and the
	// indented lines under it, for messages.
	raw string
}

// topLevelKey matches a line that starts a top-level field in the tolerant
// reading: a key at the start of the line, a colon, then the rest.
var topLevelKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$`) })

// lenientFields reads a frontmatter that strict YAML rejected the way
// Claude Code still reads it: as top-level "key: value" lines. Each field
// (its key line plus the indented lines under it, such as a block scalar or
// a list) is read as YAML on its own; a one-line field that is still not
// YAML (typically a description with ": " inside) keeps the rest of its
// line, trimmed, as its value. Blank lines and comment lines are skipped.
//
// A key given again (Claude Code files repeat "user:" in the examples of a
// description) keeps its first value; the later ones come back in
// repeated, for a note.
//
// It is no more lenient than that: a line that is neither a key line, an
// indented line under one, a blank line nor a comment, or an indented
// block that is not YAML, makes it fail (ok false), and the strict YAML
// error stands.
func lenientFields(front string) (fields, repeated []field, ok bool) {
	lines := strings.Split(front, "\n")
	seen := map[string]bool{}
	for i := 0; i < len(lines); {
		line := strings.TrimRight(lines[i], " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		m := topLevelKey().FindStringSubmatch(line)
		if m == nil {
			return nil, nil, false // an indented line with no key above it, or not a key line
		}
		key, rest := m[1], strings.TrimSpace(m[2])
		again := seen[key]
		seen[key] = true
		start := i
		i++
		for i < len(lines) && (strings.TrimSpace(lines[i]) == "" || startsIndented(lines[i])) {
			i++
		}
		// Trailing blank lines belong to no field.
		end := i
		for end > start+1 && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		snippet := strings.Join(lines[start:end], "\n")
		raw := strings.TrimSpace(strings.TrimPrefix(snippet, key+":"))
		f := field{key: key, line: start + 1 + frontmatterOpenerLine, raw: raw}
		var ms yaml.MapSlice
		err := yaml.UnmarshalWithOptions([]byte(snippet), &ms)
		switch {
		case err == nil && len(ms) == 1:
			f.value = ms[0].Value
		case end == start+1:
			if rest != "" {
				f.value = rest
			}
		default:
			return nil, nil, false
		}
		if again {
			repeated = append(repeated, f)
		} else {
			fields = append(fields, f)
		}
	}
	return fields, repeated, true
}

func startsIndented(line string) bool {
	return strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
}
