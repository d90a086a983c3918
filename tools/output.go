package tools

import (
	"fmt"
	"strings"
	"sync"
)

// cappedOutput keeps the first and last bytes of a stream written to it and
// counts what it drops in between, so a command's output stays bounded
// while its start and its end (where errors usually are) survive. It is
// safe for concurrent use.
type cappedOutput struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte
	total   int64
}

// newCappedOutput keeps at most limit bytes: half from the start, half from
// the end.
func newCappedOutput(limit int) *cappedOutput {
	h := limit / 2
	return &cappedOutput{headMax: h, tailMax: limit - h}
}

// Write stores p; it never fails.
func (c *cappedOutput) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	rest := p
	if room := c.headMax - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		c.tail = append(c.tail, rest...)
		if len(c.tail) > 2*c.tailMax {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailMax:]...)
		}
	}
	return len(p), nil
}

// String returns the kept text, with a note where bytes were dropped.
// Invalid UTF-8 (including a rune cut at the seams) becomes U+FFFD.
func (c *cappedOutput) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if len(tail) > c.tailMax {
		tail = tail[len(tail)-c.tailMax:]
	}
	dropped := c.total - int64(len(c.head)+len(tail))
	var b strings.Builder
	b.Write(c.head)
	if dropped > 0 {
		fmt.Fprintf(&b, "\n[... %d bytes of output dropped here; the first %d and last %d bytes are shown. Redirect output to a file and grep or read it to see more ...]\n",
			dropped, len(c.head), len(tail))
	}
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// byteSize formats a byte count for people: "50 KiB", "300 bytes".
func byteSize(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
