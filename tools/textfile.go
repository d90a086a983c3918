package tools

import "bytes"

// sniffLen is how much of a file is inspected to tell text from binary.
const sniffLen = 8000

// looksBinary reports whether data (the start of a file) holds a NUL byte,
// the same rule git uses to call a file binary.
func looksBinary(data []byte) bool {
	if len(data) > sniffLen {
		data = data[:sniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}
