package kube

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inkdev/ink/ipc"
)

// Labels and annotations on every pod of ink.
const (
	labelApp        = "app.kubernetes.io/name"
	labelRun        = "ink.dev/run"
	labelSession    = "ink.dev/session"
	labelChild      = "ink.dev/child"
	labelAttempt    = "ink.dev/attempt"
	labelSupervisor = "ink.dev/supervisor"
	// annotationSupervisor holds the supervisor's host, boot id and pid
	// (label values allow no '/' or ':'), which Prune reads.
	annotationSupervisor = "ink.dev/supervisor"
)

// workerContainer names the pod's only container.
const workerContainer = "worker"

// Paths in the pod: everything the worker writes is an emptyDir, for a
// read-only root filesystem.
const (
	podHome = "/home/ink"
	podTmp  = "/tmp"
	podUID  = 1000
)

// podSpec is what one attempt's pod is made of.
type podSpec struct {
	name       string
	namespace  string
	image      string
	port       int32
	labels     map[string]string
	annotation string
	supervisor string // the supervisor's certificate hash
	workspace  string // the worktree's path on the host, which the worker recreates
	resources  corev1.ResourceRequirements
	deadline   time.Duration
	grace      time.Duration
}

// labelInvalid matches what a label value may not hold.
var labelInvalid = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes s a valid label value (≤ 63 of [A-Za-z0-9._-],
// alphanumeric at both ends).
func labelValue(s string) string {
	s = labelInvalid.ReplaceAllString(s, ".")
	if len(s) > 63 {
		s = s[len(s)-63:]
	}
	return strings.Trim(s, "._-")
}

// podName is the attempt's pod's name: a DNS label from its session and
// attempt ids.
func podName(spec ipc.AttemptSpec) string {
	name := "ink-" + strings.ToLower(labelValue(spec.SessionID))
	att := strings.ToLower(labelValue(spec.AttemptID))
	if len(att) > 10 {
		att = att[len(att)-10:]
	}
	name = strings.ReplaceAll(name+"-"+att, ".", "-")
	name = strings.ReplaceAll(name, "_", "-")
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.Trim(name, "-")
}

// build returns the Pod. It names no key, token or secret: the worker's
// keys travel in the Run message over the pinned stream, and its
// environment is its home, its listen address and the supervisor's
// certificate hash (public).
func (p podSpec) build() *corev1.Pod {
	no, yes := false, true
	uid := int64(podUID)
	deadline := int64(p.deadline / time.Second)
	grace := int64(p.grace/time.Second) + 2
	emptyDir := func(name string, memory bool) corev1.Volume {
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if memory {
			v.EmptyDir.Medium = corev1.StorageMediumMemory
		}
		return v
	}
	mounts := []corev1.VolumeMount{{Name: "home", MountPath: podHome}, {Name: "tmp", MountPath: podTmp}}
	volumes := []corev1.Volume{emptyDir("home", false), emptyDir("tmp", false)}
	if p.workspace != "" {
		// The worker makes the child's repository at the worktree's own
		// path, so that paths in the transcript mean the same on both
		// ends; its parent must be writable for that.
		mounts = append(mounts, corev1.VolumeMount{Name: "work", MountPath: path.Dir(p.workspace)})
		volumes = append(volumes, emptyDir("work", false))
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: p.namespace, Labels: p.labels,
			Annotations: map[string]string{annotationSupervisor: p.annotation},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  workerContainer,
				Image: p.image,
				Args:  []string{"worker", "--remote", "--listen", fmt.Sprintf(":%d", p.port)},
				Env: []corev1.EnvVar{
					{Name: ipc.SupervisorCertEnv, Value: p.supervisor},
					{Name: "HOME", Value: podHome},
					{Name: "TMPDIR", Value: podTmp},
				},
				Ports:     []corev1.ContainerPort{{Name: "ink", ContainerPort: p.port, Protocol: corev1.ProtocolTCP}},
				Resources: p.resources,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts:             mounts,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: volumes,
		},
	}
}
