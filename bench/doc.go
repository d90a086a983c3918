// Package bench holds ink's end-to-end benchmarks (DESIGN.md §12). Each one
// measures ink beside its floor in the same run: what the same work costs
// without ink's machinery (a bare fork/exec of the binary, an in-process
// agent loop, N bare processes at once, reading the file).
//
// The benchmarks drive the real ink binary, built once per test binary with
// `go build` the first time a benchmark needs it, with INK_HOME and HOME in
// temporary directories. They run only with -bench, so `go test ./...` stays
// fast:
//
//	go test -run '^$' -bench . ./bench
//
// The lease and worktree floors live beside their packages
// (lease/bench_test.go, worktree/bench_test.go). The driver in bench/cmd/report
// (`make bench`) runs all of them and writes docs/benchmarks.md.
package bench
