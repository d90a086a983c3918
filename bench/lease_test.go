package bench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/inkdev/ink/lease"
)

// BenchmarkLease measures ink's transcript lease beside its floors in the
// same loop:
//   - uncontended: lease.Acquire + Release (flock, identity checks, the
//     previous record read, the new one published durably) beside
//     "publish", a flock around the least a durable record costs (write a
//     temp file, fsync, rename, fsync the directory), and "flock", a bare
//     flock LOCK_EX|LOCK_NB + LOCK_UN;
//   - contended-8: 8 processes taking turns on one lease, 25 acquisitions
//     each per op, beside 8 processes doing the same with a blocking raw
//     flock around a durable publish ("publish") and around nothing
//     ("flock"). One op is 200 acquisitions.
func BenchmarkLease(b *testing.B) {
	b.Run("uncontended", func(b *testing.B) {
		dir := b.TempDir()
		path := filepath.Join(dir, "t.jsonl")
		f, err := os.OpenFile(filepath.Join(dir, "raw.lock"), os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		lockAround := func(b *testing.B, work func() error) {
			if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				b.Fatal(err)
			}
			if err := work(); err != nil {
				b.Fatal(err)
			}
			if err := syscall.Flock(fd, syscall.LOCK_UN); err != nil {
				b.Fatal(err)
			}
		}
		paired(b, func(b *testing.B) {
			l, err := lease.Acquire(path, lease.Owner{AttemptID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(); err != nil {
				b.Fatal(err)
			}
		},
			floor{name: "publish", run: func(b *testing.B) {
				lockAround(b, func() error { return durablePublish(filepath.Join(dir, "floor.meta")) })
			}},
			floor{name: "flock", reps: 100, run: func(b *testing.B) { lockAround(b, func() error { return nil }) }},
		)
	})
	b.Run("contended-8", func(b *testing.B) {
		const procs, each = 8, 25
		c := startContenders(b, procs, filepath.Join(b.TempDir(), "t.jsonl"))
		paired(b, func(b *testing.B) { c.round(b, "lease", each) },
			floor{name: "publish", run: func(b *testing.B) { c.round(b, "publish", each) }},
			floor{name: "flock", run: func(b *testing.B) { c.round(b, "flock", each) }},
		)
	})
}
