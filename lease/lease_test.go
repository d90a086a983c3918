package lease

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func transcriptPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "sessions", "home-dev-proj", "s1.jsonl")
}

func mustAcquire(t testing.TB, path string, owner Owner) *Lease {
	t.Helper()
	l, err := Acquire(path, owner)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return l
}

func mustReadMeta(t testing.TB, path string) *Meta {
	t.Helper()
	m, err := readMeta(MetaPath(path))
	if err != nil || m == nil {
		t.Fatalf("read metadata of %s: %v (nil=%v)", path, err, m == nil)
	}
	return m
}

// rewriteMeta edits the metadata on disk the way another holder would.
func rewriteMeta(t testing.TB, path string, edit func(*Meta)) {
	t.Helper()
	m := mustReadMeta(t, path)
	edit(m)
	if err := writeMetaAtomic(MetaPath(path), m); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireWritesFilesAndMetadata(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	before := time.Now().Add(-time.Second)
	l := mustAcquire(t, path, Owner{AttemptID: "att-1", Agent: "scout", SessionID: "sess-1"})

	fi, err := os.Lstat(FilePath(path))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("lease file mode = %v, want regular 0600", fi.Mode())
	}
	m := mustReadMeta(t, path)
	host, _ := os.Hostname()
	if m.Pid != os.Getpid() || m.Host != host || m.AttemptID != "att-1" || m.Agent != "scout" || m.SessionID != "sess-1" || m.Epoch != 1 {
		t.Errorf("metadata = %+v", m)
	}
	if want := bootID(); m.BootID != want {
		t.Errorf("bootId = %q, want %q", m.BootID, want)
	}
	if m.StartedAt.Before(before) || m.HeartbeatAt.Before(m.StartedAt) {
		t.Errorf("times: startedAt %v heartbeatAt %v", m.StartedAt, m.HeartbeatAt)
	}
	if l.Epoch() != 1 || l.Meta().AttemptID != "att-1" {
		t.Errorf("Epoch() = %d, Meta() = %+v", l.Epoch(), l.Meta())
	}
	if l.tries != 1 {
		t.Errorf("uncontended acquire took %d tries", l.tries)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check on a fresh lease: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestEpochGrowsAndReleaseKeepsFiles(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	for want := int64(1); want <= 3; want++ {
		l, err := Acquire(path, Owner{AttemptID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Epoch() != want {
			t.Errorf("epoch = %d, want %d", l.Epoch(), want)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Errorf("second Release: %v", err)
		}
		if err := l.Check(); !errors.Is(err, ErrReleased) {
			t.Errorf("Check after Release = %v, want ErrReleased", err)
		}
		for _, p := range []string{FilePath(path), MetaPath(path)} {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("after Release: %v", err)
			}
		}
	}
}

func TestSameProcessSecondAcquireIsBusy(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	l := mustAcquire(t, path, Owner{AttemptID: "first", Agent: "scout"})

	_, err := Acquire(path, Owner{AttemptID: "second"})
	var be *BusyError
	if !errors.Is(err, ErrBusy) || !errors.As(err, &be) {
		t.Fatalf("second Acquire = %v, want *BusyError", err)
	}
	if !be.InProcess || !strings.Contains(err.Error(), "already running in this process") || !strings.Contains(err.Error(), "attempt first") {
		t.Errorf("error = %q", err)
	}
	if got := mustReadMeta(t, path); got.AttemptID != "first" || got.Epoch != 1 {
		t.Errorf("busy Acquire changed metadata: %+v", got)
	}

	// A second path naming the same file (a hard link) is the same lease.
	alias := filepath.Join(filepath.Dir(path), "alias.jsonl")
	if err := os.Link(FilePath(path), FilePath(alias)); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(alias, Owner{AttemptID: "third"}); !errors.Is(err, ErrBusy) {
		t.Errorf("Acquire through a hard link = %v, want busy", err)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2 := mustAcquire(t, path, Owner{AttemptID: "again"})
	if l2.Epoch() != 2 {
		t.Errorf("epoch after release = %d, want 2", l2.Epoch())
	}
}

func TestConcurrentAcquiresInOneProcess(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []*Lease
	var errs []error
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			l, err := Acquire(path, Owner{AttemptID: "g"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			won = append(won, l)
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d goroutines won the lease, want exactly 1 (errors: %v)", len(won), errs)
	}
	defer won[0].Release()
	for _, err := range errs {
		if !errors.Is(err, ErrBusy) {
			t.Errorf("loser error = %v, want busy", err)
		}
	}
}

func TestAcquireRejectsBadArguments(t *testing.T) {
	t.Parallel()
	if _, err := Acquire("", Owner{AttemptID: "a"}); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := Acquire(transcriptPath(t), Owner{}); err == nil || !strings.Contains(err.Error(), "attempt id") {
		t.Errorf("owner without attempt id: %v", err)
	}
}

func TestCorruptMetadataIsNotGuessed(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(MetaPath(path), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(path, Owner{AttemptID: "a"})
	if err == nil || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), MetaPath(path)) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("Acquire with corrupt metadata = %v", err)
	}
	// The lock was given back: after removing the file the lease works.
	if err := os.Remove(MetaPath(path)); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, path, Owner{AttemptID: "a"})
	if l.Epoch() != 1 {
		t.Errorf("epoch = %d", l.Epoch())
	}
}

func TestBusyErrorMessages(t *testing.T) {
	t.Parallel()
	holder := &Meta{Pid: 123, Host: "h", AttemptID: "a", Agent: "scout"}
	cases := []struct {
		name string
		err  *BusyError
		want []string
	}{
		{"other process", &BusyError{Path: "/x.jsonl", Holder: holder, HeartbeatAge: 400 * time.Millisecond},
			[]string{"transcript /x.jsonl is in use by pid 123 on host h", "attempt a", "heartbeat 0.4s ago", "wait for it to finish or, if it is hung, run: ink leases break /x.jsonl"}},
		{"no metadata yet", &BusyError{Path: "/x.jsonl"},
			[]string{"in use by another process", "ink leases ls"}},
		{"same process", &BusyError{Path: "/x.jsonl", Holder: holder, InProcess: true},
			[]string{"already running in this process", "attempt a"}},
		{"old heartbeat", &BusyError{Path: "/x.jsonl", Holder: holder, HeartbeatAge: 185 * time.Second},
			[]string{"heartbeat 3m5s ago"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := c.err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if !errors.Is(c.err, ErrBusy) {
				t.Error("not ErrBusy")
			}
		})
	}
}

func TestAcquireRemovesStaleMetadataTemps(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".s1.jsonl.lease.json.tmp-12345")
	other := filepath.Join(dir, ".other.jsonl.lease.json.tmp-12345")
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustAcquire(t, path, Owner{AttemptID: "a"})
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp of this transcript kept: %v", err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("another transcript's temp was removed: %v", err)
	}
}

func TestBusyErrorIsUnwrapped(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	mustAcquire(t, path, Owner{AttemptID: "a"})
	_, err := Acquire(path, Owner{AttemptID: "b"})
	if want := "transcript " + path + " is already running in this process"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}
