package kubetest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildInk builds ink's binary for the pods to run.
func buildInk(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ink")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/inkdev/ink/cmd/ink").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ink: %v\n%s", err, out)
	}
	return bin
}

func podPhase(phases ...corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true
			}
		}
		return false
	}
}

// TestControlPlaneSmoke: the control plane comes up, two node agents
// register, a bare Pod running `ink version` is bound by the agents, runs
// and succeeds, and its log read through the apiserver shows the version;
// a TCP server in a pod is reached through pods/portforward; the ink user
// may create pods but not nodes; unschedulable pods, image pull errors,
// OOM kills and graceful deletes are reported as a kubelet would.
func TestControlPlaneSmoke(t *testing.T) {
	c := Start(t)
	t.Logf("apiserver ready after %s", c.Ready.Round(time.Millisecond))
	ink := buildInk(t)
	home := t.TempDir()
	cmd := exec.Command(ink, "version")
	cmd.Env = append(os.Environ(), "HOME="+home, "INK_HOME="+filepath.Join(home, ".ink"))
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("ink version on the host: %v", err)
	}
	wantLine := strings.SplitN(strings.TrimSpace(string(want)), "\n", 2)[0]

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	nodesStarted := []*Node{
		c.StartNode(t, "node-a", NodeOptions{Exec: ink}),
		c.StartNode(t, "node-b", NodeOptions{Exec: ink}),
	}
	t.Logf("two nodes ready after %s", time.Since(began).Round(time.Millisecond))
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("nodes: %d, %v; want node-a and node-b", len(nodes), err)
	}

	versionPod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "worker", Image: "ink.invalid/ink:test", Args: []string{"version"},
					Env:          []corev1.EnvVar{{Name: "HOME", Value: "/home/ink"}, {Name: "INK_HOME", Value: "/home/ink/.ink"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "home", MountPath: "/home/ink"}},
				}},
				Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		}
	}
	t.Run("ink version in two pods, bound round robin, logs through the apiserver", func(t *testing.T) {
		used := map[string]bool{}
		for _, name := range []string{"version-1", "version-2"} {
			inkCore, err := CoreClient(c.Ink)
			if err != nil {
				t.Fatal(err)
			}
			// Created as the ink user: its Role allows pods create.
			if err := inkCore.Post().Namespace(Namespace).Resource("pods").Body(versionPod(name)).Do(ctx).Error(); err != nil {
				t.Fatalf("create pod %s as ink: %v", name, err)
			}
			p, err := c.WaitPod(ctx, Namespace, name, podPhase(corev1.PodSucceeded, corev1.PodFailed))
			if err != nil {
				t.Fatalf("pod %s: %v", name, err)
			}
			if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName == "" {
				t.Fatalf("pod %s: phase %s on node %q, status %+v", name, p.Status.Phase, p.Spec.NodeName, p.Status)
			}
			used[p.Spec.NodeName] = true
			term := p.Status.ContainerStatuses[0].State.Terminated
			if term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
				t.Fatalf("pod %s: container state %+v, want terminated Completed 0", name, p.Status.ContainerStatuses[0].State)
			}
			rc, err := Logs(ctx, c.Ink, Namespace, name, "worker", false)
			if err != nil {
				t.Fatalf("pods/log of %s as ink: %v", name, err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !strings.Contains(string(got), wantLine) {
				t.Fatalf("pod %s log through the apiserver = %q, want a line %q", name, got, wantLine)
			}
		}
		if len(used) != 2 {
			t.Errorf("two pods landed on %v, want one on each node (round robin)", used)
		}
	})

	t.Run("rbac: ink may create pods but not nodes", func(t *testing.T) {
		inkCore, err := CoreClient(c.Ink)
		if err != nil {
			t.Fatal(err)
		}
		err = inkCore.Post().Resource("nodes").Body(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rogue"}}).Do(ctx).Error()
		if !apierrors.IsForbidden(err) {
			t.Fatalf("ink creating a node: %v, want Forbidden", err)
		}
		err = inkCore.Post().Namespace("default").Resource("pods").Body(versionPod("elsewhere")).Do(ctx).Error()
		if !apierrors.IsForbidden(err) {
			t.Fatalf("ink creating a pod outside its namespace: %v, want Forbidden", err)
		}
	})

	t.Run("unschedulable and image pull error", func(t *testing.T) {
		big := versionPod("too-big")
		big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
		pull := versionPod("no-image")
		pull.Spec.Containers[0].Image = "ink.invalid/pull-error:1"
		for _, p := range []*corev1.Pod{big, pull} {
			if _, err := c.CreatePod(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		p, err := c.WaitPod(ctx, Namespace, "too-big", func(p *corev1.Pod) bool {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || !strings.Contains(p.Status.Conditions[0].Message, "Insufficient cpu") {
			t.Fatalf("too-big: node %q phase %s conditions %+v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		p, err = c.WaitPod(ctx, Namespace, "no-image", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ImagePullBackOff"
		})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending {
			t.Fatalf("no-image: phase %s, want Pending", p.Status.Phase)
		}
	})

	t.Run("a frozen node gets no pods; the other node binds in its place", func(t *testing.T) {
		var nodeA *Node
		for _, n := range nodesStarted {
			if n.Name == "node-a" {
				nodeA = n
			}
		}
		nodeA.Freeze()
		defer nodeA.Thaw()
		for _, name := range []string{"version-3", "version-4"} {
			if _, err := c.CreatePod(ctx, versionPod(name)); err != nil {
				t.Fatal(err)
			}
			p, err := c.WaitPod(ctx, Namespace, name, podPhase(corev1.PodSucceeded, corev1.PodFailed))
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "node-b" || p.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("%s with node-a frozen: node %q phase %s, want node-b Succeeded", name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	})

	// A third node runs this test binary as its containers' program: an
	// echo server, reached through pods/portforward.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	echoNode := c.StartNode(t, "node-echo", NodeOptions{Exec: self})
	echoPod := func(name string) *corev1.Pod {
		grace := int64(3)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
			Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				NodeSelector:                  map[string]string{"kubernetes.io/hostname": "node-echo"},
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{
					Name: "echo", Image: "ink.invalid/echo",
					Env: []corev1.EnvVar{
						{Name: echoEnv, Value: "1"},
						{Name: "PORT", Value: "7777"},
						{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					},
					SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)},
					VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				}},
				Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		}
	}
	t.Run("port-forward through the apiserver to a pod's TCP server", func(t *testing.T) {
		if _, err := c.CreatePod(ctx, echoPod("echo-1")); err != nil {
			t.Fatal(err)
		}
		p, err := c.WaitPod(ctx, Namespace, "echo-1", podPhase(corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed))
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "node-echo" || !strings.HasPrefix(p.Status.PodIP, "127.0.") {
			t.Fatalf("echo-1: phase %s node %q IP %q", p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
		}
		// The server listens once its log says so (read through pods/log,
		// following).
		rc, err := Logs(ctx, c.Ink, Namespace, "echo-1", "echo", true)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(rc).ReadString('\n')
		rc.Close()
		if err != nil || !strings.HasPrefix(line, "listening on "+p.Status.PodIP+":7777") {
			t.Fatalf("echo-1's first log line %q (%v), want it listening on its pod IP", line, err)
		}
		conn, err := DialPod(ctx, c.Ink, Namespace, "echo-1", 7777)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		greet, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("greeting through the port-forward: %v", err)
		}
		// PID 1 of its own PID namespace, the pod's hostname, /tmp a
		// writable volume of its own on a read-only root.
		if want := "pid=1 host=echo-1 tmp-written=true\n"; greet != want {
			t.Fatalf("greeting %q, want %q", greet, want)
		}
		if _, err := os.Stat("/tmp/kubetest-echo-1"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the pod's /tmp file is visible on the host: %v", err)
		}
		if _, err := io.WriteString(conn, "hello\n"); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadString('\n'); err != nil || got != "echo hello\n" {
			t.Fatalf("echo %q, %v", got, err)
		}
	})

	t.Run("freeze and thaw stop and continue the node's pods", func(t *testing.T) {
		pid, ok := echoNode.PodPIDs()[Namespace+"/echo-1"]
		if !ok {
			t.Fatalf("echo-1 not in %s: %v", echoNode.PidsFile, echoNode.PodPIDs())
		}
		echoNode.Freeze()
		for _, p := range []int{echoNode.Pid(), pid} {
			if s := procState(p); s != "T" {
				t.Errorf("pid %d state %q after Freeze, want T (stopped)", p, s)
			}
		}
		echoNode.Thaw()
		for _, p := range []int{echoNode.Pid(), pid} {
			if s := procState(p); s == "T" {
				t.Errorf("pid %d still stopped after Thaw", p)
			}
		}
	})

	t.Run("oom kill reported as OOMKilled", func(t *testing.T) {
		if err := c.InjectFault(ctx, Namespace, "echo-1", FaultOOMKill); err != nil {
			t.Fatal(err)
		}
		p, err := c.WaitPod(ctx, Namespace, "echo-1", podPhase(corev1.PodSucceeded, corev1.PodFailed))
		if err != nil {
			t.Fatal(err)
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		if p.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
			t.Fatalf("echo-1 after oom-kill: phase %s state %+v", p.Status.Phase, p.Status.ContainerStatuses[0].State)
		}
	})

	t.Run("activeDeadlineSeconds and eviction", func(t *testing.T) {
		late := echoPod("echo-deadline")
		late.Spec.ActiveDeadlineSeconds = ptr(int64(1))
		evicted := echoPod("echo-evict")
		for _, p := range []*corev1.Pod{late, evicted} {
			if _, err := c.CreatePod(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.WaitPod(ctx, Namespace, "echo-evict", podPhase(corev1.PodRunning)); err != nil {
			t.Fatal(err)
		}
		if err := c.InjectFault(ctx, Namespace, "echo-evict", FaultEvict); err != nil {
			t.Fatal(err)
		}
		for name, reason := range map[string]string{"echo-deadline": "DeadlineExceeded", "echo-evict": "Evicted"} {
			p, err := c.WaitPod(ctx, Namespace, name, podPhase(corev1.PodSucceeded, corev1.PodFailed))
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase != corev1.PodFailed || p.Status.Reason != reason {
				t.Fatalf("%s: phase %s reason %q, want Failed %s", name, p.Status.Phase, p.Status.Reason, reason)
			}
		}
	})

	t.Run("graceful delete: SIGTERM, then the pod is gone", func(t *testing.T) {
		if _, err := c.CreatePod(ctx, echoPod("echo-2")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitPod(ctx, Namespace, "echo-2", podPhase(corev1.PodRunning)); err != nil {
			t.Fatal(err)
		}
		pid := echoNode.PodPIDs()[Namespace+"/echo-2"]
		inkCore, err := CoreClient(c.Ink)
		if err != nil {
			t.Fatal(err)
		}
		if err := inkCore.Delete().Namespace(Namespace).Resource("pods").Name("echo-2").Do(ctx).Error(); err != nil {
			t.Fatalf("delete as ink: %v", err)
		}
		if _, err := c.WaitPod(ctx, Namespace, "echo-2", func(*corev1.Pod) bool { return false }); !errors.Is(err, ErrPodGone) {
			t.Fatalf("echo-2 after delete: %v, want it gone", err)
		}
		if pid == 0 || syscall.Kill(pid, 0) == nil {
			t.Fatalf("echo-2's process %d is still there after its pod is gone", pid)
		}
	})
}

func ptr[T any](v T) *T { return &v }
