package secret

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// prefixLen is how many leading bytes of a secret a Fingerprint keeps to
// find candidate positions quickly. Provider keys begin with a public
// marker ("sk-ant-", "sk-proj-"), so this gives little away.
const prefixLen = 4

// Fingerprint recognises a secret's exact occurrences without holding its
// value: its length, its first bytes and the SHA-256 of the whole value.
type Fingerprint struct {
	Name   string `json:"name"`
	Len    int    `json:"len"`
	Prefix string `json:"prefix"`
	SHA256 string `json:"sha256"`
}

// Fingerprints returns the fingerprint of every secret.
func Fingerprints(secrets []Secret) []Fingerprint {
	out := make([]Fingerprint, 0, len(secrets))
	for _, s := range secrets {
		sum := sha256.Sum256([]byte(s.Value))
		out = append(out, Fingerprint{Name: s.Name, Len: len(s.Value), Prefix: s.Value[:min(prefixLen, len(s.Value))], SHA256: hex.EncodeToString(sum[:])})
	}
	return out
}

// Redactor replaces secrets in text. The zero value and a nil *Redactor
// redact nothing. It is immutable once built, so safe for concurrent use.
type Redactor struct {
	values []Secret      // longest first
	prints []Fingerprint // longest first
}

// NewRedactor returns a redactor for the secrets known by value and those
// known only by fingerprint. Values shorter than MinLen are ignored.
func NewRedactor(values []Secret, prints []Fingerprint) *Redactor {
	r := &Redactor{}
	for _, s := range values {
		if len(s.Value) >= MinLen {
			r.values = append(r.values, s)
		}
	}
	for _, f := range prints {
		if f.Len >= MinLen && f.Prefix != "" {
			r.prints = append(r.prints, f)
		}
	}
	sort.SliceStable(r.values, func(i, j int) bool { return len(r.values[i].Value) > len(r.values[j].Value) })
	sort.SliceStable(r.prints, func(i, j int) bool { return r.prints[i].Len > r.prints[j].Len })
	return r
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool {
	return r == nil || (len(r.values) == 0 && len(r.prints) == 0)
}

// Placeholder is what a secret called name is replaced with.
func Placeholder(name string) string { return "[redacted:" + name + "]" }

// Redact returns s with every exact occurrence of a secret replaced by its
// placeholder, and the names of the secrets it found (each once, in the
// order first found). When nothing matches it returns s itself and nil.
func (r *Redactor) Redact(s string) (string, []string) {
	if r.Empty() || len(s) < MinLen {
		return s, nil
	}
	var found []string
	note := func(name string) {
		for _, n := range found {
			if n == name {
				return
			}
		}
		found = append(found, name)
	}
	for _, v := range r.values {
		if strings.Contains(s, v.Value) {
			s = strings.ReplaceAll(s, v.Value, Placeholder(v.Name))
			note(v.Name)
		}
	}
	for _, f := range r.prints {
		if out, ok := replacePrint(s, f); ok {
			s = out
			note(f.Name)
		}
	}
	return s, found
}

// replacePrint replaces the occurrences of the secret behind f in s.
func replacePrint(s string, f Fingerprint) (string, bool) {
	var b strings.Builder
	last, from, hit := 0, 0, false
	for {
		i := strings.Index(s[from:], f.Prefix)
		if i < 0 {
			break
		}
		at := from + i
		if at+f.Len > len(s) {
			break
		}
		sum := sha256.Sum256([]byte(s[at : at+f.Len]))
		if hex.EncodeToString(sum[:]) == f.SHA256 {
			b.WriteString(s[last:at])
			b.WriteString(Placeholder(f.Name))
			last, from, hit = at+f.Len, at+f.Len, true
			continue
		}
		from = at + 1
	}
	if !hit {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}
