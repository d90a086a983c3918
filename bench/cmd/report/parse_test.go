package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/inkdev/ink/bench
cpu: AMD EPYC
BenchmarkSpawn/spawn-ready-2         	       5	 431040442 ns/op	 259736171 forkexec-ns/op	         1.660 x-forkexec
BenchmarkResume/open-validate-repair-2         	       3	7317381787 ns/op	  14.33 MB/s	 151179027 linescan-ns/op
BenchmarkAcquireRelease/flock-floor      	 1000000	      1007 ns/op
BenchmarkContention8
BenchmarkContention8/lease-2          	    2000	    612345 ns/op	  1633 acq/s
PASS
ok  	github.com/inkdev/ink/bench	62.954s
`

func TestParseBench(t *testing.T) {
	got, err := parseBench(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("parsed %d results, want 4: %v", len(got), got)
	}
	r := got["BenchmarkSpawn/spawn-ready"]
	if r.N != 5 || r.Metrics["ns/op"] != 431040442 || r.Metrics["x-forkexec"] != 1.660 {
		t.Errorf("spawn-ready = %+v", r)
	}
	if r := got["BenchmarkResume/open-validate-repair"]; r.Metrics["MB/s"] != 14.33 {
		t.Errorf("resume = %+v", r)
	}
	if r := got["BenchmarkAcquireRelease/flock-floor"]; r.N != 1000000 || r.Metrics["ns/op"] != 1007 {
		t.Errorf("a name without a GOMAXPROCS suffix: %+v", r)
	}
	if r := got["BenchmarkContention8/lease"]; r.Metrics["acq/s"] != 1633 {
		t.Errorf("contention = %+v", r)
	}
}

func TestParseBenchMalformed(t *testing.T) {
	for _, line := range []string{
		"BenchmarkX-2 many 12 ns/op",
		"BenchmarkX-2 5 twelve ns/op",
		"BenchmarkX-2 5 12",
	} {
		if _, err := parseBench(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for ns, want := range map[float64]string{
		812:           "812 ns",
		7754:          "7.75 µs",
		431040442:     "431 ms",
		7317381787:    "7.32 s",
		12_345_678_90: "1.23 s",
	} {
		if got := formatNs(ns); got != want {
			t.Errorf("formatNs(%v) = %q, want %q", ns, got, want)
		}
	}
}

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{
		1.66:    "1.66",
		92447:   "92,400",
		0.5:     "0.500",
		14.33:   "14.3",
		1633:    "1,630",
		1234567: "1,230,000",
	} {
		if got := sig3(v); got != want {
			t.Errorf("sig3(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestMemory(t *testing.T) {
	if got := memory("24683620 kB"); got != "23.5 GiB" {
		t.Errorf("memory = %q", got)
	}
	if got := memory("unknown"); got != "unknown" {
		t.Errorf("memory(unknown) = %q", got)
	}
}
