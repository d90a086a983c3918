package kubetest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a process the harness started; exited closes when it ends.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // set before exited closes
}

// startProc starts path with args, its output in dir/name.log, and ends it
// by pid in t.Cleanup (SIGTERM, then SIGKILL after grace).
func startProc(t testing.TB, dir, name, path string, grace time.Duration, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Dies with the test binary if it is killed before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(grace) })
	return p, nil
}

// stop ends the process: SIGCONT (it may be frozen), SIGTERM, and SIGKILL
// if it is still there after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGCONT)
	if grace > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-p.exited
}

// tail is the end of the process's output, for error messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// freePort is a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// descendants are pid and every process below it, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// signalTree sends sig to pid and all its descendants, parents first, again
// until no new descendant shows up (a process may fork while it is being
// stopped). It returns every pid it signalled.
func signalTree(pid int, sig syscall.Signal) []int {
	seen := map[int]bool{}
	var all []int
	for range 10 {
		fresh := false
		for _, p := range descendants(pid) {
			if !seen[p] {
				seen[p] = true
				fresh = true
				all = append(all, p)
				_ = syscall.Kill(p, sig)
			}
		}
		if !fresh {
			break
		}
	}
	return all
}

// procState is the one-letter state of pid in /proc (R, S, T, …), "" when
// it is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+3 > len(b) {
		return ""
	}
	return string(b[i+2 : i+3])
}

// waitStopped waits (at most 5 s) until pid is stopped, or no longer
// stopped, or gone: a signal is delivered after kill returns.
func waitStopped(pid int, stopped bool) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s := procState(pid)
		if s == "" || (s == "T") == stopped {
			return
		}
	}
}
