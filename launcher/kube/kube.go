// Package kube is the launcher that runs each remote child attempt's
// worker in a bare Pod of the user's Kubernetes cluster (--launcher
// kube). It places the worker and connects to it; everything a worker
// that shares no disk needs from its host (the transcript's lease, the
// transcript through a fence, the worktree out and back) is package
// launcher/command's, which this package hands the connection to.
//
// One Pod per attempt: restartPolicy Never (resumes are explicit, never
// the engine's retries), labelled by run, session, child and attempt,
// activeDeadlineSeconds as a backstop, no service-account token, no
// service links, non-root, a read-only root filesystem. The worker
// listens on TCP; the supervisor dials it (the pod's IP, or a
// port-forward through the apiserver) with TLS pinned both ways: its own
// certificate's hash in the pod's environment, the worker's read from its
// first log line through pods/log. No key, token or secret is in the Pod
// or in a Secret: keys travel in the Run message over that stream.
//
// The apiserver is reached through podAPI, a small interface over
// rest.RESTClient with the core/v1 types only: no typed clientset, no
// discovery.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/launcher/command"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// ConnectMode is how the supervisor reaches a pod's worker.
type ConnectMode string

// The connect modes.
const (
	// ConnectAuto dials the pod's IP when this process runs in the
	// cluster, else port-forwards.
	ConnectAuto ConnectMode = "auto"
	// ConnectPodIP dials the pod's IP (the supervisor is in the cluster or
	// on a network that routes to pods).
	ConnectPodIP ConnectMode = "pod-ip"
	// ConnectPortForward opens pods/portforward through the apiserver.
	ConnectPortForward ConnectMode = "port-forward"
)

// ParseConnectMode checks a --kube-connect value.
func ParseConnectMode(v string) (ConnectMode, error) {
	switch m := ConnectMode(v); m {
	case "":
		return ConnectAuto, nil
	case ConnectAuto, ConnectPodIP, ConnectPortForward:
		return m, nil
	}
	return "", fmt.Errorf("--kube-connect %q: give auto, pod-ip or port-forward", v)
}

// Defaults.
const (
	// DefaultPort is the port the worker listens on in its pod.
	DefaultPort = 7777
	// DefaultStartTimeout bounds scheduling, image pull and the worker's
	// greeting.
	DefaultStartTimeout = 5 * time.Minute
	// DefaultMaxLifetime is the pod's activeDeadlineSeconds when the task
	// has no timeout.
	DefaultMaxLifetime = 24 * time.Hour
	// ImageRepository is where ink's images are published.
	ImageRepository = "ghcr.io/inkdev/ink"
	// shutdownWait bounds how long a finished worker's pod is given to end
	// by itself before it is deleted.
	shutdownWait = 5 * time.Second
)

// DefaultImage is the image of this ink's version.
func DefaultImage() string {
	return ImageRepository + ":" + imageTag(version.Ink)
}

// imageTag is the tag of version ("dev" for a build with no version).
func imageTag(version string) string {
	if version == "" || strings.HasPrefix(version, "(") {
		return "dev"
	}
	return strings.ReplaceAll(version, "+", "-")
}

// Config configures a Launcher.
type Config struct {
	// Kubeconfig is the kubeconfig file ("" : $KUBECONFIG or
	// ~/.kube/config, or in-cluster); Context is its context to use (""
	// : its current one).
	Kubeconfig string
	Context    string
	// Namespace is where the pods go ("" : the context's, else
	// "default").
	Namespace string
	// Image is the worker image ("" : DefaultImage). It must run this
	// ink's version.
	Image string
	// Connect is how the supervisor reaches a worker ("" : auto).
	Connect ConnectMode
	// Resources are the worker container's requests and limits.
	Resources corev1.ResourceRequirements
	// StartTimeout bounds scheduling, image pull and the greeting
	// (0 : DefaultStartTimeout).
	StartTimeout time.Duration
	// TaskTimeout and Grace set the pod's activeDeadlineSeconds (timeout
	// + grace + 30 s; DefaultMaxLifetime without a timeout) and its
	// termination grace.
	TaskTimeout time.Duration
	Grace       time.Duration
	// Environ is the host environment; the pod gets none of it.
	Environ []string
	Logger  *slog.Logger
	// Includes ships .worktreeinclude files; Warn tells the user about
	// what was left out and about pods that do not start yet.
	Includes bool
	Warn     func(agent, text string)
	// Workspace replaces the worktree shipping (tests).
	Workspace command.Workspace

	// api replaces the apiserver (tests).
	api podAPI
	// dialPodIP replaces the TCP dial of a pod's IP (tests).
	dialPodIP func(ctx context.Context, addr string) (net.Conn, error)
}

// Launcher runs each remote attempt's worker in a Pod and connects to it.
// It is safe for concurrent use; Close deletes the pods it left.
type Launcher struct {
	*command.Launcher
	cfg       Config
	api       podAPI
	namespace string
	connect   ConnectMode
	identity  *ipc.Identity
	run       string
	self      supervisor
}

var (
	_ ipc.Launcher      = (*Launcher)(nil)
	_ command.Transport = (*Launcher)(nil)
)

// Client is a connection to the apiserver of a kubeconfig context.
type Client struct {
	api       podAPI
	namespace string
	context   string
	server    string
	inCluster bool
}

