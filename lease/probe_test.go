package lease

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProbeStates(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)

	st, err := Probe(path)
	if err != nil || st.State != Free || st.Meta != nil {
		t.Fatalf("Probe of a never-used transcript = %+v, %v", st, err)
	}
	if _, err := os.Lstat(FilePath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Probe created the lease file: %v", err)
	}

	l := mustAcquire(t, path, Owner{AttemptID: "a", Agent: "scout"})
	st, err = Probe(path)
	if err != nil || st.State != Held || st.Meta == nil || st.Meta.AttemptID != "a" {
		t.Fatalf("Probe of a held lease = %+v, %v", st, err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Probe disturbed the holder: %v", err)
	}

	rewriteMeta(t, path, func(m *Meta) {
		m.HeartbeatAt = time.Now().Add(-time.Hour)
		m.HeartbeatIntervalMs = 100
	})
	st, err = Probe(path)
	if err != nil || st.State != Hung || st.HeartbeatAge < 59*time.Minute {
		t.Fatalf("Probe of a stale heartbeat = %+v, %v", st, err)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	st, err = Probe(path)
	if err != nil || st.State != Free || st.Meta == nil || st.Meta.AttemptID != "a" {
		t.Fatalf("Probe after release = %+v, %v (want free with the last holder's metadata)", st, err)
	}
}

func TestHungAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		interval, want time.Duration
	}{
		{0, 5 * time.Second},
		{time.Second, 5 * time.Second},
		{100 * time.Millisecond, 2300 * time.Millisecond},
	}
	for _, c := range cases {
		if got := HungAfter(c.interval); got != c.want {
			t.Errorf("HungAfter(%v) = %v, want %v", c.interval, got, c.want)
		}
	}
}

func TestListFindsEveryLease(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if got, err := List(home); err != nil || len(got) != 0 {
		t.Fatalf("List without sessions = %v, %v", got, err)
	}
	main := filepath.Join(home, "sessions", "proj", "main.jsonl")
	child := filepath.Join(home, "sessions", "proj", "main", "children", "c1.jsonl")
	done := filepath.Join(home, "sessions", "other", "done.jsonl")
	bad := filepath.Join(home, "sessions", "other", "bad.jsonl")

	mustAcquire(t, main, Owner{AttemptID: "m", Agent: ""})
	mustAcquire(t, child, Owner{AttemptID: "c", Agent: "scout"})
	rewriteMeta(t, child, func(m *Meta) { m.HeartbeatAt = time.Now().Add(-time.Minute) })
	l := mustAcquire(t, done, Owner{AttemptID: "d"})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", FilePath(bad)); err != nil {
		t.Fatal(err)
	}

	got, err := List(home)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]State{main: Held, child: Hung, done: Free}
	if len(got) != 4 {
		t.Fatalf("List found %d leases, want 4: %+v", len(got), got)
	}
	for _, in := range got {
		if in.Path == bad {
			if !errors.Is(in.Err, ErrBadLeaseFile) {
				t.Errorf("symlinked lease listed with Err = %v", in.Err)
			}
			continue
		}
		if in.Err != nil || in.State != want[in.Path] || in.Pid != os.Getpid() || in.Epoch != 1 || in.LeasePath != FilePath(in.Path) {
			t.Errorf("List entry %+v, want state %v", in, want[in.Path])
		}
		if in.Path == child && (in.Agent != "scout" || in.HeartbeatAge < 59*time.Second) {
			t.Errorf("child entry %+v", in)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Path > got[i].Path {
			t.Errorf("List not sorted: %s before %s", got[i-1].Path, got[i].Path)
		}
	}
}

// sleeper starts a harmless process whose pid can stand in for a holder in
// metadata; Break must never signal it in these tests.
func sleeper(t *testing.T) int {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = c.Wait()
	})
	return pid
}

func TestBreakRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, path string, other int)
		opts  BreakOptions
		want  string
	}{
		{"free", func(t *testing.T, path string, other int) {
			l := mustAcquire(t, path, Owner{AttemptID: "a"})
			_ = l.Release()
		}, BreakOptions{Force: true}, "not held"},
		{"healthy", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.Pid = other })
		}, BreakOptions{Force: true}, "healthy: heartbeat 0."},
		{"other host", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.Pid = other; m.Host = "elsewhere"; m.HeartbeatAt = time.Now().Add(-time.Hour) })
		}, BreakOptions{Force: true}, "on host elsewhere, which this machine cannot signal"},
		{"other boot", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.Pid = other; m.BootID = "not-this-boot"; m.HeartbeatAt = time.Now().Add(-time.Hour) })
		}, BreakOptions{Force: true}, "another boot"},
		{"this process", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.HeartbeatAt = time.Now().Add(-time.Hour) })
		}, BreakOptions{Force: true}, "held by this very process"},
		{"not confirmed", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.Pid = other; m.HeartbeatAt = time.Now().Add(-time.Hour) })
		}, BreakOptions{Confirm: func(st Status) bool { return st.State != Hung }}, "not confirmed"},
		{"no confirm function", func(t *testing.T, path string, other int) {
			mustAcquire(t, path, Owner{AttemptID: "a"})
			rewriteMeta(t, path, func(m *Meta) { m.Pid = other; m.HeartbeatAt = time.Now().Add(-time.Hour) })
		}, BreakOptions{}, "not confirmed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := transcriptPath(t)
			other := sleeper(t)
			c.setup(t, path, other)
			before, _ := os.ReadFile(MetaPath(path))
			res, err := Break(context.Background(), path, c.opts)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Break = %v, want refusal containing %q", err, c.want)
			}
			if len(res.Signals) != 0 || res.Freed {
				t.Errorf("refused Break acted: %+v", res)
			}
			if err := syscall.Kill(other, 0); err != nil {
				t.Errorf("bystander process was signalled: %v", err)
			}
			after, _ := os.ReadFile(MetaPath(path))
			if string(before) != string(after) {
				t.Error("refused Break changed the metadata")
			}
		})
	}
}

// TestProbeHeldByUnrecordedHolder: a lease locked by a process that has
// not yet written its record, over a record naming a holder that is gone,
// is held by nobody Probe can name, never by the dead process.
func TestProbeHeldByUnrecordedHolder(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	l := mustAcquire(t, path, Owner{AttemptID: "old"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	rewriteMeta(t, path, func(m *Meta) { m.Pid = dead.Process.Pid })
	st, err := Probe(path)
	if err != nil || st.State != Held || st.Meta != nil {
		t.Fatalf("Probe of a lease held over a gone holder's record = %+v, %v (want held, no metadata)", st, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	st, err = Probe(path)
	if err != nil || st.State != Free || st.Meta == nil || st.Meta.Pid != dead.Process.Pid {
		t.Fatalf("Probe after release = %+v, %v (want free with the last record)", st, err)
	}
}
