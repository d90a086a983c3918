package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/inkdev/ink/launcher/kube/internal/kubetest"
)

// TestEnds: cancel (SIGINT) and --timeout delete the attempt's pod; an
// unschedulable pod and an image that cannot be pulled end the attempt
// naming the reason within --kube-start-timeout.
func TestEnds(t *testing.T) {
	w := newWorld(t)
	t.Run("cancel", func(t *testing.T) {
		script, _ := w.waitingScript("cancel")
		p := w.start(append(kubeArgs("pod-ip"), "task", "--model", "script:"+script, "wait for release")...)
		waitInBash(t, time.Minute, p)
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		p.wait(t, time.Minute)
		w.waitNoPods(t, 30*time.Second)
		t.Logf("cancel: ink exited %d; pods gone %s after SIGINT", p.code, time.Since(sent).Round(time.Millisecond))
		if rec, _ := w.lastRecord(t); rec.Status != "aborted" {
			t.Errorf("cancelled child: %s %q, want aborted", rec.Status, rec.Reason)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		script, _ := w.waitingScript("timeout")
		began := time.Now()
		p := w.start(append(kubeArgs("pod-ip"), "task", "--timeout", "5s", "--model", "script:"+script, "wait for release")...)
		p.wait(t, time.Minute)
		w.waitNoPods(t, 30*time.Second)
		t.Logf("timeout 5s: ink exited %d, pods gone %s after start", p.code, time.Since(began).Round(time.Millisecond))
		if rec, _ := w.lastRecord(t); rec.Status != "timeout" {
			t.Errorf("timed-out child: %s %q, want timeout", rec.Status, rec.Reason)
		}
	})
	for _, c := range []struct {
		name, reason string
		flags        []string
	}{
		{"unschedulable", "Unschedulable", []string{"--kube-cpu", "64"}},
		{"image pull error", "ImagePull", []string{"--kube-image", "ink.invalid/pull-error:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			script, _ := w.waitingScript("start")
			began := time.Now()
			args := append(kubeArgs("pod-ip", append([]string{"--kube-start-timeout", "5s"}, c.flags...)...), "task", "--model", "script:"+script, "wait for release")
			p := w.start(args...)
			p.wait(t, time.Minute)
			took := time.Since(began)
			rec, _ := w.lastRecord(t)
			t.Logf("%s: ink exited %d after %s: %s %q", c.name, p.code, took.Round(time.Millisecond), rec.Status, rec.Reason)
			if rec.Status == "completed" || !strings.Contains(rec.Reason, c.reason) {
				t.Errorf("record %s %q, want a failure naming %s\nstderr:\n%s", rec.Status, rec.Reason, c.reason, p.stderr)
			}
			if took > 15*time.Second {
				t.Errorf("took %s with --kube-start-timeout 5s", took)
			}
			w.waitNoPods(t, 10*time.Second)
		})
	}
}

// TestKubeCheck: ink kube check passes for the ink user, naming each verb.
func TestKubeCheck(t *testing.T) {
	w := newWorld(t)
	p := w.run(t, time.Minute, "--kube-namespace", "ink", "kube", "check")
	out := p.stdout.String()
	for _, want := range []string{"ok      namespace ink", "create pods", "get pods/log", "create pods/portforward", "get pods/portforward", "runs ink "} {
		if !strings.Contains(out, want) {
			t.Errorf("ink kube check lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "MISSING") {
		t.Errorf("ink kube check found something missing for the ink user:\n%s", out)
	}
}

// TestKubeCheckMissing: for a user whose Role lacks pods/log, ink kube
// check exits non-zero naming the missing verb and the manifest to apply.
func TestKubeCheckMissing(t *testing.T) {
	var rules []rbacv1.PolicyRule
	for _, r := range kubetest.InkRules {
		if r.Resources[0] != "pods/log" {
			rules = append(rules, r)
		}
	}
	c := kubetest.StartWith(t, kubetest.Options{Rules: rules})
	w := &world{t: t, c: c, home: t.TempDir(), repo: t.TempDir()}
	w.ink = filepath.Join(w.home, ".ink")
	p := w.start("--kube-namespace", "ink", "kube", "check")
	code := p.wait(t, time.Minute)
	out := p.stdout.String()
	if code == 0 || !strings.Contains(out, "MISSING RBAC get pods/log") || !strings.Contains(out, "deploy/kube/rbac.yaml") {
		t.Errorf("ink kube check without pods/log exited %d:\n%s\n%s", code, out, p.stderr)
	}
	if strings.Contains(out, "MISSING RBAC create pods:") {
		t.Errorf("ink kube check names a verb the user has:\n%s", out)
	}
}
