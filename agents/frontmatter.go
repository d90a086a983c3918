package agents

import (
	"bytes"
	"strings"
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
// body. It tolerates a UTF-8 byte order mark, CRLF line endings and a missing
// final newline; the delimiter lines may carry trailing blanks. Both results
// use LF line endings. On failure it returns the reason and false.
func splitFrontmatter(data []byte) (front, body string, reason string, ok bool) {
	data = bytes.TrimPrefix(data, []byte(utf8ByteOrderMark))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")

	first, rest, _ := strings.Cut(text, "\n")
	if !isDelimiter(first) {
		return "", "", reasonNoFrontmatter, false
	}
	// Walk the remaining lines looking for the closing delimiter, tracking
	// the offset so the frontmatter is sliced out byte-exact.
	offset := 0
	for offset <= len(rest) {
		line, _, found := strings.Cut(rest[offset:], "\n")
		if isDelimiter(line) {
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

// isDelimiter reports whether line is "---", ignoring trailing blanks.
func isDelimiter(line string) bool {
	return strings.TrimRight(line, " \t\r") == frontmatterDelimiter
}
