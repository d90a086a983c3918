package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inkdev/ink/launcher/kube/internal/kubetest"
	"github.com/inkdev/ink/session"
)

// waitingScript: the child's first turn waits in bash until release
// exists (the pod's root file system is read-only: it can read the host's
// /var/tmp, not write it); on "go on" it says "resumed".
func (w *world) waitingScript(name string) (script, release string) {
	release = filepath.Join(w.shared, name+".release")
	script = w.write(name+".yaml", fmt.Sprintf(`rules:
  - when: {result: "resumed"}
    reply: {text: "finished"}
  - when: {user: "go on"}
    reply:
      calls: [{tool: bash, args: {command: "echo resumed on $(hostname)"}}]
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "while [ ! -e %s ]; do sleep 0.1; done; echo released"}}]
  - reply: {text: "done"}
`, release))
	return script, release
}

// waitInBash waits until ink reports its child's bash call: the attempt
// is then mid-way, its bash waiting for the release file.
func waitInBash(t *testing.T, limit time.Duration, p *proc) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if strings.Contains(p.stderr.String(), "shell/1 bash while") {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("ink ended (%d) before its child called bash\nstdout:\n%s\nstderr:\n%s", p.code, p.stdout, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not call bash within %s\nstderr:\n%s", limit, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// onlyPod returns the namespace's one pod.
func (w *world) onlyPod(t *testing.T) corev1.Pod {
	t.Helper()
	pods, err := w.c.Pods(context.Background(), kubetest.Namespace)
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods: %d, %v; want one", len(pods), err)
	}
	return pods[0]
}

func (w *world) node(t *testing.T, name string) *kubetest.Node {
	t.Helper()
	for _, n := range w.nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

// lastRecord returns the newest session's only TaskRecord and its child's
// transcript path.
func (w *world) lastRecord(t *testing.T) (session.TaskRecord, string) {
	t.Helper()
	main := w.newestSession(t)
	recs := records(t, main)
	if len(recs) == 0 {
		t.Fatalf("session %s has no task record", main)
	}
	return recs[len(recs)-1], session.ChildPath(main, recs[len(recs)-1].ChildID)
}

// TestNodeLoss: the node running a child freezes mid-attempt; the attempt
// ends interrupted naming the node lost within 5 s; the child resumes in a
// new pod on the other node; after the thaw the stale pod writes nothing.
func TestNodeLoss(t *testing.T) {
	w := newWorld(t)
	script, release := w.waitingScript("node-loss")
	p := w.start(append(kubeArgs("pod-ip"), "task", "--worktree", "--writable", w.shared, "--model", "script:"+script, "wait for release")...)
	waitInBash(t, time.Minute, p)
	pod := w.onlyPod(t)
	frozen := w.node(t, pod.Spec.NodeName)
	frozen.Freeze()
	froze := time.Now()
	t.Cleanup(frozen.Thaw)
	p.wait(t, time.Minute)
	lost := time.Since(froze)
	t.Logf("node %s frozen; ink task ended %s later (exit %d)", frozen.Name, lost.Round(time.Millisecond), p.code)
	rec, childPath := w.lastRecord(t)
	if rec.Status != "interrupted" || !strings.Contains(rec.Reason, "node lost") {
		t.Fatalf("record %s %q, want interrupted naming the node lost\nstderr:\n%s", rec.Status, rec.Reason, p.stderr)
	}
	if lost > 5*time.Second {
		t.Errorf("the loss took %s from the freeze, want ≤ 5 s", lost)
	}
	tr, err := session.Open(childPath)
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != "interrupted" || !strings.Contains(end.Reason, "node lost") {
		t.Fatalf("the child's transcript ends %+v (%v), want interrupted, node lost", end, ok)
	}

	// The stale pod is frozen: it may not write; release its bash anyway,
	// so that if it could, it would.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := w.watchNodes()
	r := w.run(t, 2*time.Minute, append(kubeArgs("pod-ip"), "task", "--writable", w.shared, "--model", "script:"+script, "--resume", rec.ChildID, "go on")...)
	nodes := stop()
	if !strings.HasPrefix(strings.TrimSpace(r.stdout.String()), "finished") {
		t.Errorf("the resume said %q, want finished", r.stdout)
	}
	var other string
	for name, n := range nodes {
		if name != pod.Name {
			other = n
		}
	}
	if other == "" || other == frozen.Name {
		t.Errorf("the resumed attempt's pod ran on %q, want the node that was not frozen (pods %v)", other, nodes)
	}
	before, err := os.ReadFile(childPath)
	if err != nil {
		t.Fatal(err)
	}
	frozen.Thaw()
	// The thawed worker's stream is gone: once its pod has ended (killed by
	// its node after the delete), nothing it did reached the transcript.
	if _, err := w.c.WaitPod(context.Background(), kubetest.Namespace, pod.Name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}); err != nil && !errors.Is(err, kubetest.ErrPodGone) {
		t.Fatalf("the stale pod after the thaw: %v", err)
	}
	after, err := os.ReadFile(childPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the stale pod wrote to the transcript after the thaw:\n%s", after[len(before):])
	}
	gone := w.waitNoPods(t, 30*time.Second)
	t.Logf("after the thaw every pod was gone within %s", gone.Round(time.Millisecond))
}

// TestSupervisorKilled: the supervisor dies by SIGKILL mid-attempt; its
// pod's worker ends within seconds (its stream is gone), ink kube prune
// deletes what is left, and the child resumes and completes.
func TestSupervisorKilled(t *testing.T) {
	w := newWorld(t)
	script, release := w.waitingScript("sigkill")
	p := w.start(append(kubeArgs("pod-ip"), "task", "--worktree", "--writable", w.shared, "--model", "script:"+script, "wait for release")...)
	waitInBash(t, time.Minute, p)
	pod := w.onlyPod(t)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-p.done
	if _, err := w.c.WaitPod(context.Background(), kubetest.Namespace, pod.Name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}); err != nil && !errors.Is(err, kubetest.ErrPodGone) {
		t.Fatalf("the orphaned pod: %v", err)
	}
	ended := time.Since(killed)
	t.Logf("the orphaned pod's worker ended %s after the supervisor's SIGKILL", ended.Round(time.Millisecond))
	if ended > 15*time.Second {
		t.Errorf("the orphaned pod ran %s after its supervisor died", ended)
	}
	w.run(t, time.Minute, "--kube-namespace", kubetest.Namespace, "kube", "prune")
	if left := w.podsLeft(context.Background()); len(left) != 0 {
		t.Errorf("pods left after ink kube prune: %v", left)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The supervisor died before it could record the task: the child's id
	// is the one it announced.
	m := regexp.MustCompile(`child (\S+) in worktree`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("ink announced no child:\n%s", p.stderr)
	}
	r := w.run(t, 2*time.Minute, append(kubeArgs("pod-ip"), "task", "--writable", w.shared, "--model", "script:"+script, "--resume", m[1], "go on")...)
	if !strings.HasPrefix(strings.TrimSpace(r.stdout.String()), "finished") {
		t.Errorf("the resume said %q, want finished", r.stdout)
	}
	w.waitNoPods(t, 10*time.Second)
}

// TestSupervisorKilledRun: `ink run`'s supervisor is SIGKILLed while its
// child runs in a pod; the pod's worker stops on its own, and the next
// `ink run --session` with --launcher kube deletes the dead supervisor's
// pod, answers the open task call and completes.
func TestSupervisorKilledRun(t *testing.T) {
	w := newWorld(t)
	release := filepath.Join(w.shared, "run.release")
	script := w.write("run.yaml", fmt.Sprintf(`rules:
  - when: {depth: 0, user: "go on"}
    reply: {text: "main finished"}
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "wait for release", worktree: true}}]
  - when: {depth: 0}
    reply: {text: "main done"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "while [ ! -e %s ]; do sleep 0.1; done; echo released"}}]
  - reply: {text: "done"}
`, release))
	p := w.start(append(kubeArgs("pod-ip"), "run", "--writable", w.shared, "--model", "script:"+script, "start")...)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.stderr.String(), "main/1 bash while") {
		select {
		case <-p.done:
			t.Fatalf("ink ended (%d) before its child called bash\nstderr:\n%s", p.code, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not call bash within a minute\nstderr:\n%s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := regexp.MustCompile(`main started \(session (\S+),`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("ink named no main session:\n%s", p.stderr)
	}
	pod := w.onlyPod(t)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if _, err := w.c.WaitPod(context.Background(), kubetest.Namespace, pod.Name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}); err != nil && !errors.Is(err, kubetest.ErrPodGone) {
		t.Fatalf("the orphaned pod: %v", err)
	}
	if left := w.podsLeft(context.Background()); len(left) == 0 {
		t.Fatal("the dead supervisor's pod is already gone: nothing for ink run --session to clean up")
	}
	r := w.run(t, 2*time.Minute, append(kubeArgs("pod-ip"), "run", "--writable", w.shared, "--model", "script:"+script, "--session", m[1], "go on")...)
	if !strings.Contains(r.stdout.String(), "main finished") {
		t.Errorf("ink run --session said %q, want main finished\nstderr:\n%s", r.stdout, r.stderr)
	}
	if left := w.podsLeft(context.Background()); len(left) != 0 {
		t.Errorf("pods of the dead supervisor left after ink run --session: %v", left)
	}
	var answered bool
	for _, rec := range records(t, w.newestSession(t)) {
		answered = answered || rec.ChildID != ""
	}
	if !answered {
		t.Error("the open task call has no record after ink run --session")
	}
}
