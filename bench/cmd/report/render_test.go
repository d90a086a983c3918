package main

import (
	"strings"
	"testing"
	"time"
)

// fullOutput holds every figure the report names.
const fullOutput = `pkg: github.com/inkdev/ink/bench
BenchmarkTask/time-2 20 38613605 ns/op 83.24 binary-MB 2120909 hello-ns/op 5161000 init-ns 232.0 inits 10063143 inkversion-ns/op 18.21 x-hello 3.837 x-inkversion
BenchmarkTask/memory-2 20 344787556 ns/op 1.923 hello-pss-MB 1.930 hello-rss-MB 55.93 pss-MB 52.08 supervisor-rss-MB 52.27 worker-rss-MB
BenchmarkWarmChild-2 6 5855521 ns/op 1978912 hello-ns/op 2.959 x-hello
BenchmarkWarmBackToBack-2 6 3955521 ns/op 1978912 hello-ns/op 1.999 x-hello 6100000 max-ns
BenchmarkRunNoDelegate-2 6 420000000 ns/op 415000000 nopool-ns/op 1.012 x-nopool 90000000 cpu-ns 80000000 nopool-cpu-ns 1.125 x-nopool-cpu
BenchmarkSpawn/spawn-ready-2 20 20206262 ns/op 2040444 hello-ns/op 12166203 plugin-ns/op 9.903 x-hello 1.661 x-plugin
BenchmarkSpawn/first-rpc-2 20 24046292 ns/op 2291090 hello-ns/op 12708866 plugin-ns/op 10.50 x-hello 1.892 x-plugin
BenchmarkFanOut/children=8-2 3 207599734 ns/op 10358377 hello-ns/op 54580315 plugin-ns/op 55.59 supervisor-rss-MB 56.40 worker-rss-max-MB 52.37 worker-rss-p50-MB 20.04 x-hello 3.804 x-plugin
BenchmarkFanOut/children=32-2 3 681807838 ns/op 45317701 hello-ns/op 204604230 plugin-ns/op 60.18 supervisor-rss-MB 58.61 worker-rss-max-MB 52.62 worker-rss-p50-MB 15.05 x-hello 3.332 x-plugin
BenchmarkFanOut/children=64-2 3 1145056075 ns/op 72122310 hello-ns/op 366695154 plugin-ns/op 66.22 supervisor-rss-MB 57.52 worker-rss-max-MB 52.86 worker-rss-p50-MB 15.88 x-hello 3.123 x-plugin
BenchmarkMaxParallel-2 3 1450874322 ns/op 32.00 peak-children 1000000000 wave-ns/op 1.451 x-wave
BenchmarkResumeRead/compacted-2 5 109615881 ns/op 956.89 MB/s 23332226 linescan-ns/op 77540375 readfile-ns/op 4.698 x-linescan 1.414 x-readfile
BenchmarkResumeRead/uncompacted-2 5 1021581969 ns/op 102.67 MB/s 19822150 linescan-ns/op 74301545 readfile-ns/op 51.54 x-linescan 13.75 x-readfile
BenchmarkResumeRead/open-uncompacted-2 5 1016541236 ns/op 103.18 MB/s 24053167 linescan-ns/op 94140747 readfile-ns/op 42.26 x-linescan 10.80 x-readfile
BenchmarkResume/compacted-2 5 197001196 ns/op 532.0 MB/s 19332486 cat-ns/op 90000000 one-turn-ns/op 2.189 x-one-turn 52.52 supervisor-rss-MB 100.2 file-MB 0.5251 supervisor-rss-per-file 71.03 worker-rss-MB 0.7102 worker-rss-per-file 10.19 x-cat
BenchmarkResume/uncompacted-2 5 1417259740 ns/op 74.00 MB/s 20409687 cat-ns/op 52.60 supervisor-rss-MB 100.3 file-MB 0.5259 supervisor-rss-per-file 222.7 worker-rss-MB 2.226 worker-rss-per-file 69.44 x-cat
BenchmarkResumeBeside-2 5 91000000 ns/op 88000000 alone-ns/op 1.034 x-alone 100.0 others-MB 1.4 child-KB
BenchmarkLease/uncontended-2 50 1714861 ns/op 1491 flock-ns/op 1220127 publish-ns/op 1150 x-flock 1.405 x-publish
BenchmarkLease/contended-8-2 50 273199135 ns/op 1065058 flock-ns/op 220335521 publish-ns/op 256.5 x-flock 1.240 x-publish
BenchmarkWorktree/create-settle-2 3 4182419002 ns/op 24.00 git-commands 3286957572 git-ns/op 1.272 x-git
BenchmarkWorktree/assess-2 3 51110809 ns/op 6.000 git-commands 49307962 git-ns/op 1.037 x-git
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
		"| one-turn `ink task` ≤ 8× a fork/exec of a Go program that does nothing | 38.6 ms | 2.12 ms (`hello`) | 18.2× | **missed** |",
		"| `ink task`: supervisor and worker together ≤ 25 MB PSS | 55.9 MiB | 1.9 MiB (`hello`) | — | **missed** |",
		"| 64 children in one message ≤ 2× 64 starts at once of the smallest go-plugin plugin | 1.15 s | 367 ms (`plugin`) | 3.12× | **missed** |",
		"| `--max-parallel 64` honoured inside one message: 32 children that wait 1 s run in one wave | 1.45 s, 32 at once | 1.00 s (one wave) | 1.45× | met |",
		"| resume of a 100 MB transcript (compacted as ink compacts it) ≤ 0.3 s end to end | 197 ms | 19.3 ms (`cat`) | 10.2× | met |",
		"| …and no process above 1.2× the file's size (never compacted) | supervisor 52.6 MiB (0.526×), worker 222.7 MiB (2.23×) | the file: 100.3 MiB | 2.23× of the file | **missed** |",
		"one start of the ink binary (`ink version`, 10.1 ms) is already 4.74× the floor: the Go runtime, 232 package inits taking 5.16 ms",
		"| 64 | 1.15 s | 17.9 ms | 367 ms | 3.12× | ≤ 2× | **missed** | 72.1 ms | 52.9 MiB / 57.5 MiB | 66.2 MiB |",
		"| uncontended acquire + release | 1.71 ms | 1.22 ms | 1.41× | ≤ 1.5× | met | 1.49 µs | 1,150× |",
		"| assess (clean) | 51.1 ms | 49.3 ms | 1.04× | ≤ 1.2× | met | 6.00 |",
		"| compacted, ReadForResume | 110 ms (957 MB/s) | 77.5 ms | 1.41× | ≤ 3× | met | 23.3 ms | 4.70× |",
		"BenchmarkWorktree/assess-2 3 51110809 ns/op",
		"| resume of a 100 MB transcript (compacted as ink compacts it) ≤ 2× a one-turn resume | 197 ms | 90.0 ms (one-turn resume) | 2.19× | **missed** |",
		"| resume beside 100 MB of other sessions ≤ 1.2× the same resume alone | 91.0 ms | 88.0 ms (alone) | 1.03× | met |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(doc)
	}
}

func TestRenderMissing(t *testing.T) {
	res, err := parseBench(strings.NewReader(strings.ReplaceAll(fullOutput, "BenchmarkWorktree/assess-2", "BenchmarkWorktree/renamed-2")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = render(machine{}, res, "")
	if err == nil || !strings.Contains(err.Error(), "BenchmarkWorktree/assess ns/op") {
		t.Fatalf("err = %v, want one naming BenchmarkWorktree/assess", err)
	}
}
