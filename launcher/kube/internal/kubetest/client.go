package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
	params = runtime.NewParameterCodec(scheme)
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
}

// CoreClient is a REST client of the core/v1 API for cfg.
func CoreClient(cfg *rest.Config) (*rest.RESTClient, error) {
	return restClient(cfg, corev1.SchemeGroupVersion)
}

func restClient(cfg *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = "kubetest"
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client %s: %w", gv, err)
	}
	return rc, nil
}

// CreatePod creates pod as the administrator.
func (c *ControlPlane) CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := c.core.Post().Namespace(pod.Namespace).Resource("pods").Body(pod).Do(ctx).Into(out)
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}

// Pod gets a pod as the administrator.
func (c *ControlPlane) Pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := c.core.Get().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Pods lists the pods of ns as the administrator.
func (c *ControlPlane) Pods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	out := &corev1.PodList{}
	if err := c.core.Get().Namespace(ns).Resource("pods").Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Nodes lists the nodes.
func (c *ControlPlane) Nodes(ctx context.Context) ([]corev1.Node, error) {
	out := &corev1.NodeList{}
	if err := c.core.Get().Resource("nodes").Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// ErrPodGone is WaitPod's error when the pod is deleted before cond holds.
var ErrPodGone = errors.New("pod deleted")

// WaitPod watches the pod until cond holds for it and returns it; it
// returns ErrPodGone if the pod is deleted first (or never existed), and
// ctx's error when ctx ends first.
func (c *ControlPlane) WaitPod(ctx context.Context, ns, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	for {
		list := &corev1.PodList{}
		sel := fields.OneTermEqualSelector("metadata.name", name).String()
		if err := c.core.Get().Namespace(ns).Resource("pods").VersionedParams(&metav1.ListOptions{FieldSelector: sel}, params).Do(ctx).Into(list); err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			return nil, fmt.Errorf("pod %s/%s: %w", ns, name, ErrPodGone)
		}
		if p := &list.Items[0]; cond(p) {
			return p, nil
		}
		w, err := c.core.Get().Namespace(ns).Resource("pods").
			VersionedParams(&metav1.ListOptions{FieldSelector: sel, Watch: true, ResourceVersion: list.ResourceVersion}, params).Watch(ctx)
		if err != nil {
			return nil, err
		}
		p, err := waitEvents(w, cond)
		w.Stop()
		if err != nil || p != nil {
			if errors.Is(err, ErrPodGone) {
				err = fmt.Errorf("pod %s/%s: %w", ns, name, err)
			}
			return p, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The watch ended (a timeout of the apiserver): list again.
	}
}

func waitEvents(w watch.Interface, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Deleted:
			return nil, ErrPodGone
		case watch.Error:
			return nil, apierrors.FromObject(ev.Object)
		}
		if p, ok := ev.Object.(*corev1.Pod); ok && cond(p) {
			return p, nil
		}
	}
	return nil, nil
}

// Fault is a failure inknode reports for a pod as a kubelet would.
type Fault string

// The faults inknode knows.
const (
	// FaultOOMKill kills the container and reports it OOMKilled (exit 137).
	FaultOOMKill Fault = "oom-kill"
	// FaultEvict kills the container and reports the pod Failed, Evicted.
	FaultEvict Fault = "evict"
)

// faultAnnotation is the annotation inknode acts on.
const faultAnnotation = "inknode.ink.dev/fault"

// InjectFault asks the pod's node agent for f, by annotating the pod as the
// administrator.
func (c *ControlPlane) InjectFault(ctx context.Context, ns, name string, f Fault) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, faultAnnotation, f)
	err := c.core.Patch(types.MergePatchType).Namespace(ns).Resource("pods").Name(name).Body([]byte(patch)).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("fault %s on pod %s/%s: %w", f, ns, name, err)
	}
	return nil
}

// Logs streams a container's log through the apiserver (pods/log) as the
// user of cfg; the caller closes it.
func Logs(ctx context.Context, cfg *rest.Config, ns, pod, container string, follow bool) (io.ReadCloser, error) {
	core, err := CoreClient(cfg)
	if err != nil {
		return nil, err
	}
	return core.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").
		VersionedParams(&corev1.PodLogOptions{Container: container, Follow: follow}, params).Stream(ctx)
}
