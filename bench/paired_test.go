package bench

import (
	"testing"
	"time"
)

// floor is what the same work costs without ink: it runs reps times per
// benchmark iteration (more than once when it is too short to time alone).
type floor struct {
	name string
	reps int
	run  func(b *testing.B)
}

// paired times subject with the benchmark timer and, in the same iteration
// but with the timer stopped, every floor with its own clock, alternating
// which goes first. Measuring the two side by side, under whatever load the
// machine has at that moment, is what makes their ratio meaningful on a
// shared machine. It reports, per floor, "<name>-ns/op" and "x-<name>" (the
// subject's time per op over the floor's).
func paired(b *testing.B, subject func(b *testing.B), floors ...floor) {
	b.Helper()
	spent := make([]time.Duration, len(floors))
	runFloors := func() {
		b.StopTimer()
		for i, f := range floors {
			t := time.Now()
			for range max(f.reps, 1) {
				f.run(b)
			}
			spent[i] += time.Since(t)
		}
		b.StartTimer()
	}
	odd := false
	for b.Loop() {
		if odd {
			subject(b)
			runFloors()
		} else {
			runFloors()
			subject(b)
		}
		odd = !odd
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	for i, f := range floors {
		fl := float64(spent[i].Nanoseconds()) / float64(b.N*max(f.reps, 1))
		b.ReportMetric(fl, f.name+"-ns/op")
		if fl > 0 {
			b.ReportMetric(perOp/fl, "x-"+f.name)
		}
	}
}
