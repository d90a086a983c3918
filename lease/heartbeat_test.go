package lease

import (
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// eventually polls cond every 5 ms until it holds or 2 s pass (of the
// bubble's fake clock, inside a synctest bubble).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 2s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHeartbeatPublishesBeatAndProgress(t *testing.T) {
	t.Parallel()
	// The beats run on the bubble's fake clock: after Release, three
	// intervals pass with every goroutine run to a stop, and no beat is
	// written.
	synctest.Test(t, func(t *testing.T) {
		path := transcriptPath(t)
		l := mustAcquire(t, path, Owner{AttemptID: "a"})
		first := mustReadMeta(t, path).HeartbeatAt
		for i := 0; i < 3; i++ {
			l.Progress()
		}
		l.StartHeartbeat(20 * time.Millisecond)
		l.StartHeartbeat(time.Hour) // no-op: already beating
		eventually(t, "progressSeq 3 and a newer heartbeat on disk", func() bool {
			m := mustReadMeta(t, path)
			return m.ProgressSeq == 3 && m.HeartbeatAt.After(first) && m.HeartbeatIntervalMs == 20
		})
		seen := mustReadMeta(t, path).HeartbeatAt
		eventually(t, "heartbeat keeps advancing", func() bool {
			return mustReadMeta(t, path).HeartbeatAt.After(seen)
		})
		if err := l.HeartbeatErr(); err != nil {
			t.Errorf("HeartbeatErr = %v", err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		stopped := mustReadMeta(t, path).HeartbeatAt
		time.Sleep(3 * 20 * time.Millisecond)
		synctest.Wait()
		if got := mustReadMeta(t, path).HeartbeatAt; !got.Equal(stopped) {
			t.Errorf("heartbeat still beating after Release: %v -> %v", stopped, got)
		}
	})
}

// keepTakingOver publishes the edited record every 5 ms, as the heartbeat of
// a real second holder would, until the test ends.
func keepTakingOver(t *testing.T, path string, edit func(*Meta)) {
	m := mustReadMeta(t, path)
	edit(m)
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		for {
			_ = writeMetaAtomic(MetaPath(path), m)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
}

func TestFencing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// takeOver changes the files the way a second holder would.
		takeOver func(t *testing.T, path string)
		want     string
	}{
		{"newer epoch", func(t *testing.T, path string) {
			keepTakingOver(t, path, func(m *Meta) { m.Epoch++; m.Pid = 4242; m.AttemptID = "b" })
		}, "lease on %s was taken over by pid 4242 (epoch 2); this attempt stopped writing"},
		{"same epoch other attempt", func(t *testing.T, path string) {
			keepTakingOver(t, path, func(m *Meta) { m.Pid = 4243; m.AttemptID = "b" })
		}, "taken over by pid 4243 (epoch 1)"},
		{"lease file replaced", func(t *testing.T, path string) {
			if err := os.Rename(FilePath(path), FilePath(path)+".moved"); err != nil {
				t.Fatal(err)
			}
		}, "was removed or replaced while this attempt (epoch 1) held it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				path := transcriptPath(t)
				l := mustAcquire(t, path, Owner{AttemptID: "a"})
				l.StartHeartbeat(10 * time.Millisecond)
				c.takeOver(t, path)
				select {
				case <-l.Fenced():
				case <-time.After(2 * time.Second):
					t.Fatal("not fenced within 2s")
				}
				err := l.Check()
				var fe *FenceError
				if !errors.As(err, &fe) || l.FenceErr() != err {
					t.Fatalf("Check = %v, FenceErr = %v", err, l.FenceErr())
				}
				want := c.want
				if strings.Contains(want, "%s") {
					want = strings.Replace(want, "%s", path, 1)
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("fence error %q lacks %q", err, want)
				}
				// A fenced holder never writes the metadata again: three
				// intervals pass on the bubble's clock, every goroutine run
				// to a stop.
				time.Sleep(3 * 10 * time.Millisecond)
				synctest.Wait()
				if m := mustReadMeta(t, path); m.Pid == os.Getpid() && m.HeartbeatAt.After(l.Meta().HeartbeatAt) {
					t.Error("fenced holder rewrote the metadata")
				}
				if err := l.Release(); err != nil {
					t.Errorf("Release of a fenced lease: %v", err)
				}
			})
		})
	}
}

func TestStaleHolderOverwriteDoesNotFenceNewerHolder(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	l := mustAcquire(t, path, Owner{AttemptID: "a"})
	// Simulate an older holder's late write of epoch 0 with another attempt.
	rewriteMeta(t, path, func(m *Meta) { m.Epoch = 0; m.AttemptID = "old"; m.Pid = 4244 })
	l.StartHeartbeat(10 * time.Millisecond)
	eventually(t, "newer holder restores its record", func() bool {
		m := mustReadMeta(t, path)
		return m.Epoch == 1 && m.AttemptID == "a"
	})
	if err := l.Check(); err != nil {
		t.Errorf("newer holder fenced by an older record: %v", err)
	}
}
