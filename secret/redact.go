package secret

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
)

// prefixLen is how many leading bytes of a secret's form a Fingerprint
// keeps to find candidate positions quickly. Provider keys begin with a
// public marker ("sk-ant-", "sk-proj-"), and the prefixes of a value's
// base64 forms encode only bits of its first four bytes, so this gives
// little away.
const prefixLen = 4

// Fingerprint recognises one form of a secret (see Forms) without holding
// its value: the form's length, its first bytes and its SHA-256.
type Fingerprint struct {
	Name   string `json:"name"`
	Len    int    `json:"len"`
	Prefix string `json:"prefix"`
	SHA256 string `json:"sha256"`
}

// Fingerprints returns the fingerprint of every form of every secret: its
// exact value and its base64 forms. Secrets shorter than MinLen are left
// out.
func Fingerprints(secrets []Secret) []Fingerprint {
	var out []Fingerprint
	for _, s := range secrets {
		if len(s.Value) < MinLen {
			continue
		}
		for _, f := range Forms(s.Value) {
			sum := sha256.Sum256([]byte(f))
			out = append(out, Fingerprint{Name: s.Name, Len: len(f), Prefix: f[:prefixLen], SHA256: hex.EncodeToString(sum[:])})
		}
	}
	return out
}

// Redactor replaces secrets in text. The zero value and a nil *Redactor
// redact nothing. It is immutable once built, so safe for concurrent use.
//
// It reads a text once, whatever the number of secrets: a bit set of the
// first two bytes of every form rules out almost every position at the cost
// of one load, a map of first four bytes names the candidates at the rest,
// and only a candidate of the right length and prefix is compared (by
// value) or hashed (by fingerprint).
type Redactor struct {
	heads map[uint32][]pattern // by their first four bytes; longest first
	pairs [1 << 16 / 64]uint64 // the first two bytes of every pattern
}

// pattern is one form of one secret.
type pattern struct {
	name  string
	n     int
	value string   // the form, when known by value
	sum   [32]byte // its SHA-256
}

// NewRedactor returns a redactor for every form (see Forms) of the secrets
// known by value, and for the forms known only by fingerprint. Values
// shorter than MinLen and malformed fingerprints are ignored.
func NewRedactor(values []Secret, prints []Fingerprint) *Redactor {
	r := &Redactor{heads: map[uint32][]pattern{}}
	for _, s := range values {
		if len(s.Value) < MinLen {
			continue
		}
		for _, f := range Forms(s.Value) {
			r.add(f[:prefixLen], pattern{name: s.Name, n: len(f), value: f, sum: sha256.Sum256([]byte(f))})
		}
	}
	for _, f := range prints {
		var p pattern
		if f.Len < MinLen || len(f.Prefix) != prefixLen || hex.DecodedLen(len(f.SHA256)) != len(p.sum) {
			continue
		}
		if _, err := hex.Decode(p.sum[:], []byte(f.SHA256)); err != nil {
			continue
		}
		p.name, p.n = f.Name, f.Len
		r.add(f.Prefix, p)
	}
	for _, ps := range r.heads {
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].n > ps[j].n })
	}
	return r
}

// add adds p, which begins with head, unless it is there already.
func (r *Redactor) add(head string, p pattern) {
	k := head4(head, 0)
	for _, q := range r.heads[k] {
		if q.n == p.n && q.sum == p.sum {
			return
		}
	}
	r.heads[k] = append(r.heads[k], p)
	pair := k >> 16
	r.pairs[pair/64] |= 1 << (pair % 64)
}

// head4 is the four bytes of s at i as one number.
func head4(s string, i int) uint32 {
	return uint32(s[i])<<24 | uint32(s[i+1])<<16 | uint32(s[i+2])<<8 | uint32(s[i+3])
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool {
	return r == nil || len(r.heads) == 0
}

// Placeholder is what a secret called name is replaced with.
func Placeholder(name string) string { return "[redacted:" + name + "]" }

// Redact returns s with every occurrence of a secret's forms replaced by
// its placeholder, and the names of the secrets it found (each once, in the
// order of the text). Where two forms overlap, the one that starts first
// wins, and of those the longest. When nothing matches it returns s itself
// and nil.
func (r *Redactor) Redact(s string) (string, []string) {
	if r.Empty() || len(s) < MinLen {
		return s, nil
	}
	var (
		b     strings.Builder
		found []string
		last  int
	)
	for i := 0; i+MinLen <= len(s); {
		pair := uint32(s[i])<<8 | uint32(s[i+1])
		if r.pairs[pair/64]&(1<<(pair%64)) == 0 {
			i++
			continue
		}
		p, ok := r.match(s, i)
		if !ok {
			i++
			continue
		}
		if found == nil {
			b.Grow(len(s))
		}
		b.WriteString(s[last:i])
		b.WriteString(Placeholder(p.name))
		if !slices.Contains(found, p.name) {
			found = append(found, p.name)
		}
		i += p.n
		last = i
	}
	if found == nil {
		return s, nil
	}
	b.WriteString(s[last:])
	return b.String(), found
}

// match returns the longest pattern that occurs in s at i.
func (r *Redactor) match(s string, i int) (pattern, bool) {
	for _, p := range r.heads[head4(s, i)] {
		if i+p.n > len(s) {
			continue
		}
		w := s[i : i+p.n]
		if p.value != "" {
			if w == p.value {
				return p, true
			}
			continue
		}
		if sha256.Sum256([]byte(w)) == p.sum {
			return p, true
		}
	}
	return pattern{}, false
}
