package main

import (
	"strings"
	"testing"
	"time"
)

// fullOutput holds every figure the report names.
const fullOutput = `pkg: github.com/inkdev/ink/bench
BenchmarkSpawn/spawn-ready-2 5 431040442 ns/op 259736171 forkexec-ns/op 1.660 x-forkexec
BenchmarkSpawn/first-rpc-2 5 515221598 ns/op 305743127 forkexec-ns/op 1.685 x-forkexec
BenchmarkTaskRoundTrip/ink-task-2 5 924469985 ns/op 10000 loop-ns/op 92447 x-loop
BenchmarkTaskRoundTrip/orchestrator-2 5 600032001 ns/op 7754 loop-ns/op 77388 x-loop
BenchmarkFanOut/children=8-2 2 1468114348 ns/op 1.000 sampled-fraction 36.23 supervisor-rss-MB 34.24 worker-rss-max-MB 33.58 worker-rss-p50-MB 1260303180 forkexec-ns/op 1.16 x-forkexec 36.42 forkexec-rss-MB
BenchmarkFanOut/children=32-2 2 4164440495 ns/op 1.000 sampled-fraction 38.41 supervisor-rss-MB 38.08 worker-rss-max-MB 33.95 worker-rss-p50-MB 3260303180 forkexec-ns/op 1.27 x-forkexec 36.42 forkexec-rss-MB
BenchmarkFanOut/children=64-2 2 10806041954 ns/op 1.000 sampled-fraction 40.16 supervisor-rss-MB 40.16 worker-rss-max-MB 34.42 worker-rss-p50-MB 9260303180 forkexec-ns/op 1.17 x-forkexec 36.42 forkexec-rss-MB
BenchmarkResume/open-validate-repair-2 3 7317381787 ns/op 14.33 MB/s 151179027 linescan-ns/op 1291199277 readfile-ns/op 48.40 x-linescan 5.667 x-readfile
pkg: github.com/inkdev/ink/lease
BenchmarkAcquireRelease/lease-2 10000 120000 ns/op
BenchmarkAcquireRelease/flock-floor-2 1000000 1000 ns/op
BenchmarkContention8/lease-2 2000 600000 ns/op 1666 acq/s
BenchmarkContention8/flock-floor-2 20000 60000 ns/op 16666 acq/s
pkg: github.com/inkdev/ink/worktree
BenchmarkWorktree/ink-create-assess-remove-2 10 300000000 ns/op
BenchmarkWorktree/git-add-remove-2 10 200000000 ns/op
BenchmarkWorktree/ink-assess-2 10 50000000 ns/op
BenchmarkWorktree/git-status-2 10 25000000 ns/op
`

func TestRenderFull(t *testing.T) {
	res, err := parseBench(strings.NewReader(fullOutput))
	if err != nil {
		t.Fatal(err)
	}
	m := machine{Date: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), Commit: "abc1234", CPU: "AMD EPYC", Cores: 2, LoadBefore: "3.1 2.0 1.5", LoadAfter: "4.0 3.0 2.0"}
	doc, err := render(m, res, fullOutput)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2026-11-30 14:00 UTC from commit abc1234",
		"| spawn to ready (Start + Info + Kill) | 431 ms | 260 ms | 1.66× |",
		"| `ink task` end to end (CLI, shell session, one worker) | 924 ms | 10.0 µs | 92,400× |",
		"| 64 | 10.8 s | 169 ms | 9.26 s | 1.17× | 34.4 MiB / 40.2 MiB | 40.2 MiB | 36.4 MiB |",
		"| uncontended acquire + release | 120 µs | 1.00 µs (raw flock) | 120× |",
		"| 8-process contention, per acquisition | 600 µs (1,670 acq/s) | 60.0 µs (16,700 acq/s) | 10.0× |",
		"| create + assess + remove | 300 ms | 200 ms (`git worktree add -b` + `remove`) | 1.50× |",
		"| open + validate + repair | 7.32 s (14.3 MB/s) | 1.29 s | 5.67× | 151 ms | 48.4× |",
		"BenchmarkWorktree/git-status-2 10 25000000 ns/op",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q\n%s", want, doc)
		}
	}
}

func TestRenderMissing(t *testing.T) {
	res, err := parseBench(strings.NewReader(strings.ReplaceAll(fullOutput, "BenchmarkWorktree/ink-assess-2", "BenchmarkWorktree/renamed-2")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = render(machine{}, res, "")
	if err == nil || !strings.Contains(err.Error(), "BenchmarkWorktree/ink-assess ns/op") {
		t.Fatalf("err = %v, want one naming BenchmarkWorktree/ink-assess", err)
	}
}
