package bench

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fanOutScript is a main agent that calls task n times in one message and
// then answers; every child answers in one turn.
func fanOutScript(n int) string {
	var calls []string
	for i := range n {
		calls = append(calls, fmt.Sprintf("{tool: task, args: {prompt: \"child %d: report\"}}", i+1))
	}
	return fmt.Sprintf(`rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [%s]
  - when: {depth: 0, tool: task}
    reply: {text: "all %d children reported"}
  - when: {depth: 1}
    reply: {text: "child report", usage: {input: 100, output: 5}}
`, strings.Join(calls, ", "), n)
}

// BenchmarkFanOut measures `ink run` whose main agent calls task N times in
// one message with --max-parallel N (N = 8, 32, 64): one supervisor, one
// main worker, N child workers, N+1 transcripts. Each iteration runs beside
// the floor "forkexec": N bare fork/execs of the binary (`ink version`)
// started at once and waited for.
//
// Metrics beside the wall time per run: the peak resident set (VmHWM,
// sampled from /proc every 5 ms) of every worker, median and largest; the
// supervisor's own; and the peak of one `ink version` from wait4's rusage.
func BenchmarkFanOut(b *testing.B) {
	bin := inkBinary(b)
	for _, n := range []int{8, 32, 64} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			h := newHermetic(b)
			script := h.write(b, "fan.yaml", fanOutScript(n))
			want := fmt.Sprintf("all %d children reported", n)
			var workers []int64
			var supervisor int64
			bare := floor{name: "forkexec", run: func(b *testing.B) { forkExecAll(b, h, bin, n) }}
			paired(b, func(b *testing.B) {
				cmd := h.command(bin, "run", "--max-parallel", fmt.Sprint(n), "--model", "script:"+script, "fan out")
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				s := startRSSSampler(cmd.Process.Pid)
				err := cmd.Wait()
				peaks, self := s.finish()
				if err != nil || !strings.Contains(out.String(), want) {
					b.Fatalf("ink run: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
				}
				if got := strings.Count(errOut.String(), " completed after "); got != n+1 {
					b.Fatalf("%d agents completed, want %d\n%s", got, n+1, errOut.String())
				}
				workers = append(workers, peaks...)
				supervisor = max(supervisor, self)
			}, bare)
			reportRSS(b, workers, supervisor, n+1)
			b.ReportMetric(float64(maxRSS(h.run(b, bin, "version")))/1024, "forkexec-rss-MB")
		})
	}
}

// forkExecAll starts n `ink version` at once and waits for all of them.
func forkExecAll(b *testing.B, h *hermetic, bin string, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		cmd := h.command(bin, "version")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { errs <- cmd.Wait() })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// reportRSS reports the median and largest worker peak and the supervisor's
// peak in MiB, and how many workers per run were sampled (a check that the
// sampler saw them: it should be close to perRun).
func reportRSS(b *testing.B, workers []int64, supervisor int64, perRun int) {
	b.Helper()
	if len(workers) == 0 {
		b.Fatal("no worker was sampled")
	}
	slices.Sort(workers)
	b.ReportMetric(float64(workers[len(workers)/2])/1024, "worker-rss-p50-MB")
	b.ReportMetric(float64(workers[len(workers)-1])/1024, "worker-rss-max-MB")
	b.ReportMetric(float64(supervisor)/1024, "supervisor-rss-MB")
	b.ReportMetric(float64(len(workers))/float64(b.N)/float64(perRun), "sampled-fraction")
}
