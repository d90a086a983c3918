package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// config is what the command line says.
type config struct {
	kubeconfig, name, exec, stateDir, pidsFile string
	index                                      int
	cpu, memory, pods                          resource.Quantity
	leaseInterval, leaseTimeout                time.Duration
}

// nodeLeaseNamespace holds the nodes' heartbeats, as for real kubelets.
const nodeLeaseNamespace = "kube-node-lease"

// agent is one node. Its pods map is guarded by mu; the queue's single
// worker reconciles pods one at a time, and each running pod has its own
// goroutine that waits for its process.
type agent struct {
	cs    kubernetes.Interface
	cfg   config
	port  int
	queue workqueue.TypedRateLimitingInterface[string]

	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	leases coordinationlisters.LeaseLister
	bindCh chan struct{}

	mu     sync.Mutex
	byName map[string]*podRun // namespace/name → the run of the pod bound here
	ipUsed [256]bool
	rr     int
}

func newAgent(cs kubernetes.Interface, cfg config) *agent {
	return &agent{
		cs:     cs,
		cfg:    cfg,
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		bindCh: make(chan struct{}, 1),
		byName: map[string]*podRun{},
	}
}

func (a *agent) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	a.port = ln.Addr().(*net.TCPAddr).Port
	srv, err := a.server()
	if err != nil {
		return err
	}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && ctx.Err() == nil {
			log.Printf("https: %v", err)
		}
	}()
	defer srv.Close()

	if err := a.register(ctx); err != nil {
		return err
	}
	if err := a.writePids(); err != nil {
		return err
	}

	podInf := informers.NewSharedInformerFactory(a.cs, 0)
	leaseInf := informers.NewSharedInformerFactoryWithOptions(a.cs, 0, informers.WithNamespace(nodeLeaseNamespace))
	a.pods = podInf.Core().V1().Pods().Lister()
	a.nodes = podInf.Core().V1().Nodes().Lister()
	a.leases = leaseInf.Coordination().V1().Leases().Lister()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
			a.kickBinder()
		}
	}
	podInf.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	podInf.Core().V1().Nodes().Informer()
	leaseInf.Coordination().V1().Leases().Informer()
	podInf.Start(ctx.Done())
	leaseInf.Start(ctx.Done())
	podInf.WaitForCacheSync(ctx.Done())
	leaseInf.WaitForCacheSync(ctx.Done())

	go a.renewLease(ctx)
	go a.binder(ctx)
	go func() {
		for a.processNext(ctx) {
		}
	}()
	log.Printf("ready: kubelet endpoint https://127.0.0.1:%d, pod IPs 127.0.%d.0/24", a.port, a.cfg.index)
	<-ctx.Done()
	a.queue.ShutDown()
	a.killAll()
	return nil
}

func (a *agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.reconcile(ctx, key); err != nil {
		log.Printf("pod %s: %v", key, err)
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

// reconcile brings the pod named key and its process, if it is bound here,
// to agreement.
func (a *agent) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := a.pods.Pods(ns).Get(name)
	a.mu.Lock()
	run := a.byName[key]
	a.mu.Unlock()
	if err != nil { // gone from the apiserver (a forced delete): stop what runs
		if run != nil {
			a.forget(key, run)
			go run.stop(2 * time.Second)
		}
		return nil
	}
	if run != nil && run.uid != pod.UID { // an earlier pod of the same name
		a.forget(key, run)
		go run.stop(2 * time.Second)
		run = nil
	}
	if pod.Spec.NodeName != a.cfg.name {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if run == nil { // never started here: nothing to stop
			return a.finalDelete(ctx, pod.Namespace, pod.Name, pod.UID)
		}
		run.terminateOnce.Do(func() { go a.terminate(ctx, key, run, pod) })
		return nil
	}
	if run == nil {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		run = a.adopt(key, pod)
		go a.runPod(ctx, pod.DeepCopy(), run)
		return nil
	}
	if f := pod.Annotations[faultAnnotation]; f != "" {
		run.faultOnce.Do(func() { go a.fault(ctx, run, f) })
	}
	return nil
}

// adopt records a new run for pod, with a pod IP of its own.
func (a *agent) adopt(key string, pod *corev1.Pod) *podRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for i := 2; i < 255; i++ {
		if !a.ipUsed[i] {
			n = i
			break
		}
	}
	run := &podRun{
		key:      key,
		uid:      pod.UID,
		ns:       pod.Namespace,
		name:     pod.Name,
		dir:      filepath.Join(a.cfg.stateDir, "pods", string(pod.UID)),
		started:  make(chan struct{}),
		done:     make(chan struct{}),
		hostIPNo: n,
	}
	if n > 0 {
		a.ipUsed[n] = true
		run.ip = fmt.Sprintf("127.0.%d.%d", a.cfg.index, n)
	}
	a.byName[key] = run
	return run
}

// forget drops key's run from the node; its IP is freed when it ends.
func (a *agent) forget(key string, run *podRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byName[key] == run {
		delete(a.byName, key)
	}
}

func (a *agent) releaseIP(run *podRun) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if run.hostIPNo > 0 {
		a.ipUsed[run.hostIPNo] = false
	}
}

func (a *agent) lookup(ns, name string) *podRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byName[ns+"/"+name]
}

// killAll ends every pod process of this node (the agent is stopping).
func (a *agent) killAll() {
	a.mu.Lock()
	runs := make([]*podRun, 0, len(a.byName))
	for _, r := range a.byName {
		runs = append(runs, r)
	}
	a.mu.Unlock()
	for _, r := range runs {
		r.stop(0)
	}
}

// writePids rewrites the pids file: one "pid namespace/name uid" line per
// running pod process, so that a test can freeze or kill a node's pods.
func (a *agent) writePids() error {
	a.mu.Lock()
	var lines []string
	for _, r := range a.byName {
		if pid := r.pid(); pid > 0 {
			lines = append(lines, fmt.Sprintf("%d %s %s", pid, r.key, r.uid))
		}
	}
	a.mu.Unlock()
	sort.Strings(lines)
	body := strings.Join(lines, "\n")
	if body != "" {
		body += "\n"
	}
	tmp := a.cfg.pidsFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return fmt.Errorf("pids file: %w", err)
	}
	if err := os.Rename(tmp, a.cfg.pidsFile); err != nil {
		return fmt.Errorf("pids file: %w", err)
	}
	return nil
}

// liveNodes are the nodes whose Lease was renewed within --lease-timeout,
// sorted by name.
func (a *agent) liveNodes() []*corev1.Node {
	nodes, _ := a.nodes.List(everything())
	now := time.Now()
	var live []*corev1.Node
	for _, n := range nodes {
		l, err := a.leases.Leases(nodeLeaseNamespace).Get(n.Name)
		if err != nil || l.Spec.RenewTime == nil || now.Sub(l.Spec.RenewTime.Time) > a.cfg.leaseTimeout {
			continue
		}
		live = append(live, n)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
	return live
}
