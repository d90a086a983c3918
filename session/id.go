package session

import (
	"crypto/rand"
	"sync"
	"time"
)

// crockford is Crockford's base32 alphabet, lowercased.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// idState keeps NewID monotonic inside one process.
var idState struct {
	sync.Mutex
	ms   uint64
	rand [10]byte
}

// NewID returns a new identifier for a session, an attempt or an entry: 26
// characters of lowercase Crockford base32 encoding a 48-bit millisecond
// timestamp followed by 80 random bits, like a lowercase ULID. Ids sort by
// creation time; ids made in the same millisecond by one process still sort
// in creation order. The result is a valid file name and git branch name
// component. Safe for concurrent use.
func NewID() string {
	now := uint64(time.Now().UnixMilli()) & (1<<48 - 1)
	idState.Lock()
	if now > idState.ms {
		idState.ms = now
		if _, err := rand.Read(idState.rand[:]); err != nil {
			panic("session: no system randomness: " + err.Error())
		}
	} else if !increment(idState.rand[:]) {
		// 2^80 ids in one millisecond: move on to the next one.
		idState.ms++
	}
	var raw [16]byte
	ms := idState.ms
	for i := 5; i >= 0; i-- {
		raw[i] = byte(ms)
		ms >>= 8
	}
	copy(raw[6:], idState.rand[:])
	idState.Unlock()
	return encodeID(raw)
}

// increment adds one to the big-endian number b and reports whether it did
// not overflow.
func increment(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

// encodeID writes the 128 bits of raw as 26 base32 digits (the first digit
// carries the top 3 bits, of which the highest is always zero).
func encodeID(raw [16]byte) string {
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(raw[i])
		lo = lo<<8 | uint64(raw[8+i])
	}
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// ValidID reports whether id uses the id alphabet: 1 to 64 characters of
// a-z, 0-9 and '-', not starting with '-'. Every id ink makes is valid; a
// valid id is safe as a file name and inside a git branch name.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
