package bench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fanOutScript is a main agent that calls task n times in one message and
// then answers; every child answers in one turn, after wait when it is set.
func fanOutScript(n int, wait string) string {
	var calls []string
	for i := range n {
		calls = append(calls, fmt.Sprintf("{tool: task, args: {prompt: \"child %d: report\"}}", i+1))
	}
	delay := ""
	if wait != "" {
		delay = ", delay: " + wait
	}
	return fmt.Sprintf(`rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [%s]
  - when: {depth: 0, tool: task}
    reply: {text: "all %d children reported"}
  - when: {depth: 1}
    reply: {text: "child report", usage: {input: 100, output: 5}%s}
`, strings.Join(calls, ", "), n, delay)
}

// BenchmarkFanOut measures `ink run` whose main agent calls task N times
// in one message with --max-parallel N (N = 8, 32, 64): one supervisor,
// one main worker, N child workers, N+1 transcripts. Each iteration runs
// beside two floors: "plugin", N starts at once of the smallest go-plugin
// plugin (handshake, ping, kill), and "hello", N fork/execs at once of a
// Go program that does nothing.
//
// Metrics beside the wall time per run: the peak resident set (VmHWM,
// sampled from /proc every 5 ms) of every worker, median and largest; the
// supervisor's own.
func BenchmarkFanOut(b *testing.B) {
	bin := inkBinary(b)
	for _, n := range []int{8, 32, 64} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			h := newHermetic(b)
			script := h.write(b, "fan.yaml", fanOutScript(n, ""))
			want := fmt.Sprintf("all %d children reported", n)
			var workers []int64
			var supervisor int64
			paired(b, func(b *testing.B) {
				cmd := h.command(bin, "run", "--max-parallel", fmt.Sprint(n), "--model", "script:"+script, "fan out")
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				s := startSampler(cmd.Process.Pid, false)
				err := cmd.Wait()
				peaks, self, _ := s.finish()
				if err != nil || !strings.Contains(out.String(), want) {
					b.Fatalf("ink run: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
				}
				if got := strings.Count(errOut.String(), " completed after "); got != n+1 {
					b.Fatalf("%d agents completed, want %d\n%s", got, n+1, errOut.String())
				}
				workers = append(workers, peaks...)
				supervisor = max(supervisor, self)
			}, pluginFloor(n), helloAll(n))
			if len(workers) == 0 {
				b.Fatal("no worker was sampled")
			}
			slices.Sort(workers)
			b.ReportMetric(mib(workers[len(workers)/2]), "worker-rss-p50-MB")
			b.ReportMetric(mib(workers[len(workers)-1]), "worker-rss-max-MB")
			b.ReportMetric(mib(supervisor), "supervisor-rss-MB")
		})
	}
}

// BenchmarkMaxParallel measures 32 task calls in one message whose
// children each wait 1 s, at --max-parallel 64: honoured inside one
// message, they run as one wave and the run takes about 1 s; a window
// held at 8 would run four waves. The floor "wave" is that 1 s. It
// reports the most children the events show running at once.
func BenchmarkMaxParallel(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	const n = 32
	script := h.write(b, "wave.yaml", fanOutScript(n, "1s"))
	peak := 0
	var samples []time.Duration
	for b.Loop() {
		t := time.Now()
		out, err := h.command(bin, "run", "--json", "--max-parallel", "64", "--model", "script:"+script, "fan out").Output()
		samples = append(samples, time.Since(t))
		if err != nil {
			b.Fatalf("ink run: %v\n%s", err, out)
		}
		live := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var e struct{ Type string }
			if json.Unmarshal([]byte(line), &e) != nil {
				continue
			}
			switch e.Type {
			case "task.start":
				live++
				peak = max(peak, live)
			case "task.end":
				live--
			}
		}
	}
	b.ReportMetric(float64(median(samples)), "ns/op")
	b.ReportMetric(float64(time.Second), "wave-ns/op")
	b.ReportMetric(float64(median(samples))/float64(time.Second), "x-wave")
	b.ReportMetric(float64(peak), "peak-children")
}
