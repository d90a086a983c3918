package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
)

// fateWait bounds how long Fate waits for the cluster to report why a
// pod's stream ended.
const fateWait = 5 * time.Second

// podConn is the connection to one attempt's pod: the pinned gRPC client
// of its worker and a watch of the pod, which says how it ended.
type podConn struct {
	l     *Launcher
	name  string
	label string
	log   io.Writer
	rc    *ipc.RemoteClient

	mu  sync.Mutex
	pod *corev1.Pod
	// changed is closed and replaced whenever pod changes.
	changed chan struct{}
	// gone is closed once the pod ended or was deleted.
	gone     chan struct{}
	goneOnce sync.Once
	stopOnce sync.Once
	stopW    context.CancelFunc
}

var (
	_ command.Conn      = (*podConn)(nil)
	_ command.Exiter    = (*podConn)(nil)
	_ command.Fater     = (*podConn)(nil)
	_ command.LossNamer = (*podConn)(nil)
)

func (c *podConn) setPod(p *corev1.Pod) {
	c.mu.Lock()
	c.pod = p
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if ended(p) {
		c.goneOnce.Do(func() { close(c.gone) })
	}
}

func (c *podConn) current() (*corev1.Pod, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.pod, c.changed
}

// watch follows the pod until ctx is done or it is deleted. When a watch
// ends (the apiserver closes watches after a while, or the version it
// started from is too old) it reads the pod afresh and watches again from
// there.
func (c *podConn) watch(ctx context.Context, rv string) {
	for ctx.Err() == nil {
		if ch, err := c.l.api.Watch(ctx, c.name, rv); err == nil {
			for p := range ch {
				c.setPod(p)
				if p.DeletionTimestamp != nil {
					return
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		p, err := c.l.api.Get(ctx, c.name)
		switch {
		case err == nil:
			rv = p.ResourceVersion
			c.setPod(p)
			continue
		case isNotFound(err):
			c.markDeleted()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// markDeleted records that the pod is gone.
func (c *podConn) markDeleted() {
	p, _ := c.current()
	cp := &corev1.Pod{}
	if p != nil {
		cp = p.DeepCopy()
	}
	if cp.DeletionTimestamp == nil {
		now := metaNow()
		cp.DeletionTimestamp = &now
	}
	c.setPod(cp)
}

// start waits for the pod to run with an IP (telling the user why it
// does not yet), reads the worker's greeting from its log and dials it.
func (c *podConn) start(ctx context.Context, rv string) (*podConn, error) {
	// The watch and the log outlive the start: they end with the pod.
	wctx, stop := context.WithCancel(context.Background())
	c.stopW = stop
	go c.watch(wctx, rv)

	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, c.l.cfg.StartTimeout)
	defer cancel()
	shown := ""
	var running *corev1.Pod
	for running == nil {
		pod, changed := c.current()
		switch {
		case ended(pod):
			why := fate(pod)
			if why == "" {
				why = fmt.Sprintf("pod %s ended before its worker started", c.name)
			}
			return nil, errors.New(why)
		case pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "":
			running = pod
			continue
		}
		why, _ := pending(pod)
		if why != shown {
			shown = why
			c.l.note(c.label, fmt.Sprintf("starting: pod %s: %s", c.name, why))
			fmt.Fprintf(orDiscard(c.log), "ink: pod %s: %s\n", c.name, why)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if outer.Err() != nil {
				return nil, fmt.Errorf("pod %s: cancelled while it was starting (%s): %w", c.name, shown, outer.Err())
			}
			return nil, fmt.Errorf("%w (%s): pod %s: %s", errStartTimeout, c.l.cfg.StartTimeout, c.name, shown)
		}
	}
	logs, err := c.l.api.Logs(wctx, c.name)
	if err != nil {
		return nil, fmt.Errorf("read the log of pod %s: %w", c.name, err)
	}
	line, rest, err := firstLogLine(ctx, logs)
	if err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("pod %s: %w", c.name, err)
	}
	go copyLog(c.log, rest)
	g, err := ipc.ParseListenGreeting(line)
	if err != nil {
		return nil, fmt.Errorf("pod %s (image %s): %w", c.name, c.l.cfg.Image, err)
	}
	port, err := ipc.PortOf(g.Addr)
	if err != nil {
		return nil, fmt.Errorf("pod %s announced %q, not an address: %w", c.name, g.Addr, err)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		if c.l.connect == ConnectPodIP {
			addr := net.JoinHostPort(running.Status.PodIP, strconv.Itoa(port))
			if c.l.cfg.dialPodIP != nil {
				return c.l.cfg.dialPodIP(ctx, addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
		return c.l.api.PortForward(ctx, c.name, int32(port))
	}
	deadline, _ := ctx.Deadline()
	c.rc, err = ipc.DialRemote(ctx, ipc.DialConfig{Dial: dial, Identity: c.l.identity, Worker: g.Cert, StartTimeout: time.Until(deadline)})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", c.name, err)
	}
	return c, nil
}

// firstLogLine reads the first line of a pod's log, bounded; rest reads
// what follows.
func firstLogLine(ctx context.Context, logs io.ReadCloser) (string, io.ReadCloser, error) {
	br := bufio.NewReaderSize(logs, 4096)
	type got struct {
		line string
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		line, err := br.ReadSlice('\n')
		ch <- got{string(line), err}
	}()
	select {
	case g := <-ch:
		if g.err != nil {
			return "", nil, fmt.Errorf("its worker printed no greeting (%v): the image must run ink's `worker --remote --listen`", g.err)
		}
		return strings.TrimSpace(g.line), readCloser{br, logs}, nil
	case <-ctx.Done():
		_ = logs.Close()
		return "", nil, fmt.Errorf("its worker printed no greeting: %w", ctx.Err())
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Pid is 0: no local process stands for a pod.
func (c *podConn) Pid() int { return 0 }

// Attempt opens the attempt's stream.
func (c *podConn) Attempt(ctx context.Context) (command.Stream, error) {
	return c.rc.Attempt(ctx)
}

// Beats opens the worker's heartbeat stream.
func (c *podConn) Beats(ctx context.Context, interval time.Duration) (<-chan ipc.Heartbeat, error) {
	return c.rc.Beats(ctx, interval)
}

// Kill closes the connection and deletes the pod with grace 0, without
// waiting for the cluster (a lost node's kubelet may never answer).
func (c *podConn) Kill() {
	c.rc.Kill()
	go c.delete()
	c.goneOnce.Do(func() { close(c.gone) })
}

// Shutdown closes the connection, gives the worker shutdownWait to end by
// itself, and deletes the pod.
func (c *podConn) Shutdown() {
	c.rc.Shutdown()
	t := time.NewTimer(shutdownWait)
	defer t.Stop()
	select {
	case <-c.gone:
	case <-t.C:
	}
	c.delete()
	c.goneOnce.Do(func() { close(c.gone) })
}

// delete deletes the pod with grace 0, once, and stops the watch.
func (c *podConn) delete() {
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		zero := int64(0)
		if err := c.l.api.Delete(ctx, c.name, &zero); err != nil {
			c.l.cfg.Logger.Warn("pod not deleted", "pod", c.name, "err", err)
		}
		if c.stopW != nil {
			c.stopW()
		}
	})
}

// Done is closed once the pod ended, or the connection was ended.
func (c *podConn) Done() <-chan struct{} { return c.gone }

// ProcessState is nil: no local process stands for a pod.
func (c *podConn) ProcessState() *os.ProcessState { return nil }

// Exit waits up to d for the pod to end and says how its worker exited.
func (c *podConn) Exit(d time.Duration) (ipc.ExitState, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.gone:
	case <-t.C:
		return ipc.ExitState{}, false
	}
	pod, _ := c.current()
	if pod != nil {
		for _, cs := range pod.Status.ContainerStatuses {
			if tr := cs.State.Terminated; tr != nil && cs.Name == workerContainer {
				return ipc.ExitState{Code: int(tr.ExitCode)}, true
			}
		}
	}
	return ipc.ExitState{Signal: "SIGKILL"}, true
}

// Fate waits (bounded) for the cluster to say how the pod ended, once its
// stream broke, and names it: OOMKilled, Evicted, DeadlineExceeded, the
// worker's exit status, a deletion.
func (c *podConn) Fate() string {
	t := time.NewTimer(fateWait)
	defer t.Stop()
	for {
		pod, changed := c.current()
		if why := fate(pod); why != "" {
			return why
		}
		select {
		case <-changed:
		case <-c.gone:
			pod, _ := c.current()
			return fate(pod)
		case <-t.C:
			return ""
		}
	}
}

// NameLoss names a lost heartbeat as the loss of the pod's node.
func (c *podConn) NameLoss(reason string) string {
	pod, _ := c.current()
	where := "pod " + c.name
	if pod != nil && pod.Spec.NodeName != "" {
		where += " on node " + pod.Spec.NodeName
	}
	reason = strings.TrimPrefix(reason, ipc.WorkerLost+": ")
	return fmt.Sprintf("node lost: %s (%s)", reason, where)
}
