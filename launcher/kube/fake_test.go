package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakePods is podAPI in memory. kubelet, when set, plays the node for
// each created pod (it may update it through set and give it a log).
type fakePods struct {
	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	created []*corev1.Pod
	deleted map[string]*int64 // grace of each Delete
	// deletes receives the name of each pod deleted, when set.
	deletes  chan string
	logs     map[string]io.Reader
	watchers map[string][]chan *corev1.Pod
	rv       int
	allowed  map[string]bool // "verb resource/sub" → allowed
	kubelet  func(f *fakePods, pod *corev1.Pod)
}

func newFakePods() *fakePods {
	return &fakePods{pods: map[string]*corev1.Pod{}, deleted: map[string]*int64{}, logs: map[string]io.Reader{}, watchers: map[string][]chan *corev1.Pod{}}
}

var _ podAPI = (*fakePods)(nil)

// set stores pod and tells its watchers.
func (f *fakePods) set(pod *corev1.Pod) {
	f.mu.Lock()
	f.rv++
	pod = pod.DeepCopy()
	pod.ResourceVersion = fmt.Sprint(f.rv)
	f.pods[pod.Name] = pod
	ws := f.watchers[pod.Name]
	if pod.DeletionTimestamp != nil {
		delete(f.pods, pod.Name)
		delete(f.watchers, pod.Name)
	}
	f.mu.Unlock()
	for _, w := range ws {
		w <- pod.DeepCopy()
		if pod.DeletionTimestamp != nil {
			close(w)
		}
	}
}

// update changes the stored pod of name with change.
func (f *fakePods) update(name string, change func(p *corev1.Pod)) {
	f.mu.Lock()
	p := f.pods[name].DeepCopy()
	f.mu.Unlock()
	change(p)
	f.set(p)
}

func (f *fakePods) setLog(name string, r io.Reader) {
	f.mu.Lock()
	f.logs[name] = r
	f.mu.Unlock()
}

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func (f *fakePods) Create(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	if _, ok := f.pods[pod.Name]; ok {
		f.mu.Unlock()
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, pod.Name)
	}
	f.created = append(f.created, pod.DeepCopy())
	f.mu.Unlock()
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodPending
	f.set(p)
	f.mu.Lock()
	out := f.pods[pod.Name].DeepCopy()
	f.mu.Unlock()
	if f.kubelet != nil {
		go f.kubelet(f, out.DeepCopy())
	}
	return out, nil
}

func (f *fakePods) Get(_ context.Context, name string) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[name]
	if !ok {
		return nil, notFound(name)
	}
	return p.DeepCopy(), nil
}

func (f *fakePods) Watch(ctx context.Context, name, _ string) (<-chan *corev1.Pod, error) {
	f.mu.Lock()
	p, ok := f.pods[name]
	if !ok {
		f.mu.Unlock()
		return nil, notFound(name)
	}
	in := make(chan *corev1.Pod, 64)
	in <- p.DeepCopy()
	f.watchers[name] = append(f.watchers[name], in)
	f.mu.Unlock()
	out := make(chan *corev1.Pod)
	go func() {
		defer close(out)
		for {
			select {
			case p, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- p:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (f *fakePods) List(_ context.Context, selector string) ([]corev1.Pod, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []corev1.Pod
	for _, p := range f.pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, *p.DeepCopy())
		}
	}
	return out, nil
}

func (f *fakePods) Delete(_ context.Context, name string, grace *int64) error {
	f.mu.Lock()
	f.deleted[name] = grace
	p, ok := f.pods[name]
	deletes := f.deletes
	f.mu.Unlock()
	if deletes != nil {
		deletes <- name
	}
	if !ok {
		return nil
	}
	p = p.DeepCopy()
	now := metav1.Now()
	p.DeletionTimestamp = &now
	f.set(p)
	return nil
}

func (f *fakePods) DeleteAll(ctx context.Context, selector string) error {
	pods, err := f.List(ctx, selector)
	if err != nil {
		return err
	}
	zero := int64(0)
	for _, p := range pods {
		_ = f.Delete(ctx, p.Name, &zero)
	}
	return nil
}

func (f *fakePods) Logs(_ context.Context, name string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.logs[name]
	if !ok {
		return nil, apierrors.NewBadRequest("container worker is not running")
	}
	return io.NopCloser(r), nil
}

func (f *fakePods) PortForward(ctx context.Context, name string, port int32) (net.Conn, error) {
	f.mu.Lock()
	p, ok := f.pods[name]
	f.mu.Unlock()
	if !ok {
		return nil, notFound(name)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)))
}

func (f *fakePods) Allowed(_ context.Context, a authorizationv1.ResourceAttributes) (bool, string, error) {
	key := a.Verb + " " + a.Resource
	if a.Subresource != "" {
		key += "/" + a.Subresource
	}
	if f.allowed == nil {
		return false, "", &apierrors.StatusError{ErrStatus: metav1.Status{Code: http.StatusForbidden, Message: "forbidden"}}
	}
	return f.allowed[key], "no RBAC policy matched", nil
}

func (f *fakePods) deletedWith(name string) (*int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.deleted[name]
	return g, ok
}

func (f *fakePods) exists(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.pods[name]
	return ok
}

// createdPods returns every pod sent to Create.
func (f *fakePods) createdPods() []*corev1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*corev1.Pod(nil), f.created...)
}
