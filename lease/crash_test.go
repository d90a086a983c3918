package lease

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/durable/crashfs"
)

// TestEpochOnlyGrowsAcrossMachineCrashes: whatever a crash of the machine
// keeps of the writes that no sync covered — the directory operations
// (Journaled) or not (Strict) — the next holder's epoch is larger than
// every epoch used before, also when the crash came while the previous
// holder's heartbeat rewrote its files, and also when it came before a
// SyncLater record was synced (nothing was written under that epoch then).
func TestEpochOnlyGrowsAcrossMachineCrashes(t *testing.T) {
	for _, mode := range []crashfs.Mode{crashfs.Strict, crashfs.Journaled} {
		for _, syncLater := range []bool{false, true} {
			t.Run(fmt.Sprintf("mode%d-synclater-%v", mode, syncLater), func(t *testing.T) {
				root := t.TempDir()
				path := filepath.Join(root, "sessions", "slug", "s.jsonl")
				used := int64(0)
				for round := 1; round <= 3; round++ {
					fsys, err := crashfs.New(root)
					if err != nil {
						t.Fatal(err)
					}
					fsys.Mode = mode
					l, err := AcquireWith(path, Owner{AttemptID: fmt.Sprintf("a%d", round)}, Options{FS: fsys, SyncLater: syncLater, Heartbeat: time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					if e := l.Epoch(); e <= used {
						t.Fatalf("round %d: epoch %d, but epoch %d was already used", round, e, used)
					}
					if syncLater {
						// The holder makes its record durable before it
						// writes anything under the epoch.
						if err := l.SyncRecord(); err != nil {
							t.Fatal(err)
						}
						if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
							t.Fatal(err)
						}
					}
					used = l.Epoch()
					l.StartHeartbeat(time.Millisecond)
					beats := 0
					for beats < 3 {
						before := l.Meta().HeartbeatAt
						waitFor(t, func() bool { return l.Meta().HeartbeatAt.After(before) })
						beats++
					}
					fsys.Crash()
					l.Release()
					if err := fsys.Restore(); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(MetaPath(path)); err != nil {
						t.Fatalf("round %d: the record of a synced epoch is gone after the crash: %v", round, err)
					}
				}
			})
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunning: a previous holder named by its record runs only while its
// process exists, is no zombie, and is the one that wrote the record (not a
// later process that got its pid).
func TestRunning(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); cmd.Wait() })
	now := time.Now()
	m := &Meta{Pid: pid, Host: hostName(), BootID: bootID(), StartedAt: now.Add(time.Minute)}
	if !m.Running() {
		t.Error("a live holder is not running")
	}
	if m.StartedAt = now.Add(-time.Hour); m.Running() {
		t.Error("a process that started after the holder's record is taken for the holder")
	}
	m.StartedAt = now.Add(time.Minute)
	if other := *m; func() bool { other.Host = "another-host"; return other.Running() }() {
		t.Error("a holder on another host is taken as running here")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, func() bool { st, _, ok := procStat(pid); return ok && st == 'Z' })
	if m.Running() {
		t.Error("a zombie is taken as running")
	}
}
