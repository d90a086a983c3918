package kubetest

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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"
)

// DialPod opens one TCP connection to port of a pod through the apiserver's
// pods/portforward (SPDY), as the user of cfg. Closing the returned
// connection ends the port-forward session.
func DialPod(ctx context.Context, cfg *rest.Config, ns, pod string, port int) (net.Conn, error) {
	core, err := CoreClient(cfg)
	if err != nil {
		return nil, err
	}
	u := core.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("portforward").URL()
	tr, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	d := spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, u)
	conn, proto, err := d.Dial("portforward.k8s.io")
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", ns, pod, err)
	}
	if proto != "portforward.k8s.io" {
		conn.Close()
		return nil, fmt.Errorf("port-forward to pod %s/%s: protocol %q", ns, pod, proto)
	}
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward error stream: %w", err)
	}
	errStream.Close() // the client writes nothing on it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port-forward data stream: %w", err)
	}
	pc := &podConn{conn: conn, data: data, errc: make(chan error, 1), ns: ns, pod: pod, port: port}
	go func() {
		b, _ := io.ReadAll(errStream)
		if len(b) > 0 {
			pc.errc <- fmt.Errorf("port-forward to pod %s/%s port %d: %s", ns, pod, port, b)
		}
		close(pc.errc)
	}()
	return pc, nil
}

// podConn is a port-forwarded stream seen as a net.Conn.
type podConn struct {
	conn     httpstream.Connection
	data     httpstream.Stream
	errc     chan error
	ns, pod  string
	port     int
	closeOne sync.Once
}

func (c *podConn) Read(b []byte) (int, error) {
	n, err := c.data.Read(b)
	if err == io.EOF {
		if e, ok := <-c.errc; ok && e != nil {
			return n, e
		}
	}
	return n, err
}

func (c *podConn) Write(b []byte) (int, error) { return c.data.Write(b) }

func (c *podConn) Close() error {
	c.closeOne.Do(func() { c.data.Close(); c.conn.Close() })
	return nil
}

func (c *podConn) LocalAddr() net.Addr { return fwdAddr("kubetest") }
func (c *podConn) RemoteAddr() net.Addr {
	return fwdAddr(fmt.Sprintf("%s/%s:%d", c.ns, c.pod, c.port))
}

// errNoDeadline: a port-forwarded stream has no deadlines.
var errNoDeadline = errors.New("kubetest: a port-forwarded connection has no deadlines")

func (c *podConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *podConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *podConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

type fwdAddr string

func (a fwdAddr) Network() string { return "portforward" }
func (a fwdAddr) String() string  { return string(a) }
