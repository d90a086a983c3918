package kube

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Flags are the --kube-* flags as the user gave them.
type Flags struct {
	Context      string
	Namespace    string
	Image        string
	Connect      string
	CPU          string // request and limit, e.g. "2" or "500m"
	Memory       string // request and limit, e.g. "4Gi"
	StartTimeout time.Duration
}

// Config checks f and returns the Config it means; a bad value is named
// with how to fix it.
func (f Flags) Config() (Config, error) {
	var cfg Config
	connect, err := ParseConnectMode(f.Connect)
	if err != nil {
		return cfg, err
	}
	if f.StartTimeout < 0 {
		return cfg, fmt.Errorf("--kube-start-timeout %s: give a positive duration, e.g. 5m", f.StartTimeout)
	}
	res := corev1.ResourceRequirements{}
	for _, q := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"--kube-cpu", f.CPU, corev1.ResourceCPU}, {"--kube-memory", f.Memory, corev1.ResourceMemory}} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Sign() <= 0 {
			return cfg, fmt.Errorf("%s %q: give a positive Kubernetes quantity, e.g. %s", q.flag, q.value, map[string]string{"--kube-cpu": "2 or 500m", "--kube-memory": "4Gi"}[q.flag])
		}
		if res.Requests == nil {
			res.Requests, res.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		res.Requests[q.name], res.Limits[q.name] = v, v
	}
	return Config{Context: f.Context, Namespace: f.Namespace, Image: f.Image, Connect: connect, Resources: res, StartTimeout: f.StartTimeout}, nil
}
