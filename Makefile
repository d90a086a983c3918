# make bench runs ink's benchmarks, each beside its floor, and writes
# docs/benchmarks.md. It takes several minutes.
.PHONY: bench
bench:
	go run ./bench/cmd/report
