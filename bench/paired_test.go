package bench

import (
	"slices"
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

// paired times subject and, in the same iteration, every floor, alternating
// which goes first. Measuring the two side by side, under whatever load the
// machine has at that moment, is what makes their ratio meaningful on a
// shared machine. It reports the median of the subject's times as ns/op
// and, per floor, the median of its times as "<name>-ns/op" and the ratio
// of the two medians as "x-<name>". Medians, because a loaded machine
// stalls single iterations of either now and then. It returns the
// subject's median.
func paired(b *testing.B, subject func(b *testing.B), floors ...floor) time.Duration {
	b.Helper()
	return pairedMeasure(b, func(b *testing.B) []time.Duration {
		t := time.Now()
		subject(b)
		return []time.Duration{time.Since(t)}
	}, floors...)
}

// pairedMeasure is paired for a subject that measures itself: it returns
// one or more samples per iteration (a run of ink whose children each give
// one, say).
func pairedMeasure(b *testing.B, subject func(b *testing.B) []time.Duration, floors ...floor) time.Duration {
	b.Helper()
	var samples []time.Duration
	spent := make([][]time.Duration, len(floors))
	runFloors := func() {
		for i, f := range floors {
			reps := max(f.reps, 1)
			t := time.Now()
			for range reps {
				f.run(b)
			}
			spent[i] = append(spent[i], time.Since(t)/time.Duration(reps))
		}
	}
	odd := false
	for b.Loop() {
		b.StopTimer()
		if odd {
			samples = append(samples, subject(b)...)
			runFloors()
		} else {
			runFloors()
			samples = append(samples, subject(b)...)
		}
		odd = !odd
		b.StartTimer()
	}
	med := median(samples)
	b.ReportMetric(float64(med), "ns/op")
	for i, f := range floors {
		fl := median(spent[i])
		b.ReportMetric(float64(fl), f.name+"-ns/op")
		if fl > 0 {
			b.ReportMetric(float64(med)/float64(fl), "x-"+f.name)
		}
	}
	return med
}

// median is the middle of ds (the mean of the two middle ones for an even
// count); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
