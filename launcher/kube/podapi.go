package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// podAPI is all the launcher asks of the apiserver, in one namespace:
// the verbs deploy/kube/rbac.yaml grants. restPods implements it over
// rest.RESTClient with the core/v1 and authorization/v1 types only (no
// typed clientset, no discovery: ink pays for no more of client-go than
// this); tests fake it in memory. Its methods are safe for concurrent use.
type podAPI interface {
	// Create creates pod.
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Get returns the pod named name.
	Get(ctx context.Context, name string) (*corev1.Pod, error)
	// Watch delivers the pod named name each time it changes, from its
	// state at resourceVersion on; the channel is closed when the watch
	// ends (ctx done, the apiserver closed it). A deleted pod arrives with
	// its DeletionTimestamp set, as the last value.
	Watch(ctx context.Context, name, resourceVersion string) (<-chan *corev1.Pod, error)
	// List returns the pods that match the label selector.
	List(ctx context.Context, selector string) ([]corev1.Pod, error)
	// Delete deletes the pod named name, with grace seconds (nil: the
	// pod's own). A pod already gone is no error.
	Delete(ctx context.Context, name string, grace *int64) error
	// DeleteAll deletes every pod that matches the label selector.
	DeleteAll(ctx context.Context, selector string) error
	// Logs follows the pod's log (its worker container's output).
	Logs(ctx context.Context, name string) (io.ReadCloser, error)
	// PortForward opens a stream to port of the pod through the
	// apiserver (pods/portforward), as a net.Conn.
	PortForward(ctx context.Context, name string, port int32) (net.Conn, error)
	// Allowed asks the apiserver whether the caller may do attrs
	// (SelfSubjectAccessReview), and why not.
	Allowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error)
}

// scheme knows the types the launcher sends and reads: core/v1 (pods,
// events), authorization/v1 and meta/v1's options, nothing else.
var scheme, codecs, params = func() (*runtime.Scheme, serializer.CodecFactory, runtime.ParameterCodec) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := authorizationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s, serializer.NewCodecFactory(s), runtime.NewParameterCodec(s)
}()

// restPods is podAPI over the apiserver of cfg.
type restPods struct {
	cfg       *rest.Config
	core      *rest.RESTClient
	authz     *rest.RESTClient
	namespace string
}

// newRESTPods returns the podAPI of namespace through cfg.
func newRESTPods(cfg *rest.Config, namespace string) (*restPods, error) {
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "ink"
		}
		return rest.RESTClientFor(c)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	authz, err := client(authorizationv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &restPods{cfg: cfg, core: core, authz: authz, namespace: namespace}, nil
}

func (r *restPods) pods() *rest.Request {
	return r.core.Get().Namespace(r.namespace).Resource("pods")
}

func (r *restPods) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := r.core.Post().Namespace(r.namespace).Resource("pods").Body(pod).Do(ctx).Into(out)
	return out, err
}

func (r *restPods) Get(ctx context.Context, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := r.pods().Name(name).Do(ctx).Into(out)
	return out, err
}

func (r *restPods) Watch(ctx context.Context, name, resourceVersion string) (<-chan *corev1.Pod, error) {
	opts := &metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: resourceVersion, Watch: true}
	w, err := r.pods().VersionedParams(opts, params).Watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan *corev1.Pod)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue // a watch error or bookmark: the caller sees the channel close or the next change
				}
				if ev.Type == watch.Deleted && pod.DeletionTimestamp == nil {
					now := metav1.Now()
					pod.DeletionTimestamp = &now
				}
				select {
				case out <- pod:
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

func (r *restPods) List(ctx context.Context, selector string) ([]corev1.Pod, error) {
	out := &corev1.PodList{}
	err := r.pods().VersionedParams(&metav1.ListOptions{LabelSelector: selector}, params).Do(ctx).Into(out)
	return out.Items, err
}

func (r *restPods) Delete(ctx context.Context, name string, grace *int64) error {
	err := r.core.Delete().Namespace(r.namespace).Resource("pods").Name(name).Body(&metav1.DeleteOptions{GracePeriodSeconds: grace}).Do(ctx).Error()
	if isNotFound(err) {
		return nil
	}
	return err
}

func (r *restPods) DeleteAll(ctx context.Context, selector string) error {
	zero := int64(0)
	return r.core.Delete().Namespace(r.namespace).Resource("pods").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, params).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &zero}).Do(ctx).Error()
}

