package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// faultAnnotation on a pod asks its node for a fault a real kubelet would
// report: "oom-kill" (SIGKILL, container OOMKilled, exit 137) or "evict"
// (SIGKILL, pod Failed with reason Evicted).
const faultAnnotation = "inknode.ink.dev/fault"

// pullErrorImage: an image whose name starts with it never pulls.
const pullErrorImage = "ink.invalid/pull-error"

// podRun is one pod bound to this node and its process. cmd is set once,
// before started closes; reason is guarded by mu.
type podRun struct {
	key, ns, name string
	uid           types.UID
	ip            string
	hostIPNo      int
	dir           string
	logPath       string
	container     string

	started chan struct{} // closed once the process started (or never will)
	done    chan struct{} // closed once the process ended (or never started)
	cmd     *exec.Cmd

	mu        sync.Mutex
	reason    string // why the agent killed it: OOMKilled, Evicted, DeadlineExceeded
	startedAt metav1.Time

	terminateOnce, faultOnce, endOnce sync.Once
}

func (r *podRun) pid() int {
	select {
	case <-r.started:
		if r.cmd != nil && r.cmd.Process != nil {
			select {
			case <-r.done:
				return 0
			default:
				return r.cmd.Process.Pid
			}
		}
	default:
	}
	return 0
}

// end marks a run that never got (or will never get) a process as ended.
func (r *podRun) end() {
	r.endOnce.Do(func() {
		select {
		case <-r.started:
		default:
			close(r.started)
		}
		close(r.done)
	})
}

func (r *podRun) setReason(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" {
		r.reason = reason
	}
}

func (r *podRun) getReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason
}

// signal sends sig to the pod's PID 1 (from the parent namespace SIGKILL and
// SIGSTOP always arrive; other signals only when PID 1 handles them, as in
// a container).
func (r *podRun) signal(sig syscall.Signal) {
	if pid := r.pid(); pid > 0 {
		_ = syscall.Kill(pid, sig)
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs, and waits for the
// process to end.
func (r *podRun) stop(grace time.Duration) {
	<-r.started
	if grace > 0 {
		r.signal(syscall.SIGTERM)
		select {
		case <-r.done:
			return
		case <-time.After(grace):
		}
	}
	r.signal(syscall.SIGKILL)
	<-r.done
}

// runPod starts pod's container and reports its life to the apiserver.
func (a *agent) runPod(ctx context.Context, pod *corev1.Pod, run *podRun) {
	defer a.releaseIP(run)
	if len(pod.Spec.Containers) > 0 {
		run.container = pod.Spec.Containers[0].Name
	}
	if err := a.checkPod(pod, run); err != nil {
		run.end()
		a.report(ctx, run, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodFailed
			s.Reason = "UnsupportedByInknode"
			s.Message = err.Error()
		})
		return
	}
	c := pod.Spec.Containers[0]
	if strings.HasPrefix(c.Image, pullErrorImage) {
		run.end()
		a.pullError(ctx, run, c)
		return
	}
	cmd, err := a.prepare(pod, run)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		run.end()
		log.Printf("pod %s: %v", run.key, err)
		a.report(ctx, run, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodFailed
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error()}}}}
		})
		return
	}
	run.cmd = cmd
	run.startedAt = metav1.Now()
	close(run.started)
	if err := a.writePids(); err != nil {
		log.Printf("pod %s: %v", run.key, err)
	}
	log.Printf("pod %s: running, pid %d, IP %s", run.key, cmd.Process.Pid, run.ip)
	if ownNetwork() {
		var ports []int
		for _, p := range c.Ports {
			if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
				ports = append(ports, int(p.ContainerPort))
			}
		}
		if stop, err := relay(run, ports); err != nil {
			log.Printf("pod %s: %v", run.key, err)
		} else {
			defer stop()
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	a.report(ctx, run, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.HostIP = "127.0.0.1"
		s.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		s.PodIP = run.ip
		s.PodIPs = []corev1.PodIP{{IP: run.ip}}
		s.StartTime = &run.startedAt
		for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			setCondition(s, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: fmt.Sprintf("inknode://%d", cmd.Process.Pid),
			Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: run.startedAt}},
		}}
	})

	var deadline <-chan time.Time
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		t := time.NewTimer(time.Duration(*d) * time.Second)
		defer t.Stop()
		deadline = t.C
	}
	var werr error
	select {
	case werr = <-waited:
	case <-deadline:
		run.setReason("DeadlineExceeded")
		grace := 30 * time.Second
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		go func() {
			run.signal(syscall.SIGTERM)
			select {
			case <-run.done:
			case <-time.After(grace):
				run.signal(syscall.SIGKILL)
			}
		}()
		werr = <-waited
	}
	finished := metav1.Now()
	close(run.done)
	if err := a.writePids(); err != nil {
		log.Printf("pod %s: %v", run.key, err)
	}
	code, signal := exitCode(werr)
	reason := run.getReason()
	log.Printf("pod %s: exited %d (%s)", run.key, code, reason)
	a.report(ctx, run, func(s *corev1.PodStatus) {
		term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Signal: int32(signal), StartedAt: run.startedAt, FinishedAt: finished,
			ContainerID: fmt.Sprintf("inknode://%d", cmd.Process.Pid), Reason: "Completed"}
		s.Phase = corev1.PodSucceeded
		if code != 0 {
			s.Phase = corev1.PodFailed
			term.Reason = "Error"
		}
		switch reason {
		case "OOMKilled":
			term.Reason = "OOMKilled"
		case "Evicted":
			s.Reason, s.Message = "Evicted", "The node was low on resource: memory. (inknode fault injection)"
		case "DeadlineExceeded":
			s.Phase = corev1.PodFailed
			s.Reason, s.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}
		for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			setCondition(s, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted"})
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: term.ContainerID, Started: ptr(false),
			State: corev1.ContainerState{Terminated: term},
		}}
	})
}

