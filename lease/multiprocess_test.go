package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// checkLog replays begin/end lines and counts critical sections that
// overlapped: a begin while another is open, or an end that does not close
// the open one.
func checkLog(t *testing.T, logPath string) (sections, overlaps int) {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	open := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, who, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("malformed log line %q", sc.Text())
		}
		switch kind {
		case "begin":
			if open != "" {
				overlaps++
			}
			open = who
			sections++
		case "end":
			if open != who {
				overlaps++
			}
			open = ""
		default:
			t.Fatalf("malformed log line %q", sc.Text())
		}
	}
	return sections, overlaps
}

func TestCheckLogDetectsOverlap(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "log")
	lines := "begin 1 0\nend 1 0\nbegin 1 1\nbegin 2 0\nend 1 1\nend 2 0\n"
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, o := checkLog(t, p); s != 3 || o == 0 {
		t.Errorf("checkLog = %d sections, %d overlaps; want 3 and >0", s, o)
	}
}

// Sixteen processes share 1,000 critical sections. Under the lease none may
// overlap; the same run without the lease must overlap, proving the checker
// can fail.
func TestSixteenProcessesNeverOverlap(t *testing.T) {
	t.Parallel()
	const procs, total = 16, 1000
	cases := []struct {
		mode        string
		wantOverlap bool
	}{
		{"lock", false},
		{"nolock", true},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "t.jsonl")
			logPath := filepath.Join(dir, "log")
			start := filepath.Join(dir, "start")
			var hs []*helperProc
			for i := 0; i < procs; i++ {
				count := total / procs
				if i < total%procs {
					count++
				}
				hs = append(hs, startHelper(t, "contend", false,
					"LEASE_PATH="+path, "LOG="+logPath, "START="+start,
					"COUNT="+strconv.Itoa(count), "MODE="+c.mode))
			}
			for _, h := range hs {
				if l := h.line(t); l != "ready" {
					t.Fatalf("helper said %q", l)
				}
			}
			if err := os.WriteFile(start, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				h.stdin.Close()
				if err := h.wait(t); err != nil {
					t.Fatalf("helper %d: %v", h.cmd.Process.Pid, err)
				}
			}
			sections, overlaps := checkLog(t, logPath)
			if sections != total {
				t.Errorf("%d critical sections logged, want %d", sections, total)
			}
			if c.wantOverlap && overlaps == 0 {
				t.Error("without the lease no section overlapped: the checker proves nothing")
			}
			if !c.wantOverlap && overlaps != 0 {
				t.Errorf("%d overlapping critical sections under the lease", overlaps)
			}
			if c.mode == "lock" {
				if m := mustReadMeta(t, path); m.Epoch != total {
					t.Errorf("final epoch %d, want %d (one per acquisition)", m.Epoch, total)
				}
			}
		})
	}
}

// startHolder starts a "hold" helper on path and returns it with its pid and
// its grandchild's pid (0 without one).
func startHolder(t *testing.T, path string, ownGroup bool, env ...string) (h *helperProc, pid, grand int) {
	t.Helper()
	h = startHelper(t, "hold", ownGroup, append([]string{"LEASE_PATH=" + path, "ATTEMPT=held-1"}, env...)...)
	if _, err := fmt.Sscanf(h.line(t), "ready %d %d", &pid, &grand); err != nil {
		t.Fatalf("holder ready line: %v", err)
	}
	if grand != 0 {
		t.Cleanup(func() { _ = syscall.Kill(grand, syscall.SIGKILL) })
	}
	return h, pid, grand
}

