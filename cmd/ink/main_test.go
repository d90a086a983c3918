package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// inkBin is the ink binary built once for every process test.
var inkBin string

func TestMain(m *testing.M) {
	if path := os.Getenv(peakFileVar); path != "" {
		// This test binary was started to measure an ink process.
		os.Exit(runMeasured(path, os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "ink-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	inkBin = filepath.Join(dir, "ink")
	// Under `go test -cover` the binary is built with coverage too, and
	// every process it runs (workers included) writes its counters to
	// GOCOVERDIR, so the process tests count towards every package they
	// reach (add -coverpkg=./... to see them).
	args := []string{"build", "-o", inkBin}
	if testing.CoverMode() != "" {
		args = append(args, "-cover", "-covermode="+testing.CoverMode())
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build ink:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestScripts runs the CLI scripts in testdata/*.txtar with the built ink
// on PATH and INK_HOME and HOME inside each script's work dir.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", filepath.Dir(inkBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("INK_HOME", filepath.Join(e.WorkDir, "inkhome"))
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("GIT_AUTHOR_NAME", "ink test")
			e.Setenv("GIT_AUTHOR_EMAIL", "test@ink.invalid")
			e.Setenv("GIT_COMMITTER_NAME", "ink test")
			e.Setenv("GIT_COMMITTER_EMAIL", "test@ink.invalid")
			return os.MkdirAll(filepath.Join(e.WorkDir, "home"), 0o700)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"worktreeid": cmdWorktreeID,
			// exits N ARGS... runs ink ARGS and checks that it exits with N.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 1 {
					ts.Fatalf("usage: exits CODE [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: bad code %q", args[0])
				}
				err = ts.Exec("ink", args[1:]...)
				got := 0
				if err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exits: %v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("ink %s exited %d, want %d", strings.Join(args[1:], " "), got, want)
				}
			},
		},
	})
}

// env is a hermetic environment for one process test.
type env struct {
	t    *testing.T
	dir  string // the working directory (a fresh dir)
	home string // INK_HOME
	vars []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, dir: filepath.Join(root, "work"), home: filepath.Join(root, "inkhome")}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{
		// ink on PATH is the binary under test, as for a user who installed
		// it: the commands ink suggests then read "ink …".
		"PATH=" + filepath.Dir(inkBin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"), "INK_HOME=" + e.home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=ink test", "GIT_AUTHOR_EMAIL=test@ink.invalid",
		"GIT_COMMITTER_NAME=ink test", "GIT_COMMITTER_EMAIL=test@ink.invalid", "LANG=C.UTF-8",
	}
	if d := os.Getenv("GOCOVERDIR"); d != "" {
		e.vars = append(e.vars, "GOCOVERDIR="+d)
	}
	return e
}

// write puts a file under the working directory.
func (e *env) write(name, body string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// proc is a started ink process.
type proc struct {
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// start runs ink with args in the working directory; the process is killed
// by pid (with its process group) when the test ends.
func (e *env) start(args ...string) *proc {
	e.t.Helper()
	return e.startExe(inkBin, args...)
}

// startExe is start with another copy of the ink binary.
func (e *env) startExe(exe string, args ...string) *proc {
	e.t.Helper()
	p := &proc{cmd: exec.Command(exe, args...), done: make(chan struct{})}
	p.cmd.Dir = e.dir
	p.cmd.Env = e.vars
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	e.t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
		<-p.done
	})
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p
}

// syncBuffer is a bytes.Buffer safe to read while the process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *syncBuffer) Bytes() []byte { return []byte(b.String()) }

// snapshot is the stdout written so far.
func (p *proc) snapshot() string { return p.stdout.String() }

// wait waits for the process and returns its exit code.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("ink %v did not finish within %s\nstderr:\n%s", p.cmd.Args[1:], limit, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// run runs ink to the end and returns its exit code.
func (e *env) run(args ...string) (*proc, int) {
	e.t.Helper()
	p := e.start(args...)
	return p, p.wait(e.t, 2*time.Minute)
}

// events parses a --json stdout, failing on any line that is not an event.
func events(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"v", "seq", "time", "agent", "session", "type"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("event lacks %q: %s", k, sc.Text())
			}
		}
		evs = append(evs, m)
	}
	return evs
}

func ofType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// alive reports whether pid exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; Z is a zombie.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func init() {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		panic("ink's process tests need a Unix system")
	}
}
