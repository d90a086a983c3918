package lease

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAcquireRelease measures an uncontended Acquire+Release (lock,
// identity checks, metadata read and atomic publish with two fsyncs) beside
// the floor: a bare flock LOCK_EX|LOCK_NB + LOCK_UN on an open descriptor.
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("lease", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "t.jsonl")
		for b.Loop() {
			l, err := Acquire(path, Owner{AttemptID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flock-floor", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw.lock"), os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		for b.Loop() {
			if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				b.Fatal(err)
			}
			if err := syscall.Flock(fd, syscall.LOCK_UN); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkContention8 measures successful acquisitions per second when 8
// processes share one lease, beside the floor of 8 processes taking a raw
// blocking flock on one file. One iteration is one acquisition in total.
func BenchmarkContention8(b *testing.B) {
	for _, mode := range []string{"lease", "flock"} {
		name := mode
		if mode == "flock" {
			name = "flock-floor"
		}
		b.Run(name, func(b *testing.B) {
			const procs = 8
			dir := b.TempDir()
			path := filepath.Join(dir, "t.jsonl")
			start := filepath.Join(dir, "start")
			var hs []*helperProc
			for i := 0; i < procs; i++ {
				count := b.N / procs
				if i < b.N%procs {
					count++
				}
				hs = append(hs, startHelper(b, "bench", false,
					"LEASE_PATH="+path, "START="+start, "MODE="+mode, "COUNT="+strconv.Itoa(count)))
			}
			for _, h := range hs {
				if l := h.line(b); l != "ready" {
					b.Fatalf("helper said %q", l)
				}
			}
			b.ResetTimer()
			began := time.Now()
			if err := os.WriteFile(start, nil, 0o600); err != nil {
				b.Fatal(err)
			}
			for _, h := range hs {
				h.stdin.Close()
				if err := h.wait(b); err != nil {
					b.Fatalf("helper: %v", err)
				}
			}
			elapsed := time.Since(began)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
		})
	}
}
