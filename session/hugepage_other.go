//go:build !linux

package session

// hugeBuffer returns an empty buffer of capacity n.
func hugeBuffer(n int) []byte { return make([]byte, 0, n) }
