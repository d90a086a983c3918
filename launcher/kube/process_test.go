package kube

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/worker"
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
