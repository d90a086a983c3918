package session

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sync"
)

// dateLine matches the "- Date: YYYY-MM-DD" line of a system prompt.
var dateLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^([ \t]*- Date: )[0-9]{4}-[0-9]{2}-[0-9]{2}([ \t]*\r?)$`)
})

// SystemFingerprint returns the hex sha256 of a system prompt in which every
// "- Date: YYYY-MM-DD" line has its date replaced by "YYYY-MM-DD", so a
// prompt assembled on another day fingerprints the same.
func SystemFingerprint(system string) string {
	norm := dateLine().ReplaceAllString(system, "${1}YYYY-MM-DD${2}")
	return SHA256Hex([]byte(norm))
}

// SHA256Hex returns the lowercase hex sha256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
