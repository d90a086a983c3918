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

// TestLostAttemptReasons: an attempt whose holder stopped without
// recording its end is lost "host lost" when that holder ran in this boot
// of this host and is gone, and "machine restarted" when it ran in an
// earlier boot (its boot id differs), as a probe of the free lease says
// too; while that holder still runs, its end may not be written.
func TestLostAttemptReasons(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(live.Process.Pid, syscall.SIGKILL); live.Wait() })
	later := time.Now().Add(time.Minute) // after the live process started
	for _, tc := range []struct {
		name   string
		edit   func(*Meta)
		loss   Loss
		reason string
		gone   bool
	}{
		{"gone in this boot", func(m *Meta) { m.Pid = dead.Process.Pid }, HostLost, "host lost", true},
		{"an earlier boot", func(m *Meta) { m.Pid = live.Process.Pid; m.BootID = "an-earlier-boot" }, MachineRestarted, "machine restarted", true},
		{"still running", func(m *Meta) { m.Pid = live.Process.Pid; m.StartedAt = later }, HostLost, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := transcriptPath(t)
			l := mustAcquire(t, path, Owner{AttemptID: "lost"})
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			rewriteMeta(t, path, tc.edit)
			st, err := Probe(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Lost(); got != tc.loss {
				t.Errorf("probe of the free lease: Lost() = %v (%q), want %v", got, got, tc.loss)
			}
			next := mustAcquire(t, path, Owner{AttemptID: "next"})
			defer next.Release()
			reason, gone := next.LostAttempt("lost")
			if reason != tc.reason || gone != tc.gone {
				t.Errorf("LostAttempt = %q, %v; want %q, %v", reason, gone, tc.reason, tc.gone)
			}
		})
	}
}
