package ipc

import (
	"strings"
	"testing"
)

func TestTailBufferKeepsLastLines(t *testing.T) {
	t.Parallel()
	b := newTailBuffer(2)
	_, _ = b.Write([]byte("one\ntwo\n\n  \nthr"))
	_, _ = b.Write([]byte("ee\r\nfour"))
	if got, want := b.String(), "two\nthree\nfour"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
	long := newTailBuffer(1)
	_, _ = long.Write([]byte(strings.Repeat("y", 2000) + "\n"))
	if got := long.String(); len(got) != 512 {
		t.Errorf("a long line kept %d bytes, want 512", len(got))
	}
}