// Connect reads the kubeconfig (or the in-cluster configuration) and
// returns a client of its namespace. Nothing is asked of the apiserver
// yet.
func Connect(kubeconfig, kubeContext, namespace string) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	inCluster := false
	if err != nil {
		if kubeContext != "" || kubeconfig != "" {
			return nil, fmt.Errorf("kubernetes: context %q: %w", kubeContext, err)
		}
		ic, icErr := rest.InClusterConfig()
		if icErr != nil {
			return nil, fmt.Errorf("kubernetes: no kubeconfig (%v) and not in a cluster: set KUBECONFIG or --kube-context", err)
		}
		cfg, inCluster = ic, true
	}
	if namespace == "" {
		if ns, _, err := cc.Namespace(); err == nil && ns != "" {
			namespace = ns
		} else {
			namespace = "default"
		}
	}
	if kubeContext == "" {
		if raw, err := cc.RawConfig(); err == nil {
			kubeContext = raw.CurrentContext
		}
	}
	api, err := newRESTPods(cfg, namespace)
	if err != nil {
		return nil, err
	}
	if !inCluster {
		_, inClusterErr := rest.InClusterConfig()
		inCluster = inClusterErr == nil
	}
	return &Client{api: api, namespace: namespace, context: kubeContext, server: cfg.Host, inCluster: inCluster}, nil
}

// Namespace is the client's namespace.
func (c *Client) Namespace() string { return c.namespace }

// Context is the kubeconfig context in use ("" in a cluster).
func (c *Client) Context() string { return c.context }

// Server is the apiserver's address.
func (c *Client) Server() string { return c.server }

// New returns the Launcher of cfg over c, and deletes the pods that
// supervisors of this host left when they died (their streams are gone:
// those pods stop on their own; this makes them go).
func New(ctx context.Context, c *Client, cfg Config) (*Launcher, error) {
	if cfg.api == nil {
		cfg.api = c.api
		cfg.Namespace = c.namespace
	}
	connect := cfg.Connect
	if connect == "" || connect == ConnectAuto {
		connect = ConnectPortForward
		if c != nil && c.inCluster {
			connect = ConnectPodIP
		}
	}
	return newLauncher(ctx, cfg, connect)
}

func newLauncher(ctx context.Context, cfg Config, connect ConnectMode) (*Launcher, error) {
	if cfg.Image == "" {
		cfg.Image = DefaultImage()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	id, err := ipc.NewIdentity()
	if err != nil {
		return nil, err
	}
	l := &Launcher{cfg: cfg, api: cfg.api, namespace: cfg.Namespace, connect: connect, identity: id,
		run: strings.ToLower(session.NewID()), self: thisSupervisor()}
	l.Launcher = command.New(command.Config{Environ: cfg.Environ, Logger: cfg.Logger, Workspace: cfg.Workspace,
		Includes: cfg.Includes, Warn: cfg.Warn, Transport: l})
	if _, err := l.prune(ctx, processAlive); err != nil {
		cfg.Logger.Warn("pods of dead supervisors not pruned", "err", err)
	}
	return l, nil
}

// Run is the id that labels every pod of this launcher (ink.dev/run).
func (l *Launcher) Run() string { return l.run }

// Close deletes every pod of this launcher still there, at once.
func (l *Launcher) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.api.DeleteAll(ctx, labelRun+"="+l.run); err != nil {
		l.cfg.Logger.Warn("the run's pods not deleted", "run", l.run, "err", err)
	}
}

// deadline is the pod's activeDeadlineSeconds.
func (l *Launcher) deadline() time.Duration {
	if l.cfg.TaskTimeout > 0 {
		return l.cfg.TaskTimeout + l.cfg.Grace + 30*time.Second
	}
	return DefaultMaxLifetime
}

// Dial creates the attempt's pod, waits until it runs, reads its
// worker's greeting from its log, dials it pinned and returns the
// connection. On error the pod is deleted.
func (l *Launcher) Dial(ctx context.Context, d command.Dial) (command.Conn, error) {
	spec := d.Spec
	ps := podSpec{
		name: podName(spec), namespace: l.namespace, image: l.cfg.Image, port: DefaultPort,
		labels: map[string]string{
			labelApp: "ink", labelRun: l.run, labelSession: labelValue(spec.SessionID),
			labelChild: labelValue(spec.Label), labelAttempt: labelValue(spec.AttemptID),
			labelSupervisor: l.self.label(),
		},
		annotation: l.self.annotation(), supervisor: l.identity.Hash(),
		resources: l.cfg.Resources, deadline: l.deadline(), grace: l.cfg.Grace,
	}
	if spec.Remote != nil && spec.Remote.Workspace != nil {
		ps.workspace = spec.Remote.Workspace.Path
	}
	created, err := l.api.Create(ctx, ps.build())
	if err != nil {
		return nil, fmt.Errorf("create pod %s in namespace %s: %w", ps.name, l.namespace, err)
	}
	pc := &podConn{l: l, name: ps.name, log: d.Log, label: spec.Label, gone: make(chan struct{})}
	pc.setPod(created)
	c, err := pc.start(ctx, created.ResourceVersion)
	if err != nil {
		pc.delete()
		return nil, err
	}
	return c, nil
}

// note tells the user about an attempt's pod.
func (l *Launcher) note(label, text string) {
	if l.cfg.Warn != nil {
		l.cfg.Warn(label, text)
	}
}

// errStartTimeout is how a pod that did not start in time fails.
var errStartTimeout = errors.New("the pod did not start within --kube-start-timeout")

// copyLog copies the rest of a pod's log to the attempt's log.
func copyLog(dst io.Writer, src io.ReadCloser) {
	defer src.Close()
	if dst == nil {
		dst = io.Discard
	}
	_, _ = io.Copy(dst, src)
}
