# make bench runs ink's benchmarks, each beside its floor in the same loop,
# and writes docs/benchmarks.md with every target met or missed. It takes
# ten minutes or more on a small machine.
.PHONY: bench
bench:
	go run ./bench/cmd/report