func ptr[T any](v T) *T { return &v }

// exitCode is the container's exit code as a runtime reports it: 128+n for
// a death by signal n.
func exitCode(err error) (code, signal int) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), int(ws.Signal())
		}
		return ee.ExitCode(), 0
	}
	if err != nil {
		return 128, 0
	}
	return 0, 0
}

// checkPod refuses what inknode cannot run, with a message saying what.
func (a *agent) checkPod(pod *corev1.Pod, run *podRun) error {
	if len(pod.Spec.Containers) != 1 {
		return fmt.Errorf("inknode runs pods of exactly one container; this one has %d", len(pod.Spec.Containers))
	}
	if len(pod.Spec.InitContainers) > 0 {
		return errors.New("inknode does not run init containers")
	}
	if run.ip == "" {
		return fmt.Errorf("node %s has no free pod IP", a.cfg.name)
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			return fmt.Errorf("volume %q: inknode supports emptyDir volumes only", v.Name)
		}
	}
	c := pod.Spec.Containers[0]
	if len(c.EnvFrom) > 0 {
		return errors.New("inknode does not support envFrom")
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			return fmt.Errorf("volume mount %q: inknode does not support subPath", m.Name)
		}
	}
	return nil
}

// pullError reports the container waiting on an image that cannot be
// pulled, first ErrImagePull then ImagePullBackOff, as a kubelet does.
func (a *agent) pullError(ctx context.Context, run *podRun, c corev1.Container) {
	msg := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", c.Image, c.Image, c.Image)
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		a.report(ctx, run, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodPending
			s.HostIP = "127.0.0.1"
			s.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
			now := metav1.Now()
			if s.StartTime == nil {
				s.StartTime = &now
			}
			setCondition(s, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
			setCondition(s, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [" + c.Name + "]"})
			m := msg
			if reason == "ImagePullBackOff" {
				m = fmt.Sprintf("Back-off pulling image %q", c.Image)
			}
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Started: ptr(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: m}}}}
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// report writes a status change of run's pod.
func (a *agent) report(ctx context.Context, run *podRun, change func(*corev1.PodStatus)) {
	if err := a.updatePodStatus(ctx, run.ns, run.name, run.uid, change); err != nil && ctx.Err() == nil {
		log.Printf("pod %s: status: %v", run.key, err)
	}
}

// terminate finishes a graceful delete: SIGTERM, the grace, SIGKILL, then
// the delete with grace 0 that removes the pod, as a kubelet does.
func (a *agent) terminate(ctx context.Context, key string, run *podRun, pod *corev1.Pod) {
	grace := 30 * time.Second
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	select {
	case <-run.started:
	case <-time.After(grace): // not started yet: its start will see the pod gone
	}
	if run.pid() > 0 {
		log.Printf("pod %s: deleted, SIGTERM with grace %s", key, grace)
		run.stop(grace)
	}
	if err := a.finalDelete(ctx, run.ns, run.name, run.uid); err != nil && ctx.Err() == nil {
		log.Printf("pod %s: final delete: %v", key, err)
	}
}

// finalDelete removes a terminating pod with grace 0, as a kubelet does
// once its containers are gone.
func (a *agent) finalDelete(ctx context.Context, ns, name string, uid types.UID) error {
	zero := int64(0)
	err := a.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// fault applies a fault the pod's annotation asks for.
func (a *agent) fault(_ context.Context, run *podRun, f string) {
	switch f {
	case "oom-kill":
		run.setReason("OOMKilled")
	case "evict":
		run.setReason("Evicted")
	default:
		log.Printf("pod %s: unknown %s %q (want oom-kill or evict)", run.key, faultAnnotation, f)
		return
	}
	<-run.started
	log.Printf("pod %s: fault %s: SIGKILL", run.key, f)
	run.signal(syscall.SIGKILL)
}

// prepare makes the pod's volumes and log file and the command that runs
// its container through "inknode podinit" in new namespaces.
func (a *agent) prepare(pod *corev1.Pod, run *podRun) (*exec.Cmd, error) {
	c := pod.Spec.Containers[0]
	if err := os.MkdirAll(filepath.Join(run.dir, "volumes"), 0o755); err != nil {
		return nil, fmt.Errorf("pod dir: %w", err)
	}
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		d := filepath.Join(run.dir, "volumes", v.Name)
		if err := os.MkdirAll(d, 0o777); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		vols[v.Name] = d
	}
	spec := initSpec{Exec: a.cfg.exec, WorkDir: c.WorkingDir, Hostname: pod.Name, Network: ownNetwork()}
	if sc := c.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		spec.ReadOnlyRoot = true
	}
	for _, m := range c.VolumeMounts {
		src, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %q names no volume of the pod", m.Name)
		}
		spec.Binds = append(spec.Binds, bind{Src: src, Dst: m.MountPath, ReadOnly: m.ReadOnly})
	}
	env, err := podEnv(pod, c, run.ip)
	if err != nil {
		return nil, err
	}
	lookup := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		lookup[k] = v
	}
	argv0 := a.cfg.exec
	var args []string
	if len(c.Command) > 0 {
		argv0 = c.Command[0]
		args = append(args, c.Command[1:]...)
	}
	args = append(args, c.Args...)
	spec.Argv = []string{expand(argv0, lookup)}
	for _, s := range args {
		spec.Argv = append(spec.Argv, expand(s, lookup))
	}
	specPath := filepath.Join(run.dir, "init.json")
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return nil, fmt.Errorf("init spec: %w", err)
	}
	run.logPath = filepath.Join(run.dir, c.Name+".log")
	logf, err := os.OpenFile(run.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, podInitCommand, specPath)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = namespaces()
	// The log file stays open in the child; the parent's copy is not needed.
	go func() { <-run.started; logf.Close() }()
	return cmd, nil
}
