// Package bench holds ink's end-to-end benchmarks. Each one measures ink
// beside its floor in the same loop — what the same work costs without
// ink's machinery — alternating which goes first, and reports the medians
// and their ratio. The floors are built here from sources in testdata: a
// Go program that does nothing (testdata/hello), for the cost of any Go
// process's start, and the smallest go-plugin plugin over gRPC
// (testdata/plugin), for the cost of a go-plugin worker's; others are
// `cat` of a file, os.ReadFile, a raw flock, a durable record written by
// hand, and the git commands ink runs, replayed without ink.
//
// The benchmarks drive the real ink binary, built once per test binary
// with `go build` the first time a benchmark needs it, with INK_HOME and
// HOME in temporary directories. They run only with -bench, so
// `go test ./...` stays fast:
//
//	go test -run '^$' -bench . ./bench
//
// The driver in bench/cmd/report (`make bench`) runs all of them and
// writes docs/benchmarks.md, where every row names its target and says
// whether it is met; `go run ./bench/cmd/report -only Resume` runs only
// the invocations whose pattern matches and prints their output.
package bench
