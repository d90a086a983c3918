package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/inkdev/ink/lease"
)

// contenderEnv makes the test binary a lease contender: it reads rounds
// from stdin ("lease N" or "flock N" or "publish N"), makes N acquisitions
// of the lease on the path in the variable, and answers "done" after each
// round.
const contenderEnv = "INK_BENCH_CONTENDER"

// contend is the contender's main; it returns the exit code.
func contend() int {
	path := os.Getenv(contenderEnv)
	lockPath := path + ".raw"
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close() // keeps f, and so fd, from being closed by its finalizer
	fd := int(f.Fd())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		mode, count, _ := strings.Cut(in.Text(), " ")
		n, _ := strconv.Atoi(count)
		for done := 0; done < n; {
			switch mode {
			case "flock", "publish":
				if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				if mode == "publish" {
					if err := durablePublish(path + ".meta"); err != nil {
						fmt.Fprintln(os.Stderr, err)
						return 1
					}
				}
				if err := syscall.Flock(fd, syscall.LOCK_UN); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				done++
			default:
				l, err := lease.Acquire(path, lease.Owner{AttemptID: "bench"})
				if errors.Is(err, lease.ErrBusy) {
					continue
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				if err := l.Release(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				done++
			}
		}
		fmt.Println("done")
	}
	return 0
}

// durablePublish writes a small record to a temp file, syncs it, renames
// it over path and syncs the directory: what publishing a lease holder's
// record durably costs at the least.
func durablePublish(path string) error {
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(`{"pid":1,"epoch":1,"attemptId":"bench"}` + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// contenders are running contender processes sharing one lease.
type contenders struct {
	procs []*exec.Cmd
	in    []io.WriteCloser
	out   []*bufio.Scanner
}

// startContenders starts n contenders on path; they end with the benchmark.
func startContenders(b *testing.B, n int, path string) *contenders {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	c := &contenders{}
	for range n {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), contenderEnv+"="+path)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pid := cmd.Process.Pid
		b.Cleanup(func() {
			stdin.Close()
			syscall.Kill(pid, syscall.SIGKILL)
			cmd.Wait()
		})
		c.procs, c.in, c.out = append(c.procs, cmd), append(c.in, stdin), append(c.out, bufio.NewScanner(stdout))
	}
	return c
}

// round has every contender make perEach acquisitions in mode, all at once,
// and waits for them.
func (c *contenders) round(b *testing.B, mode string, perEach int) {
	for _, in := range c.in {
		if _, err := fmt.Fprintf(in, "%s %d\n", mode, perEach); err != nil {
			b.Fatal(err)
		}
	}
	for _, out := range c.out {
		if !out.Scan() || out.Text() != "done" {
			b.Fatalf("contender said %q: %v", out.Text(), out.Err())
		}
	}
}
