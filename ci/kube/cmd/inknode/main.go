// Command inknode is a test-only node agent that plays the kubelet for ink's
// Kubernetes e2e tests against a real kube-apiserver on one machine.
//
// One inknode process is one node. It registers a Ready Node whose kubelet
// endpoint is its own HTTPS port on 127.0.0.1, renews the node's Lease, binds
// Pending pods round robin over the live nodes (no kube-scheduler runs), and
// runs each pod bound to it as a local process: the binary given by --exec
// (the image is ignored) in new mount, PID and UTS namespaces, its emptyDir
// volumes bind-mounted at their mount paths, its environment resolved
// (including the downward API) and a pod IP of its own, 127.0.<index>.<n>.
// It reports the pod's phase and its container's state through the real
// apiserver, enforces activeDeadlineSeconds, finishes graceful deletions as
// a kubelet does (SIGTERM, the grace, SIGKILL, then a delete with grace 0),
// and serves /containerLogs and /portForward so that pods/log and
// pods/portforward work through the apiserver.
//
// Tests inject faults through the pod annotation inknode.ink.dev/fault
// (oom-kill, evict) and images named ink.invalid/pull-error…; they freeze a
// node by SIGSTOP of the agent and of the pod processes listed in the file
// --pids-file names.
//
// inknode is no kubelet: no images, no cgroups or resource limits, no
// probes, no init containers, no volumes but emptyDir, and it runs pods as
// its own user. See docs/kube-e2e.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == podInitCommand {
		os.Exit(podInit(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "inknode:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of a user allowed to manage nodes, leases and pods (required)")
	flag.StringVar(&cfg.name, "name", "", "the Node's name (required)")
	flag.IntVar(&cfg.index, "index", 0, "this node's number, 1..254: its pods get the IPs 127.0.<index>.<n> (required)")
	flag.StringVar(&cfg.exec, "exec", "", "the binary every container runs, whatever its image (required)")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "directory for the pods' volumes and logs (required)")
	flag.StringVar(&cfg.pidsFile, "pids-file", "", "file listing the host pid of every running pod, one \"pid namespace/name uid\" a line (default <state-dir>/pids)")
	cpu := flag.String("cpu", "4", "the node's allocatable cpu")
	mem := flag.String("memory", "8Gi", "the node's allocatable memory")
	pods := flag.String("pods", "110", "the node's allocatable pod count")
	flag.DurationVar(&cfg.leaseInterval, "lease-interval", 500*time.Millisecond, "how often the node renews its Lease")
	flag.DurationVar(&cfg.leaseTimeout, "lease-timeout", 2*time.Second, "a node whose Lease is older than this is not live: no pod is bound to it")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: inknode takes flags only", flag.Args())
	}
	for _, req := range []struct{ name, value string }{{"--kubeconfig", cfg.kubeconfig}, {"--name", cfg.name}, {"--exec", cfg.exec}, {"--state-dir", cfg.stateDir}} {
		if req.value == "" {
			return fmt.Errorf("%s is required", req.name)
		}
	}
	if cfg.index < 1 || cfg.index > 254 {
		return fmt.Errorf("--index %d: want 1..254 (the third byte of the node's pod IPs)", cfg.index)
	}
	var err error
	if cfg.exec, err = filepath.Abs(cfg.exec); err != nil {
		return fmt.Errorf("--exec: %w", err)
	}
	if st, err := os.Stat(cfg.exec); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("--exec %s: not an executable file", cfg.exec)
	}
	if cfg.pidsFile == "" {
		cfg.pidsFile = filepath.Join(cfg.stateDir, "pids")
	}
	for _, q := range []struct {
		name, value string
		dst         *resource.Quantity
	}{{"--cpu", *cpu, &cfg.cpu}, {"--memory", *mem, &cfg.memory}, {"--pods", *pods, &cfg.pods}} {
		if *q.dst, err = resource.ParseQuantity(q.value); err != nil {
			return fmt.Errorf("%s %q: %w", q.name, q.value, err)
		}
	}
	if err := os.MkdirAll(cfg.stateDir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	rc.QPS, rc.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	log.SetPrefix("inknode " + cfg.name + ": ")
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	a := newAgent(cs, cfg)
	return a.run(ctx)
}
