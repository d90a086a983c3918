package lease

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/durable"
)

// The test binary re-executes itself as a lease holder when helperEnv is set;
// each mode below is one kind of process the tests need.
const helperEnv = "INK_LEASE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(mode string) error {
	switch mode {
	case "contend":
		return helperContend()
	case "hold":
		return helperHold()
	case "race":
		return helperRace()
	case "fence":
		return helperFence()
	case "bench":
		return helperBench()
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// waitStdinEOF blocks until the parent closes our stdin.
func waitStdinEOF() { _, _ = io.Copy(io.Discard, os.Stdin) }

// waitStartFile waits until the parent creates the start file, so that every
// helper begins at the same moment.
func waitStartFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// helperContend performs COUNT critical sections, each appending a begin and
// an end line to LOG; with MODE=lock each one runs under the lease.
func helperContend() error {
	path, logPath, count := os.Getenv("LEASE_PATH"), os.Getenv("LOG"), envInt("COUNT")
	useLock := os.Getenv("MODE") == "lock"
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Println("ready")
	waitStartFile(os.Getenv("START"))
	pid := os.Getpid()
	for n := 0; n < count; {
		var l *Lease
		if useLock {
			l, err = Acquire(path, Owner{AttemptID: fmt.Sprintf("a-%d-%d", pid, n)})
			if errors.Is(err, ErrBusy) {
				time.Sleep(rand.N(2 * time.Millisecond))
				continue
			}
			if err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(logf, "begin %d %d\n", pid, n); err != nil {
			return err
		}
		time.Sleep(200 * time.Microsecond)
		if _, err := fmt.Fprintf(logf, "end %d %d\n", pid, n); err != nil {
			return err
		}
		if l != nil {
			if err := l.Release(); err != nil {
				return err
			}
		}
		n++
	}
	return nil
}

// helperHold acquires the lease, beats every HEARTBEAT_MS, optionally starts
// a grandchild in its process group and ignores SIGTERM, prints
// "ready <pid> <grandchild pid>" and holds until stdin closes.
func helperHold() error {
	if os.Getenv("IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	l, err := Acquire(os.Getenv("LEASE_PATH"), Owner{AttemptID: os.Getenv("ATTEMPT"), Agent: "holder", SessionID: "s-hold"})
	if err != nil {
		return err
	}
	l.StartHeartbeat(time.Duration(envInt("HEARTBEAT_MS")) * time.Millisecond)
	grand := 0
	if os.Getenv("GRANDCHILD") == "1" {
		c := exec.Command("sleep", "300")
		if err := c.Start(); err != nil {
			return err
		}
		grand = c.Process.Pid
	}
	fmt.Printf("ready %d %d\n", os.Getpid(), grand)
	waitStdinEOF()
	return l.Release()
}

// helperRace waits for the start file, acquires once and prints "won" or
// "lost <error>"; a winner holds until stdin closes.
func helperRace() error {
	fmt.Println("ready")
	waitStartFile(os.Getenv("START"))
	l, err := Acquire(os.Getenv("LEASE_PATH"), Owner{AttemptID: fmt.Sprintf("race-%d", os.Getpid())})
	if err != nil {
		fmt.Printf("lost %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return nil
	}
	fmt.Println("won")
	waitStdinEOF()
	return l.Release()
}

// helperFence holds the lease with a HEARTBEAT_MS heartbeat and appends
// "write N" lines to OUT only while Check passes. When fenced it prints
// "fenced <error>" and keeps trying (and failing) to write until stdin closes;
// after 50 such rounds it prints "50 rounds after the fence".
func helperFence() error {
	l, err := Acquire(os.Getenv("LEASE_PATH"), Owner{AttemptID: "fence-a", Agent: "writer"})
	if err != nil {
		return err
	}
	l.StartHeartbeat(time.Duration(envInt("HEARTBEAT_MS")) * time.Millisecond)
	out, err := os.OpenFile(os.Getenv("OUT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	done := make(chan struct{})
	go func() { waitStdinEOF(); close(done) }()
	fmt.Printf("ready %d\n", os.Getpid())
	// After the fence it says so, and once fenceRounds more rounds (each
	// of which would have written, were it not fenced) have run.
	const fenceRounds = 50
	reported, rounds := false, 0
	for n := 0; ; {
		select {
		case <-done:
			return l.Release()
		case <-l.Fenced():
			if !reported {
				reported = true
				fmt.Printf("fenced %v\n", l.FenceErr())
			} else if rounds++; rounds == fenceRounds {
				fmt.Printf("%d rounds after the fence\n", rounds)
			}
		default:
		}
		if l.Check() == nil {
			if _, err := fmt.Fprintf(out, "write %d\n", n); err != nil {
				return err
			}
			n++
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// helperBench performs COUNT acquisitions, with the lease (MODE=lease) or a
// raw blocking flock (MODE=flock), after the start file appears.
func helperBench() error {
	path, count := os.Getenv("LEASE_PATH"), envInt("COUNT")
	var fd int
	if os.Getenv("MODE") == "flock" {
		f, err := os.OpenFile(path+".raw", os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		fd = int(f.Fd())
	}
	fmt.Println("ready")
	waitStartFile(os.Getenv("START"))
	for n := 0; n < count; {
		if os.Getenv("MODE") == "flock" {
			if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
				return err
			}
			if err := syscall.Flock(fd, syscall.LOCK_UN); err != nil {
				return err
			}
			n++
			continue
		}
		l, err := Acquire(path, Owner{AttemptID: "bench"})
		if errors.Is(err, ErrBusy) {
			continue
		}
		if err != nil {
			return err
		}
		if err := l.Release(); err != nil {
			return err
		}
		n++
	}
	return nil
}

// helperProc is a running helper process. Its stdout lines arrive on lines.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan error
}

// startHelper starts the test binary in mode with extra env. With ownGroup
// the helper leads its own process group. Cleanup kills it (and its group)
// by pid and reaps it.
func startHelper(tb testing.TB, mode string, ownGroup bool, env ...string) *helperProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	if ownGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	h := &helperProc{cmd: cmd, stdin: stdin, lines: make(chan string, 64), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.done <- cmd.Wait()
	}()
	pid := cmd.Process.Pid
	tb.Cleanup(func() {
		if ownGroup {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		h.wait(tb)
	})
	return h
}

// line returns the next stdout line, failing the test after a generous bound.
func (h *helperProc) line(tb testing.TB) string {
	tb.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			tb.Fatalf("helper %d exited before printing the expected line", h.cmd.Process.Pid)
		}
		return l
	case <-time.After(20 * time.Second):
		tb.Fatalf("helper %d printed nothing within 20s", h.cmd.Process.Pid)
	}
	return ""
}

// wait reaps the helper and returns its exit error; it is safe to call more
// than once. Unread stdout lines are discarded.
func (h *helperProc) wait(tb testing.TB) error {
	timeout := time.After(30 * time.Second)
	lines := h.lines
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				lines = nil
			}
		case err, ok := <-h.done:
			if ok {
				close(h.done)
				return err
			}
			return nil
		case <-timeout:
			tb.Errorf("helper %d did not exit within 30s", h.cmd.Process.Pid)
			return errors.New("helper did not exit")
		}
	}
}

// writeMetaAtomic replaces the metadata file with m: it writes a temp file in
// the same directory, fsyncs it, renames it over path and fsyncs the
// directory, so readers see either the old or the new content, never a mix.
func writeMetaAtomic(path string, m *Meta) error {
	p, err := prepareMeta(durable.OS, path, m, true, false)
	if err != nil {
		return err
	}
	return p.commit()
}
