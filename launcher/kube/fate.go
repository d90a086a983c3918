package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fate says how a pod's worker ended, as the cluster reports it, in the
// words an attempt's end records ("" while the pod has not ended and is
// not being deleted). The reasons a user acts on are named: OOMKilled (a
// memory limit to raise), Evicted (node pressure), DeadlineExceeded (the
// activeDeadlineSeconds backstop).
func fate(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	name := "pod " + pod.Name
	if pod.Spec.NodeName != "" {
		name += " on node " + pod.Spec.NodeName
	}
	switch pod.Status.Reason {
	case "Evicted":
		return fmt.Sprintf("Evicted: the cluster evicted %s%s", name, detail(pod.Status.Message))
	case "DeadlineExceeded":
		return fmt.Sprintf("DeadlineExceeded: %s ran past its activeDeadlineSeconds%s", name, detail(pod.Status.Message))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != workerContainer || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		switch {
		case t.Reason == "OOMKilled":
			limit := ""
			for _, c := range pod.Spec.Containers {
				if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == workerContainer {
					limit = " of " + q.String()
				}
			}
			return fmt.Sprintf("OOMKilled: the worker in %s went over its memory limit%s (raise --kube-memory)", name, limit)
		case t.ExitCode != 0 || t.Signal != 0:
			reason := t.Reason
			if reason == "" {
				reason = "Error"
			}
			return fmt.Sprintf("%s: the worker in %s exited with status %d%s", reason, name, t.ExitCode, detail(firstLine(t.Message)))
		default:
			return fmt.Sprintf("the worker in %s exited (%s) before recording its end", name, strings.ToLower(t.Reason))
		}
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Sprintf("%s was deleted", name)
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("%s ended (%s)%s", name, pod.Status.Phase, detail(pod.Status.Message))
	}
	return ""
}

// ended reports whether the pod is gone or will run no more.
func ended(pod *corev1.Pod) bool {
	return pod == nil || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// pending describes a pod that does not run yet, with the scheduler's or
// the kubelet's reason; fatal says the reason will not pass by waiting
// (an image that cannot be pulled, a pod that cannot be scheduled)
// though the caller still waits for its start timeout before it gives up.
func pending(pod *corev1.Pod) (why string, fatal bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("%s: %s", orDefault(c.Reason, "Unschedulable"), firstLine(c.Message)), c.Reason == corev1.PodReasonUnschedulable
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return fmt.Sprintf("%s: %s", w.Reason, firstLine(w.Message)), true
			}
			return fmt.Sprintf("%s: %s", w.Reason, firstLine(w.Message)), false
		}
	}
	if pod.Spec.NodeName == "" {
		return "waiting to be scheduled", false
	}
	return "starting on node " + pod.Spec.NodeName, false
}

func detail(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return ": " + s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// metaNow is the time a deletion is recorded at.
func metaNow() metav1.Time { return metav1.Now() }
