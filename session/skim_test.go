package session

import (
	"encoding/binary"
	"testing"
)

// TestPlainWord: the eight-byte test says "plain" exactly when no byte is
// a quote, a backslash or a control character, whatever the other bytes.
func TestPlainWord(t *testing.T) {
	t.Parallel()
	for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, ' ', '!', '#', '[', ']'} {
		for c := 0; c < 256; c++ {
			for pos := range 8 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				want := !strClass[c] && !strClass[fill]
				if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
					t.Fatalf("plainWord(% x) = %v, want %v", w, got, want)
				}
			}
		}
	}
}
