//go:build !linux

package session

// adviseHuge is a no-op where transparent huge pages are not known.
func adviseHuge(b []byte) {}
