package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// result is one benchmark line of `go test -bench` output.
type result struct {
	Name    string             // without the -GOMAXPROCS suffix
	N       int                // iterations
	Metrics map[string]float64 // unit -> value, e.g. "ns/op", "MB/s", "x-forkexec"
}

// procsSuffix is the "-N" that go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads `go test -bench` output and returns its benchmark lines
// by name. A name seen twice (-count > 1) keeps its last line. Lines that are
// not benchmark results are ignored; a malformed result line is an error.
func parseBench(r io.Reader) (map[string]result, error) {
	out := map[string]result{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			// "BenchmarkX" alone is the name printed before a failure or
			// a sub-benchmark's parent: not a result.
			if len(f) == 1 {
				continue
			}
			return nil, fmt.Errorf("malformed benchmark line %q", line)
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("benchmark line %q: iterations: %v", line, err)
		}
		res := result{Name: procsSuffix.ReplaceAllString(f[0], ""), N: n, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: value %q: %v", line, f[i], err)
			}
			res.Metrics[f[i+1]] = v
		}
		out[res.Name] = res
	}
	return out, sc.Err()
}
