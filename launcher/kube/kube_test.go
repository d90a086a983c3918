package kube

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/version"
)

// fakeKey is a provider key the tests hand the launcher; it must reach
// no object sent to the apiserver.
const fakeKey = "sk-ant-api03-FAKEKEYFAKEKEYFAKEKEY0123456789"

func testSpec() ipc.AttemptSpec {
	return ipc.AttemptSpec{
		SessionID: "01JDEADBEEF0123456789ABCDE", AttemptID: "01JATTEMPT0123456789ABCDEF", Label: "main/2",
		Credentials: map[string]string{"ANTHROPIC_API_KEY": fakeKey},
		Remote:      &ipc.RemoteSpec{Workspace: &ipc.RemoteWorkspace{Path: "/home/me/repo/.ink/worktrees/child"}},
	}
}

// warnings gathers what the launcher tells the user.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) warn(_, text string) {
	w.mu.Lock()
	w.seen = append(w.seen, text)
	w.mu.Unlock()
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

func newTestLauncher(t *testing.T, f *fakePods, cfg Config) (*Launcher, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg.api, cfg.Namespace, cfg.Warn = f, "ink-test", w.warn
	if cfg.Image == "" {
		cfg.Image = "registry.example/ink:test"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute
	}
	l, err := newLauncher(t.Context(), cfg, ConnectPodIP)
	if err != nil {
		t.Fatal(err)
	}
	return l, w
}

// TestPodSpec: the pod of an attempt is bare and confined: restartPolicy
// Never, labelled by run, session, child and attempt, a deadline as
// backstop, no token, no service links, non-root, a read-only root, its
// writable paths emptyDirs, and no key in it.
func TestPodSpec(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakePods()
		l, _ := newTestLauncher(t, f, Config{TaskTimeout: 10 * time.Minute, Grace: 10 * time.Second,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}})
		spec := testSpec()
		if _, err := l.Dial(t.Context(), command.Dial{Spec: spec}); !errors.Is(err, errStartTimeout) {
			t.Fatalf("a pod that never runs: %v, want the start timeout", err)
		}
		pods := f.createdPods()
		if len(pods) != 1 {
			t.Fatalf("%d pods created", len(pods))
		}
		p := pods[0]
		want := map[string]string{labelApp: "ink", labelRun: l.Run(), labelSession: spec.SessionID, labelChild: "main.2", labelAttempt: spec.AttemptID, labelSupervisor: l.self.label()}
		for k, v := range want {
			if p.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
			}
		}
		s := p.Spec
		c := s.Containers[0]
		switch {
		case s.RestartPolicy != corev1.RestartPolicyNever:
			t.Error("restartPolicy is not Never")
		case s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 640:
			t.Errorf("activeDeadlineSeconds %v, want timeout + grace + 30 s = 640", s.ActiveDeadlineSeconds)
		case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
			t.Error("the service-account token is mounted")
		case s.EnableServiceLinks == nil || *s.EnableServiceLinks:
			t.Error("service links are on")
		case s.SecurityContext == nil || s.SecurityContext.RunAsNonRoot == nil || !*s.SecurityContext.RunAsNonRoot:
			t.Error("the pod may run as root")
		case c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem:
			t.Error("the root filesystem is writable")
		case c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation:
			t.Error("privilege escalation allowed")
		case !slices.Equal(c.Args, []string{"worker", "--remote", "--listen", ":7777"}):
			t.Errorf("args %q", c.Args)
		case c.Resources.Limits.Memory().String() != "2Gi":
			t.Errorf("memory limit %v", c.Resources.Limits.Memory())
		case c.Image != "registry.example/ink:test":
			t.Errorf("image %q", c.Image)
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = true
		}
		for _, m := range []string{podHome, podTmp, "/home/me/repo/.ink/worktrees"} {
			if !mounts[m] {
				t.Errorf("no writable volume at %s (mounts %v)", m, mounts)
			}
		}
		for _, v := range s.Volumes {
			if v.EmptyDir == nil {
				t.Errorf("volume %s is not an emptyDir", v.Name)
			}
		}
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
			if e.ValueFrom != nil {
				t.Errorf("env %s comes from elsewhere (%v)", e.Name, e.ValueFrom)
			}
		}
		if env[ipc.SupervisorCertEnv] != l.identity.Hash() {
			t.Errorf("%s = %q, want the supervisor's certificate hash", ipc.SupervisorCertEnv, env[ipc.SupervisorCertEnv])
		}
		if g, ok := f.deletedWith(p.Name); !ok || g == nil || *g != 0 {
			t.Errorf("the pod that did not start was not deleted with grace 0 (%v, %v)", g, ok)
		}
	})
}

