// Package version holds ink's version, the one source every part of ink
// reports and records. It imports nothing.
package version

// Ink is this build's version: recorded in every child's launch record (a
// resume by another version is refused as version-drift), answered by a
// worker's Info, shown by `ink version` and announced by `ink mcp`. A
// release sets it at link time:
//
//	go build -ldflags "-X github.com/inkdev/ink/version.Ink=1.2.3" ./cmd/ink
var Ink = "0.1.0-dev"
