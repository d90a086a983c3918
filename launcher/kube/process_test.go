package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worker"
	"github.com/inkdev/ink/worktree"
)

// workerRoleEnv makes the test binary the pod's worker: `ink worker
// --remote --listen ADDR`, the real one, listening on ADDR.
const workerRoleEnv = "INK_KUBE_TEST_WORKER_LISTEN"

func runTestWorker(addr string) int { return worker.RemoteListenMain(addr) }

// processKubelet plays a node that runs each pod's worker as a local
// process: the test binary as `ink worker --remote --listen
// 127.0.0.1:0`, with the pod's environment (tamper may change it), its
// stdout as the pod's log, 127.0.0.1 as the pod's IP. The pod ends
// Succeeded or Failed with the process; every process is killed by its
// pid in Cleanup.
// workerProc is a worker process the kubelet started; exited is closed
// once it ended.
type workerProc struct {
	pid    int
	exited chan struct{}
}

func processKubelet(t *testing.T, tamper func(env []string) []string, procs chan<- workerProc) func(f *fakePods, pod *corev1.Pod) {
	return isolatedKubelet(t, tamper, procs, nil)
}

// isolatedKubelet is processKubelet whose workers, when hide names
// directories, run in a mount namespace of their own with an empty tmpfs
// over each, as a pod shares no disk with its supervisor.
func isolatedKubelet(t *testing.T, tamper func(env []string) []string, procs chan<- workerProc, hide []string) func(f *fakePods, pod *corev1.Pod) {
	return func(f *fakePods, pod *corev1.Pod) {
		c := pod.Spec.Containers[0]
		env := []string{workerRoleEnv + "=127.0.0.1:0", "PATH=" + os.Getenv("PATH")}
		home := t.TempDir()
		for _, e := range c.Env {
			switch e.Name {
			case "HOME", "TMPDIR":
				env = append(env, e.Name+"="+home) // the pod's emptyDirs
			default:
				env = append(env, e.Name+"="+e.Value)
			}
		}
		if tamper != nil {
			env = tamper(env)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		if len(hide) > 0 {
			script := ""
			for i := range hide {
				script += fmt.Sprintf(`mount -t tmpfs none "$%d" && `, i+2)
			}
			// Its own PID namespace as well: the worker is PID 1, as in a
			// pod, and killing it ends everything it started.
			args := append([]string{"--mount", "--map-root-user", "--pid", "--fork", "sh", "-c", script + `exec "$1" -test.run='^$'`, "sh", os.Args[0]}, hide...)
			cmd = exec.Command("unshare", args...)
		}
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Error(err)
			return
		}
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		pid := cmd.Process.Pid
		t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		wp := workerProc{pid: pid, exited: make(chan struct{})}
		procs <- wp
		f.setLog(pod.Name, out)
		f.update(pod.Name, func(p *corev1.Pod) {
			p.Spec.NodeName = "local"
			p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "127.0.0.1"
		})
		err = cmd.Wait()
		close(wp.exited)
		code := int32(cmd.ProcessState.ExitCode())
		if !f.exists(pod.Name) {
			return
		}
		f.update(pod.Name, func(p *corev1.Pod) {
			if len(p.Status.ContainerStatuses) > 0 {
				return // the test reported how it ended
			}
			p.Status.Phase = corev1.PodSucceeded
			if err != nil {
				p.Status.Phase = corev1.PodFailed
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: workerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
		})
	}
}

// TestRealWorkerInAPod: the pod's worker is a real `ink worker --remote
// --listen`: the supervisor reads its certificate's hash from its first
// log line, dials it with TLS pinned both ways and reaches it; once the
// supervisor shuts the connection down the worker exits by itself and the
// pod is deleted.
func TestRealWorkerInAPod(t *testing.T) {
	t.Parallel()
	f := newFakePods()
	procs := make(chan workerProc, 1)
	f.kubelet = processKubelet(t, nil, procs)
	l, _ := newTestLauncher(t, f, Config{})
	conn, err := l.Dial(t.Context(), command.Dial{Spec: testSpec()})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	proc := <-procs
	pc := conn.(*podConn)
	if info := pc.rc.Info(); info.Pid != proc.pid || info.ProtocolVersion != ipc.ProtocolVersion {
		t.Fatalf("Info = %+v, want the worker process %d", info, proc.pid)
	}
	conn.Shutdown()
	select {
	case <-proc.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop once its supervisor shut the connection down")
	}
	if f.exists(pc.name) {
		t.Error("the pod is still there after Shutdown")
	}
	if st, ok := conn.(command.Exiter).Exit(time.Second); !ok || st.Code != 0 {
		t.Errorf("Exit = %+v, %v; want status 0", st, ok)
	}
}

// TestRealWorkerRefusesAnotherSupervisor: a worker pinned to another
// supervisor's hash refuses the TLS handshake; the launch fails and the
// pod is deleted.
func TestRealWorkerRefusesAnotherSupervisor(t *testing.T) {
	t.Parallel()
	stranger, err := ipc.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	f := newFakePods()
	procs := make(chan workerProc, 1)
	f.kubelet = processKubelet(t, func(env []string) []string {
		for i, e := range env {
			if strings.HasPrefix(e, ipc.SupervisorCertEnv+"=") {
				env[i] = ipc.SupervisorCertEnv + "=" + stranger.Hash()
			}
		}
		return env
	}, procs)
	l, _ := newTestLauncher(t, f, Config{StartTimeout: 20 * time.Second})
	_, err = l.Dial(t.Context(), command.Dial{Spec: testSpec()})
	if err == nil {
		t.Fatal("a worker pinned to another supervisor was reached")
	}
	if !strings.Contains(err.Error(), "TLS") && !strings.Contains(err.Error(), "Info") {
		t.Errorf("err = %v, want the handshake refused", err)
	}
	name := f.createdPods()[0].Name
	if f.exists(name) {
		t.Error("the pod of the failed start is still there")
	}
	<-procs
}

// TestPortForwardMode: in port-forward mode the connection goes through
// the API's port-forward, not the pod's IP.
func TestPortForwardMode(t *testing.T) {
	t.Parallel()
	f := newFakePods()
	f.deletes = make(chan string, 1)
	procs := make(chan workerProc, 1)
	f.kubelet = processKubelet(t, nil, procs)
	l, _ := newTestLauncher(t, f, Config{})
	l.connect = ConnectPortForward
	l.cfg.dialPodIP = func(context.Context, string) (net.Conn, error) {
		t.Error("port-forward mode dialed the pod's IP")
		return nil, io.EOF
	}
	conn, err := l.Dial(t.Context(), command.Dial{Spec: testSpec()})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	<-procs
	conn.Kill()
	name := <-f.deletes
	if g, _ := f.deletedWith(name); g == nil || *g != 0 {
		t.Errorf("Kill deleted the pod with grace %v, want 0", g)
	}
}

// TestAttemptInAPod: a whole attempt through the kube launcher: the pod's
// worker (real, in a mount namespace where the supervisor's INK_HOME and
// checkout are empty) gets the worktree shipped, runs the script model,
// and its entries are written by the supervisor through the fence; the
// attempt completes, the transcript records it, and closing the worker
// deletes its pod.
func TestAttemptInAPod(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1): cannot give the worker a mount namespace of its own")
	}
	spec, f, l, procs := podAttempt(t, "rules:\n  - reply: {text: \"done in a pod\"}\n")
	ctx := t.Context()
	w, err := l.Launch(ctx, spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	var out ipc.Outcome
	for {
		m, err := w.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if o, ok := m.(ipc.Outcome); ok {
			out = o
			break
		}
	}
	if err := w.Send(ipc.Ack{}); err != nil {
		t.Fatal(err)
	}
	// As the supervisor does, receive until the worker ends its stream.
	go func() {
		for {
			if _, err := w.Recv(); err != nil {
				return
			}
		}
	}()
	w.Close()
	if out.Status != session.StatusCompleted || !strings.Contains(out.Text, "done in a pod") {
		t.Fatalf("outcome %s %q (%s)", out.Status, out.Text, out.Reason)
	}
	tr, err := session.Open(spec.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != session.StatusCompleted || end.AttemptID != spec.AttemptID {
		t.Errorf("the transcript's last end %+v (%v), want this attempt completed", end, ok)
	}
	if name := <-f.deletes; f.exists(name) {
		t.Errorf("pod %s is still there after Close", name)
	}
	<-(<-procs).exited
}

// podAttempt makes a child's worktree and the spec of its first attempt
// on the script model of scriptText, and a launcher whose pods run the
// real worker in namespaces of its own (no INK_HOME, no checkout).
func podAttempt(t *testing.T, scriptText string) (ipc.AttemptSpec, *fakePods, *Launcher, chan workerProc) {
	t.Helper()
	repo, home := gitRepo(t), t.TempDir()
	script := filepath.Join(t.TempDir(), "reply.yaml")
	if err := os.WriteFile(script, []byte(scriptText), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r, err := worktree.Detect(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	child := session.NewID()
	rec, err := worktree.CreateFor(ctx, r, home, child, os.Getpid(), worktree.Origin{})
	if err != nil {
		t.Fatal(err)
	}
	spec := ipc.AttemptSpec{
		InkHome: home, Transcript: session.ChildPath(session.MainPath(home, repo, session.NewID()), child), AttemptID: session.NewID(), SessionID: child, Label: "main/1",
		Binding: model.Binding{Provider: "script", Model: script}, Cwd: rec.Path, Root: rec.Path, Prompt: "work in a pod", Depth: 1,
		HeartbeatInterval: 100 * time.Millisecond,
		Create:            &session.Header{Type: "session", Version: session.Version, ID: child, CreatedAt: time.Now().UTC(), Cwd: rec.Path},
		Remote:            &ipc.RemoteSpec{Workspace: &ipc.RemoteWorkspace{Path: rec.Path, Baseline: rec.Baseline, Branch: rec.Branch}},
	}
	f := newFakePods()
	f.deletes = make(chan string, 4)
	procs := make(chan workerProc, 1)
	f.kubelet = isolatedKubelet(t, nil, procs, []string{home, repo})
	l, _ := newTestLauncher(t, f, Config{})
	return spec, f, l, procs
}

// gitRepo makes a repository with one commit in a temporary directory and
// returns its path (symlinks resolved, as git reports it).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"-c", "user.name=t", "-c", "user.email=t@ink.invalid", "commit", "-q", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestOOMKilledPodNamesTheEnd: a pod killed for memory while its worker
// runs a tool ends the attempt interrupted, its reason naming OOMKilled,
// so the child resumes; closing the worker deletes the pod.
func TestOOMKilledPodNamesTheEnd(t *testing.T) {
	t.Parallel()
	spec, f, l, procs := podAttempt(t, "rules:\n  - when: {turn: 1}\n    reply:\n      calls: [{tool: bash, args: {command: \"sleep 120\"}}]\n  - reply: {text: \"done\"}\n")
	w, err := l.Launch(t.Context(), spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	proc := <-procs
	var recvErr error
	for recvErr == nil {
		var m ipc.WorkerMsg
		m, recvErr = w.Recv()
		if ev, ok := m.(ipc.Event); ok {
			if ts, ok := ev.Body.(event.ToolStart); ok && ts.Name == "bash" {
				// The kernel kills the container for memory; the kubelet
				// reports it in the pod's status.
				name := f.createdPods()[0].Name
				_ = syscall.Kill(-proc.pid, syscall.SIGKILL)
				f.update(name, func(p *corev1.Pod) {
					p.Status.Phase = corev1.PodFailed
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: workerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
				})
			}
		}
		if _, ok := m.(ipc.Outcome); ok {
			t.Fatal("the worker reported an outcome after it was killed")
		}
	}
	w.Close()
	<-proc.exited
	tr, err := session.Open(spec.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := tr.LastAttemptEnd()
	if !ok || end.Status != session.StatusInterrupted || !strings.Contains(end.Reason, "OOMKilled") {
		t.Errorf("the transcript's last end %+v (%v), want interrupted naming OOMKilled", end, ok)
	}
	if f.exists(f.createdPods()[0].Name) {
		t.Error("the OOM-killed pod is still there after Close")
	}
}

// TestSIGTERMInterrupts: the cluster's SIGTERM to the pod's worker (PID 1
// of its container) ends its attempt interrupted, recorded by the worker
// through the supervisor while the stream lasts.
func TestSIGTERMInterrupts(t *testing.T) {
	t.Parallel()
	spec, _, l, procs := podAttempt(t, "rules:\n  - when: {turn: 1}\n    reply:\n      calls: [{tool: bash, args: {command: \"sleep 120\"}}]\n  - reply: {text: \"done\"}\n")
	w, err := l.Launch(t.Context(), spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	proc := <-procs
	var out *ipc.Outcome
	for out == nil {
		m, err := w.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		switch m := m.(type) {
		case ipc.Event:
			if ts, ok := m.Body.(event.ToolStart); ok && ts.Name == "bash" {
				// unshare --fork's child is the worker, PID 1 inside.
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", proc.pid, proc.pid))
				pid, convErr := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || convErr != nil {
					t.Fatalf("the worker's pid: %q, %v, %v", b, err, convErr)
				}
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
		case ipc.Outcome:
			out = &m
		}
	}
	_ = w.Send(ipc.Ack{})
	go func() {
		for {
			if _, err := w.Recv(); err != nil {
				return
			}
		}
	}()
	w.Close()
	<-proc.exited
	if out.Status != session.StatusInterrupted || out.Reason != worker.PodTerminated {
		t.Errorf("outcome %s %q, want interrupted: %s", out.Status, out.Reason, worker.PodTerminated)
	}
	tr, err := session.Open(spec.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != session.StatusInterrupted || end.Reason != worker.PodTerminated {
		t.Errorf("the transcript's last end %+v (%v), want interrupted: %s", end, ok, worker.PodTerminated)
	}
}