func (r *restPods) Logs(ctx context.Context, name string) (io.ReadCloser, error) {
	return r.pods().Name(name).SubResource("log").VersionedParams(&corev1.PodLogOptions{Container: workerContainer, Follow: true}, params).Stream(ctx)
}

func (r *restPods) Allowed(ctx context.Context, attrs authorizationv1.ResourceAttributes) (bool, string, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	out := &authorizationv1.SelfSubjectAccessReview{}
	if err := r.authz.Post().Resource("selfsubjectaccessreviews").Body(review).Do(ctx).Into(out); err != nil {
		return false, "", err
	}
	return out.Status.Allowed, out.Status.Reason, nil
}

// PortForward dials pods/portforward over WebSocket, falling back to SPDY
// where the apiserver or a proxy cannot upgrade to it, and opens the
// error and data streams of port: the data stream is the connection.
func (r *restPods) PortForward(ctx context.Context, name string, port int32) (net.Conn, error) {
	u := r.core.Post().Namespace(r.namespace).Resource("pods").Name(name).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(r.cfg)
	if err != nil {
		return nil, fmt.Errorf("port-forward: %w", err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, r.cfg); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	type dialed struct {
		c   httpstream.Connection
		err error
	}
	got := make(chan dialed, 1)
	go func() {
		c, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		got <- dialed{c, err}
	}()
	var conn httpstream.Connection
	select {
	case d := <-got:
		if d.err != nil {
			return nil, fmt.Errorf("port-forward to pod %s: %w", name, d.err)
		}
		conn = d.c
	case <-ctx.Done():
		go func() {
			if d := <-got; d.c != nil {
				_ = d.c.Close()
			}
		}()
		return nil, fmt.Errorf("port-forward to pod %s: %w", name, ctx.Err())
	}
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s: error stream: %w", name, err)
	}
	_ = errStream.Close() // the host writes nothing on it
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s: data stream: %w", name, err)
	}
	pc := &forwardConn{Stream: data, conn: conn, pod: name, port: port}
	go func() {
		// The kubelet reports a failed forward (nothing listens on the
		// port) on the error stream: it ends the connection.
		msg, _ := io.ReadAll(errStream)
		if len(msg) > 0 {
			pc.fail(fmt.Errorf("port-forward to pod %s: %s", name, msg))
		}
	}()
	return pc, nil
}

// forwardConn is a port-forward's data stream as a net.Conn. Deadlines
// are not supported: gRPC's keepalive bounds every wait instead.
type forwardConn struct {
	httpstream.Stream
	conn httpstream.Connection
	pod  string
	port int32
	once sync.Once
	mu   sync.Mutex
	err  error
}

func (c *forwardConn) fail(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	_ = c.Close()
}

func (c *forwardConn) Read(p []byte) (int, error) {
	n, err := c.Stream.Read(p)
	if err != nil {
		c.mu.Lock()
		if c.err != nil {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close closes the stream and the connection under it, once.
func (c *forwardConn) Close() error {
	c.once.Do(func() {
		_ = c.Stream.Reset()
		_ = c.conn.Close()
	})
	return nil
}

func (c *forwardConn) LocalAddr() net.Addr { return forwardAddr("ink") }
func (c *forwardConn) RemoteAddr() net.Addr {
	return forwardAddr(fmt.Sprintf("pod/%s:%d", c.pod, c.port))
}
func (c *forwardConn) SetDeadline(time.Time) error      { return nil }
func (c *forwardConn) SetReadDeadline(time.Time) error  { return nil }
func (c *forwardConn) SetWriteDeadline(time.Time) error { return nil }

// forwardAddr names an end of a port-forward.
type forwardAddr string

func (forwardAddr) Network() string  { return "portforward" }
func (a forwardAddr) String() string { return string(a) }

// isNotFound reports a 404 from the apiserver.
func isNotFound(err error) bool {
	var se interface{ Status() metav1.Status }
	return err != nil && errors.As(err, &se) && se.Status().Code == http.StatusNotFound
}
