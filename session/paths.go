package session

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// maxSlug bounds a cwd slug well below the 255-byte file name limit.
const maxSlug = 180

// CwdSlug returns the directory name under $INK_HOME/sessions that holds the
// sessions of cwd: "/home/me/proj" becomes "-home-me-proj". The mapping is
// injective: '/' becomes '-', letters, digits and '.' stay, '_' becomes
// "__", '-' becomes "_-", and every other byte becomes '_' plus two hex
// digits, so two different cleaned paths never share a slug. A slug longer
// than 180 bytes is cut and ends in '~' plus a hash of the whole path ('~'
// never appears otherwise). A leading '.' is escaped, so a slug is never "."
// or "..".
func CwdSlug(cwd string) string {
	cwd = filepath.Clean(cwd)
	var b strings.Builder
	for i := 0; i < len(cwd); i++ {
		c := cwd[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '_':
			b.WriteString("__")
		case c == '-':
			b.WriteString("_-")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			const hexdig = "0123456789abcdef"
			b.WriteByte('_')
			b.WriteByte(hexdig[c>>4])
			b.WriteByte(hexdig[c&15])
		}
	}
	slug := b.String()
	if len(slug) > maxSlug {
		sum := sha256.Sum256([]byte(cwd))
		slug = slug[:maxSlug-17] + "~" + hex.EncodeToString(sum[:8])
	}
	return slug
}

// SessionsDir returns $INK_HOME/sessions/<cwd-slug>, the directory of the
// main transcripts started in cwd.
func SessionsDir(inkHome, cwd string) string {
	return filepath.Join(inkHome, "sessions", CwdSlug(cwd))
}

// MainPath returns the path of main session id started in cwd:
// $INK_HOME/sessions/<cwd-slug>/<id>.jsonl.
func MainPath(inkHome, cwd, id string) string {
	return filepath.Join(SessionsDir(inkHome, cwd), id+".jsonl")
}

// ChildrenDir returns the directory of the children of the session whose
// transcript is mainPath: the path without ".jsonl", then "/children".
func ChildrenDir(mainPath string) string {
	return filepath.Join(strings.TrimSuffix(mainPath, ".jsonl"), "children")
}

// ChildPath returns the path a new child childID of mainPath is created at.
// Lookup never trusts this name; it matches header ids (see FindChild).
func ChildPath(mainPath, childID string) string {
	return filepath.Join(ChildrenDir(mainPath), childID+".jsonl")
}