func TestKilledHolderFreesLeaseAtOnce(t *testing.T) {
	t.Parallel()
	path := transcriptPath(t)
	h, pid, _ := startHolder(t, path, false, "HEARTBEAT_MS=1000")
	if _, err := Acquire(path, Owner{AttemptID: "early"}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)) {
		t.Fatalf("Acquire while held = %v, want busy naming pid %d", err, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.wait(t)
	st, err := Probe(path)
	if err != nil || st.State != Free {
		t.Fatalf("Probe after SIGKILL = %+v, %v; want free", st, err)
	}
	l := mustAcquire(t, path, Owner{AttemptID: "next"})
	if l.tries != 1 {
		t.Errorf("Acquire after SIGKILL needed %d tries, want 1 (no waiting)", l.tries)
	}
	if l.Epoch() != 2 {
		t.Errorf("epoch = %d, want 2", l.Epoch())
	}
}

func TestTwoProcessesRaceForOneLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	start := filepath.Join(dir, "start")
	var hs []*helperProc
	for i := 0; i < 2; i++ {
		h := startHelper(t, "race", false, "LEASE_PATH="+path, "START="+start)
		if l := h.line(t); l != "ready" {
			t.Fatalf("helper said %q", l)
		}
		hs = append(hs, h)
	}
	if err := os.WriteFile(start, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var winner *helperProc
	var lostMsg string
	for _, h := range hs {
		switch l := h.line(t); {
		case l == "won":
			if winner != nil {
				t.Fatal("both processes won the lease")
			}
			winner = h
		case strings.HasPrefix(l, "lost "):
			lostMsg = l
		default:
			t.Fatalf("helper said %q", l)
		}
	}
	if winner == nil || lostMsg == "" {
		t.Fatalf("want exactly one winner and one loser (loser said %q)", lostMsg)
	}
	if want := fmt.Sprintf("is in use by pid %d", winner.cmd.Process.Pid); !strings.Contains(lostMsg, want) {
		t.Errorf("loser said %q, want it to contain %q", lostMsg, want)
	}
	for _, h := range hs {
		h.stdin.Close()
		if err := h.wait(t); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
}

func TestHungHolderIsProbedListedAndBroken(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		ignoreTerm bool
		wantKill   bool
	}{
		{"exits on SIGTERM", false, false},
		{"ignores SIGTERM", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			path := filepath.Join(home, "sessions", "proj", "main", "children", "c1.jsonl")
			env := []string{"HEARTBEAT_MS=100", "GRANDCHILD=1"}
			if c.ignoreTerm {
				env = append(env, "IGNORE_TERM=1")
			}
			h, pid, grand := startHolder(t, path, true, env...)
			if st, err := Probe(path); err != nil || st.State != Held {
				t.Fatalf("Probe of a beating holder = %+v, %v", st, err)
			}
			if _, err := Break(t.Context(), path, BreakOptions{Force: true}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "healthy") {
				t.Fatalf("Break of a healthy holder = %v", err)
			}

			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			bound := HungAfter(100*time.Millisecond) + time.Second
			var st Status
			for {
				var err error
				st, err = Probe(path)
				if err != nil {
					t.Fatal(err)
				}
				if st.State == Hung {
					break
				}
				if time.Since(stopped) > bound {
					t.Fatalf("stopped holder not hung within %v: %+v", bound, st)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if st.Meta.Pid != pid || st.Meta.HeartbeatIntervalMs != 100 {
				t.Errorf("hung status names %+v, want pid %d interval 100ms", st.Meta, pid)
			}

			infos, err := List(home)
			if err != nil || len(infos) != 1 || infos[0].Path != path || infos[0].State != Hung || infos[0].Pid != pid || infos[0].Agent != "holder" {
				t.Fatalf("List = %+v, %v; want the hung holder", infos, err)
			}

			var asked Status
			res, err := Break(t.Context(), path, BreakOptions{
				Confirm: func(s Status) bool { asked = s; return true },
				Grace:   500 * time.Millisecond,
			})
			if err != nil {
				t.Fatalf("Break: %v (result %+v)", err, res)
			}
			if asked.State != Hung || asked.Meta.Pid != pid {
				t.Errorf("Confirm was asked about %+v", asked)
			}
			if !res.Freed || res.Pid != pid || res.Pgid != pid {
				t.Errorf("result %+v, want freed, pid and group %d", res, pid)
			}
			gotKill := len(res.Signals) > 0 && res.Signals[len(res.Signals)-1] == syscall.SIGKILL
			if res.Signals[0] != syscall.SIGTERM || gotKill != c.wantKill {
				t.Errorf("signals %v, want SIGTERM first and SIGKILL=%v", res.Signals, c.wantKill)
			}
			if !strings.Contains(res.String(), "is free") || !strings.Contains(res.String(), fmt.Sprintf("process group %d", pid)) {
				t.Errorf("summary %q", res.String())
			}
			_ = h.wait(t)
			if alive(grand) {
				t.Errorf("grandchild %d in the holder's group survived the break", grand)
			}
			for _, p := range []string{FilePath(path), MetaPath(path)} {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("break removed a file: %v", err)
				}
			}
			l := mustAcquire(t, path, Owner{AttemptID: "after-break"})
			if l.tries != 1 || l.Epoch() != 2 {
				t.Errorf("Acquire after break: %d tries, epoch %d; want 1 and 2", l.tries, l.Epoch())
			}
			if _, err := Break(context.Background(), path, BreakOptions{Force: true}); !errors.Is(err, ErrRefused) {
				t.Errorf("second Break of a now healthy lease = %v", err)
			}
		})
	}
}

// alive reports whether pid is a live (not zombie) process; it waits up to
// 2 s for the process to go.
func alive(pid int) bool {
	deadline := time.Now().Add(2 * time.Second)
	for {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && strings.HasPrefix(string(data[i+1:]), " Z") {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A stopped holder whose lock is lost (its lease file renamed away, breaking
// the never-delete rule) and taken by another process must notice the new
// epoch when it resumes and write nothing more.
func TestFencedHolderStopsWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	out := filepath.Join(dir, "writes")
	const interval = 100 * time.Millisecond
	a := startHelper(t, "fence", false, "LEASE_PATH="+path, "OUT="+out, "HEARTBEAT_MS=100")
	var pid int
	if _, err := fmt.Sscanf(a.line(t), "ready %d", &pid); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(out)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	for deadline := time.Now().Add(2 * time.Second); size() < 100; {
		if time.Now().After(deadline) {
			t.Fatal("holder A is not writing")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(FilePath(path), FilePath(path)+".lost"); err != nil {
		t.Fatal(err)
	}
	b := mustAcquire(t, path, Owner{AttemptID: "fence-b"})
	if b.Epoch() != 2 {
		t.Fatalf("B epoch = %d, want 2", b.Epoch())
	}
	b.StartHeartbeat(interval)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()

	var fenced string
	select {
	case fenced = <-a.lines:
	case <-time.After(3 * time.Second):
		t.Fatal("A did not report a fence within 3s of resuming")
	}
	latency := time.Since(resumed)
	want := fmt.Sprintf("fenced lease on %s was taken over by pid %d (epoch 2); this attempt stopped writing", path, os.Getpid())
	if fenced != want {
		t.Errorf("A said %q\nwant     %q", fenced, want)
	}
	t.Logf("A noticed the takeover %v after resuming", latency)
	if latency > 2*interval+time.Second {
		t.Errorf("A noticed the takeover only %v after resuming", latency)
	}

	// A goes on looping, fenced; it says when 50 more rounds, each of
	// which would have written, have run (at least 100 ms).
	after := size()
	select {
	case line := <-a.lines:
		if line != "50 rounds after the fence" {
			t.Fatalf("A said %q, want it to count its rounds after the fence", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A did not run on after the fence within 10s")
	}
	if grown := size() - after; grown != 0 {
		t.Errorf("A wrote %d more bytes after it was fenced", grown)
	}
	if err := b.Check(); err != nil {
		t.Errorf("B fenced: %v", err)
	}
	if m := mustReadMeta(t, path); m.Epoch != 2 || m.AttemptID != "fence-b" {
		t.Errorf("metadata after the fence = %+v, want B's", m)
	}
	a.stdin.Close()
	if err := a.wait(t); err != nil {
		t.Errorf("A: %v", err)
	}
}
