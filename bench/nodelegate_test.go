package bench

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRunNoDelegate measures what the warm pool costs a run that
// never delegates: `ink run` whose main agent may delegate (the default
// --max-depth 1, so the pool is on, waiting for a first task call) but
// answers in one turn after 300 ms, as a model would, beside the floor
// "nopool": the same run with --max-depth 0, where the main agent cannot
// delegate and no pool exists. It reports wall time and, as
// "cpu-ns"/"nopool-cpu-ns", the medians of the CPU time (user and system)
// of ink and every process it waited for.
func BenchmarkRunNoDelegate(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	script := h.write(b, "answer.yaml", "rules:\n  - when: {depth: 0}\n    reply: {delay: 300ms, text: \"done\"}\n")
	var cpu, floorCPU []time.Duration
	run := func(b *testing.B, extra ...string) time.Duration {
		cmd := h.command(bin, append([]string{"run", "--model", "script:" + script}, append(extra, "answer")...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ink run: %v\n%s", err, out)
		}
		return cpuOf(cmd)
	}
	paired(b, func(b *testing.B) {
		cpu = append(cpu, run(b))
	}, floor{name: "nopool", run: func(b *testing.B) {
		floorCPU = append(floorCPU, run(b, "--max-depth", "0"))
	}})
	b.ReportMetric(float64(median(cpu)), "cpu-ns")
	b.ReportMetric(float64(median(floorCPU)), "nopool-cpu-ns")
	if f := median(floorCPU); f > 0 {
		b.ReportMetric(float64(median(cpu))/float64(f), "x-nopool-cpu")
	}
}

// cpuOf is the user and system CPU time of a finished command and of every
// process it waited for.
func cpuOf(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