// TestPendingReasons: a pod that cannot be scheduled, or whose image
// cannot be pulled, shows as starting with the reason, and past the start
// timeout the launch fails naming it; the pod is deleted.
func TestPendingReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string
	}{
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory."}}}, "Unschedulable: 0/3 nodes are available: 3 Insufficient memory."},
		{"image pull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: workerContainer, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/ink:test"`}}}}}, "ImagePullBackOff: Back-off pulling image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakePods()
				f.kubelet = func(f *fakePods, pod *corev1.Pod) {
					f.update(pod.Name, func(p *corev1.Pod) { p.Status = tc.status })
				}
				l, w := newTestLauncher(t, f, Config{StartTimeout: 5 * time.Minute})
				start := time.Now()
				_, err := l.Dial(t.Context(), command.Dial{Spec: testSpec()})
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, errStartTimeout) {
					t.Fatalf("err = %v, want the start timeout naming %q", err, tc.want)
				}
				if waited := time.Since(start); waited != 5*time.Minute {
					t.Errorf("gave up after %v, want the start timeout", waited)
				}
				if !strings.Contains(w.all(), "starting: pod ") || !strings.Contains(w.all(), tc.want) {
					t.Errorf("the user was not told why the pod is not running:\n%s", w.all())
				}
				name := f.createdPods()[0].Name
				if f.exists(name) {
					t.Error("the pod is still there")
				}
			})
		})
	}
}

// TestCancelWhileStarting: a launch cancelled while its pod is Pending
// says so and deletes the pod.
func TestCancelWhileStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakePods()
		l, _ := newTestLauncher(t, f, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(10 * time.Second)
			cancel()
		}()
		_, err := l.Dial(ctx, command.Dial{Spec: testSpec()})
		if err == nil || errors.Is(err, errStartTimeout) || !strings.Contains(err.Error(), "cancelled while it was starting") {
			t.Fatalf("err = %v, want the cancel named", err)
		}
		if name := f.createdPods()[0].Name; f.exists(name) {
			t.Error("the pod of a cancelled launch is still there")
		}
	})
}

// TestFate: how a pod ended, as the attempt's end names it.
func TestFate(t *testing.T) {
	t.Parallel()
	term := func(reason string, code int32) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: workerContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}}}
	}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		delete bool
		want   string
	}{
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, false, ""},
		{"oom", term("OOMKilled", 137), false, "OOMKilled: the worker in pod p on node n1 went over its memory limit of 1Gi"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}, false, "Evicted: the cluster evicted pod p on node n1: The node was low on resource: memory."},
		{"deadline", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}, false, "DeadlineExceeded: pod p on node n1 ran past its activeDeadlineSeconds"},
		{"error", term("Error", 2), false, "Error: the worker in pod p on node n1 exited with status 2"},
		{"deleted", corev1.PodStatus{Phase: corev1.PodRunning}, true, "pod p on node n1 was deleted"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: workerContainer,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}, Status: tc.status}
		if tc.delete {
			now := metav1.Now()
			pod.DeletionTimestamp = &now
		}
		if got := fate(pod); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: fate = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFateWaitsForTheCluster: a stream that broke before the cluster
// reported the pod's end waits for the report and names it.
func TestFateWaitsForTheCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &podConn{name: "p", gone: make(chan struct{})}
		c.setPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		go func() {
			time.Sleep(time.Second)
			c.setPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}})
		}()
		if got := c.Fate(); !strings.HasPrefix(got, "Evicted") {
			t.Errorf("Fate = %q, want the eviction", got)
		}
		quiet := &podConn{name: "q", gone: make(chan struct{})}
		quiet.setPod(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		start := time.Now()
		if got := quiet.Fate(); got != "" || time.Since(start) != fateWait {
			t.Errorf("a pod the cluster says nothing of: Fate = %q after %v", got, time.Since(start))
		}
	})
}

// TestNodeLost: a loss found by the supervisor is named as the node's.
func TestNodeLost(t *testing.T) {
	t.Parallel()
	c := &podConn{name: "ink-a-b", gone: make(chan struct{})}
	c.setPod(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-3"}})
	got := c.NameLoss(ipc.WorkerLost + ": no heartbeat for 4s")
	if got != "node lost: no heartbeat for 4s (pod ink-a-b on node node-3)" {
		t.Errorf("NameLoss = %q", got)
	}
}

// TestPrune: the pods of a dead supervisor of this host are deleted, a
// live one's and another host's stay.
func TestPrune(t *testing.T) {
	t.Parallel()
	f := newFakePods()
	self := thisSupervisor()
	mk := func(name string, s supervisor) {
		f.set(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelApp: "ink", labelSupervisor: s.label()},
			Annotations: map[string]string{annotationSupervisor: s.annotation()}}})
	}
	mk("dead-pid", supervisor{Host: self.Host, Boot: self.Boot, Pid: 999991})
	mk("old-boot", supervisor{Host: self.Host, Boot: "another-boot", Pid: self.Pid})
	mk("alive", supervisor{Host: self.Host, Boot: self.Boot, Pid: 4242})
	mk("elsewhere", supervisor{Host: "other-host", Boot: "b", Pid: 1})
	l := &Launcher{api: f, self: self}
	alive := func(pid int) bool { return pid == 4242 }
	deleted, left, err := l.pruneReport(t.Context(), alive)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range deleted {
		names = append(names, d.Pod)
	}
	if !slices.Equal(names, []string{"dead-pid", "old-boot"}) {
		t.Errorf("deleted %v, want dead-pid and old-boot", names)
	}
	if len(left) != 1 || left[0].Pod != "elsewhere" || !strings.Contains(left[0].Reason, "other-host") {
		t.Errorf("left %+v, want elsewhere, named as another host's", left)
	}
	if !f.exists("alive") || f.exists("dead-pid") {
		t.Error("prune deleted the wrong pods")
	}
}

// TestCheck: each verb the launcher uses is asked for; a missing one is
// a problem naming the verb and the manifest; an image of another version
// is one too.
func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFakePods()
	f.allowed = map[string]bool{}
	for _, p := range permissions {
		key := p.verb + " " + p.resource
		if p.subresource != "" {
			key += "/" + p.subresource
		}
		f.allowed[key] = key != "create pods/portforward"
	}
	res := check(t.Context(), f, "ns", ImageRepository+":v0.0.0-other", false)
	var what []string
	for _, p := range res.Problems {
		what = append(what, p.What)
	}
	if !slices.Equal(what, []string{"RBAC create pods/portforward", "image " + ImageRepository + ":v0.0.0-other"}) {
		t.Errorf("problems %v", what)
	}
	if !strings.Contains(res.Problems[0].Fix, "deploy/kube/rbac.yaml") {
		t.Errorf("the fix does not name the manifest: %s", res.Problems[0].Fix)
	}
	if len(res.OK) != len(permissions)-1 {
		t.Errorf("OK %v", res.OK)
	}
	// The image is asked for its version in a pod of its own, which is
	// deleted afterwards.
	prints := version.Ink
	f.kubelet = func(f *fakePods, pod *corev1.Pod) {
		if args := pod.Spec.Containers[0].Args; !slices.Equal(args, []string{"version"}) {
			t.Errorf("the check's pod runs %v", args)
		}
		f.setLog(pod.Name, strings.NewReader("ink "+prints+" (worker protocol 5)\n"))
		f.update(pod.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	}
	if res := check(t.Context(), f, "ns", DefaultImage(), true); len(res.Problems) != 0 || !strings.Contains(strings.Join(res.OK, "\n"), "runs ink "+version.Ink) {
		t.Errorf("in the cluster, with this version's image: problems %+v, ok %v", res.Problems, res.OK)
	}
	prints = "0.0.1-elsewhere"
	res = check(t.Context(), f, "ns", DefaultImage(), true)
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Fix, "its ink is 0.0.1-elsewhere and this ink is "+version.Ink) {
		t.Errorf("an image of another ink under this version's tag: %+v", res.Problems)
	}
	for _, p := range f.createdPods() {
		if f.exists(p.Name) {
			t.Errorf("the check left its pod %s", p.Name)
		}
	}
}

// TestCloseDeletesTheRunsPods: Close deletes every pod of its run, not
// another run's.
func TestCloseDeletesTheRunsPods(t *testing.T) {
	t.Parallel()
	f := newFakePods()
	l, _ := newTestLauncher(t, f, Config{})
	f.set(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mine", Labels: map[string]string{labelRun: l.Run()}}})
	f.set(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Labels: map[string]string{labelRun: "another"}}})
	l.Close()
	if f.exists("mine") || !f.exists("theirs") {
		t.Errorf("after Close: mine %v, theirs %v", f.exists("mine"), f.exists("theirs"))
	}
}

func TestMain(m *testing.M) {
	if addr := os.Getenv(workerRoleEnv); addr != "" {
		os.Exit(runTestWorker(addr))
	}
	os.Exit(m.Run())
}

// TestFlags: good flags make the config; a bad one is named.
func TestFlags(t *testing.T) {
	t.Parallel()
	cfg, err := Flags{Connect: "port-forward", CPU: "500m", Memory: "4Gi"}.Config()
	if err != nil || cfg.Connect != ConnectPortForward || cfg.Resources.Limits.Memory().String() != "4Gi" || cfg.Resources.Requests.Cpu().String() != "500m" {
		t.Fatalf("Config = %+v, %v", cfg, err)
	}
	for _, f := range []Flags{{Connect: "ssh"}, {CPU: "lots"}, {Memory: "-1Gi"}, {StartTimeout: -time.Second}} {
		if _, err := f.Config(); err == nil || !strings.Contains(err.Error(), "--kube-") {
			t.Errorf("%+v: err = %v, want the flag named", f, err)
		}
	}
}
