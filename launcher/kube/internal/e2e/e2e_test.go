// Package e2e runs ink with --launcher kube as a user would, as a real
// process against a real kube-apiserver with inknode agents playing the
// kubelet (launcher/kube/internal/kubetest). It skips, naming `make
// kube-e2e`, when the control plane's binaries are not given.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/launcher/kube/internal/kubetest"
	"github.com/inkdev/ink/session"
)

// inkBin is ink built with the kube tag, for the supervisor and the pods.
var inkBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(kubetest.EnvAPIServer) != "" && os.Getenv(kubetest.EnvEtcd) != "" && os.Getenv(kubetest.EnvInknode) != "" {
		// Outside /tmp: a pod's /tmp is an emptyDir of its own.
		dir, err := os.MkdirTemp("/var/tmp", "ink-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		inkBin = filepath.Join(dir, "ink")
		out, err := exec.Command("go", "build", "-tags", "kube", "-o", inkBin, "github.com/inkdev/ink/cmd/ink").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build -tags kube ink: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// world is one control plane with two nodes, a scratch repository and a
// user's home.
type world struct {
	t      *testing.T
	c      *kubetest.ControlPlane
	nodes  []*kubetest.Node
	home   string // HOME
	ink    string // INK_HOME
	repo   string // the user's checkout
	shared string // outside /tmp, seen by the pods: scripts, signal files
}

func newWorld(t *testing.T) *world {
	t.Helper()
	c := kubetest.Start(t)
	w := &world{t: t, c: c, home: t.TempDir()}
	w.ink = filepath.Join(w.home, ".ink")
	shared, err := os.MkdirTemp("/var/tmp", "ink-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	w.shared = shared
	w.repo = filepath.Join(shared, "repo")
	gitconfig := "[user]\n\tname = ink test\n\temail = test@ink.invalid\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(w.home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(w.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.repo, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git("init", "-q", "-b", "main")
	w.git("add", "-A")
	w.git("commit", "-q", "-m", "initial")
	w.nodes = []*kubetest.Node{
		c.StartNode(t, "node-a", kubetest.NodeOptions{Exec: inkBin}),
		c.StartNode(t, "node-b", kubetest.NodeOptions{Exec: inkBin}),
	}
	return w
}

func (w *world) environ() []string {
	var env []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k == "HOME" || k == "INK_HOME" || k == "KUBECONFIG" || strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "HOME="+w.home, "INK_HOME="+w.ink, "KUBECONFIG="+w.c.InkKubeconfig)
}

func (w *world) git(args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = w.repo, w.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *world) write(name, body string) string {
	w.t.Helper()
	p := filepath.Join(w.shared, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for a writer and readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running ink.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

func (w *world) start(args ...string) *proc {
	w.t.Helper()
	cmd := exec.Command(inkBin, args...)
	cmd.Dir, cmd.Env = w.repo, w.environ()
	p := &proc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for p to end, failing the test after limit.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("ink %s did not end within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), limit, p.stdout, p.stderr)
		return -1
	}
}

func (w *world) run(t *testing.T, limit time.Duration, args ...string) *proc {
	t.Helper()
	p := w.start(args...)
	if code := p.wait(t, limit); code != 0 {
		t.Fatalf("ink %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, p.stdout, p.stderr)
	}
	return p
}

// kubeArgs are the launcher's flags for connect mode.
func kubeArgs(connect string, extra ...string) []string {
	return append([]string{"--launcher", "kube", "--kube-namespace", kubetest.Namespace, "--kube-connect", connect}, extra...)
}

// sessions returns the newest main session's path.
func (w *world) newestSession(t *testing.T) string {
	t.Helper()
	list, err := session.ListSessions(w.ink, w.repo)
	if err != nil || len(list) == 0 {
		t.Fatalf("sessions: %v, %v", list, err)
	}
	return list[0].Path
}

// records returns the TaskRecords of the transcript at path, in order.
func records(t *testing.T, path string) []session.TaskRecord {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.TaskRecord
	for _, m := range tr.Messages {
		out = append(out, session.TaskRecordsOf(m)...)
	}
	return out
}

// podsLeft lists the pods left in the namespace (through the admin).
func (w *world) podsLeft(ctx context.Context) []string {
	w.t.Helper()
	pods, err := w.c.Pods(ctx, kubetest.Namespace)
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name+"@"+p.Spec.NodeName+"("+string(p.Status.Phase)+")")
	}
	return names
}

// waitNoPods waits until the namespace holds no pod, and says how long.
func (w *world) waitNoPods(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	ctx := context.Background()
	for {
		left := w.podsLeft(ctx)
		if len(left) == 0 {
			return time.Since(began)
		}
		if time.Since(began) > limit {
			t.Fatalf("pods left after %s: %v", limit, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
