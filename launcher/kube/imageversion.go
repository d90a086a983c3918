package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inkdev/ink/session"
)

// imageVersion runs the image's `ink version` in a short-lived pod of the
// launcher's own shape (non-root, read-only root, no token) and returns the
// version it printed. The pod is deleted before it returns, whatever
// happened. An image that cannot be pulled, or a pod that fails or does
// not end within limit, is an error naming why.
func imageVersion(ctx context.Context, api podAPI, namespace, image string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	name := "ink-check-" + strings.ToLower(session.NewID())
	if len(name) > 63 {
		name = name[:63]
	}
	pod := podSpec{name: name, namespace: namespace, image: image, labels: map[string]string{labelApp: "ink"}, deadline: limit}.build()
	c := &pod.Spec.Containers[0]
	c.Args, c.Ports = []string{"version"}, nil
	c.Env = []corev1.EnvVar{{Name: "HOME", Value: podHome}, {Name: "TMPDIR", Value: podTmp}}
	created, err := api.Create(ctx, pod)
	if err != nil {
		return "", fmt.Errorf("create a pod of the image: %w", err)
	}
	defer func() {
		zero := int64(0)
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		_ = api.Delete(dctx, name, &zero)
	}()
	events, err := api.Watch(ctx, name, created.ResourceVersion)
	if err != nil {
		return "", fmt.Errorf("watch the image's pod: %w", err)
	}
	var last *corev1.Pod
	for {
		var p *corev1.Pod
		select {
		case <-ctx.Done():
			why := ""
			if last != nil {
				why = " (still " + string(last.Status.Phase)
				for _, c := range last.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
						why += ": " + c.Reason + " " + c.Message
					}
				}
				why += ")"
			}
			return "", fmt.Errorf("the image's pod did not run `ink version` within %s%s", limit, why)
		case p = <-events:
			if p == nil {
				return "", errors.New("the watch of the image's pod ended before it did")
			}
			last = p
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName") {
				return "", fmt.Errorf("%s: %s", w.Reason, w.Message)
			}
		}
		switch p.Status.Phase {
		case corev1.PodFailed:
			return "", fmt.Errorf("`ink version` failed in the image's pod (%s %s)", p.Status.Reason, p.Status.Message)
		case corev1.PodSucceeded:
			logs, err := api.Logs(ctx, name)
			if err != nil {
				return "", fmt.Errorf("read the image's `ink version`: %w", err)
			}
			defer logs.Close()
			out, err := io.ReadAll(io.LimitReader(logs, 4096))
			if err != nil {
				return "", fmt.Errorf("read the image's `ink version`: %w", err)
			}
			f := strings.Fields(string(out))
			if len(f) < 2 || f[0] != "ink" {
				return "", fmt.Errorf("the image's `ink version` printed %q, not an ink version", strings.TrimSpace(string(out)))
			}
			return f[1], nil
		}
	}
}
