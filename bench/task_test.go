package bench

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// oneTurnScript answers every request with one line of text: one model turn,
// no tool call.
const oneTurnScript = "rules:\n  - reply: {text: \"hello from the script\", usage: {input: 100, output: 5}}\n"

// BenchmarkTask measures `ink task` of one child that answers in one turn
// on the script model — the CLI end to end: the supervisor, its shell
// session and lease, one worker with its lease and transcript, the composed
// result on stdout.
//   - time: beside the floor "hello", the fork/exec of a Go program that
//     does nothing, and "inkversion", a start of the ink binary itself
//     (`ink version`), which says what two ink processes cost before they
//     do anything;
//   - memory: the same task with a child that waits 300 ms, its supervisor
//     and worker sampled from /proc: the largest proportional set size
//     (Pss) of the two together, and each one's peak resident set; beside
//     the same of the Go program that does nothing, made to wait.
func BenchmarkTask(b *testing.B) {
	bin := inkBinary(b)
	h := newHermetic(b)
	script := h.write(b, "one-turn.yaml", oneTurnScript)
	inkVersion := floor{name: "inkversion", run: func(b *testing.B) { h.run(b, bin, "version") }}

	b.Run("time", func(b *testing.B) {
		paired(b, func(b *testing.B) {
			out, err := h.command(bin, "task", "--model", "script:"+script, "say hello").Output()
			if err != nil || !strings.Contains(string(out), "hello from the script") {
				b.Fatalf("ink task: %v\n%s", err, out)
			}
		}, helloFloor(5), inkVersion)
		// What one start of the binary initialises, and how big it is.
		inits, initNs := initTrace(b, h, bin)
		b.ReportMetric(float64(inits), "inits")
		b.ReportMetric(initNs, "init-ns")
		if st, err := os.Stat(bin); err == nil {
			b.ReportMetric(float64(st.Size())/(1<<20), "binary-MB")
		}
	})
	b.Run("memory", func(b *testing.B) {
		slow := h.write(b, "slow.yaml", "rules:\n  - reply: {text: \"hello from the script\", delay: 300ms}\n")
		var pss, sup, work []int64
		for b.Loop() {
			cmd := h.command(bin, "task", "--model", "script:"+slow, "say hello")
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			s := startSampler(cmd.Process.Pid, true)
			err := cmd.Wait()
			workers, self, family := s.finish()
			if err != nil || !strings.Contains(out.String(), "hello from the script") || len(workers) != 1 {
				b.Fatalf("ink task: %v (%d workers sampled)\n%s", err, len(workers), out.String())
			}
			pss, sup, work = append(pss, family), append(sup, self), append(work, workers[0])
		}
		b.ReportMetric(mib(medianKB(pss)), "pss-MB")
		b.ReportMetric(mib(medianKB(sup)), "supervisor-rss-MB")
		b.ReportMetric(mib(medianKB(work)), "worker-rss-MB")
		// The floor's: a Go program that does nothing but wait.
		cmd := exec.Command(bins.hello, "wait")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		s := startSampler(cmd.Process.Pid, true)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		_, rss, hpss := s.finish()
		b.ReportMetric(mib(hpss), "hello-pss-MB")
		b.ReportMetric(mib(rss), "hello-rss-MB")
	})
}

// medianKB is the middle value of kbs.
func medianKB(kbs []int64) int64 {
	if len(kbs) == 0 {
		return 0
	}
	s := slices.Clone(kbs)
	slices.Sort(s)
	return s[len(s)/2]
}

// mib turns KiB into MiB.
func mib(kb int64) float64 { return float64(kb) / 1024 }

// initTrace runs `ink version` with GODEBUG=inittrace=1 and returns how
// many packages it initialised and the time their inits took, in ns.
func initTrace(b *testing.B, h *hermetic, bin string) (int, float64) {
	b.Helper()
	cmd := h.command(bin, "version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	var trace strings.Builder
	cmd.Stderr = &trace
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	n, ms := 0, 0.0
	for _, line := range strings.Split(trace.String(), "\n") {
		// "init PKG @T ms, D ms clock, B bytes, A allocs"
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "init" {
			continue
		}
		d, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		n++
		ms += d
	}
	return n, ms * 1e6
}
