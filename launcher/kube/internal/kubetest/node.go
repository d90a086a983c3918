package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeOptions say how a node runs its pods.
type NodeOptions struct {
	// Exec is the binary every container of the node runs (the image is
	// ignored): the test's ink binary, or /bin/sh. Required.
	Exec string
	// CPU and Memory are the node's allocatable resources (default 4 and
	// 8Gi); a pod requesting more stays Pending, Unschedulable.
	CPU, Memory string
}

// Node is one running inknode agent. Its methods are safe for concurrent
// use; StartNode ends the agent and its pods in t.Cleanup.
type Node struct {
	// Name is the Node's name; Index is its number: its pods' IPs are
	// 127.0.<Index>.<n>.
	Name  string
	Index int
	// PidsFile lists the host pid of each running pod process.
	PidsFile string

	t     testing.TB
	agent *proc

	mu      sync.Mutex
	stopped []int // pids Freeze stopped, parents first
}

// StartNode runs a node agent and waits until its Node is registered with
// a live Lease. It fails t if the agent does not come up.
func (c *ControlPlane) StartNode(t testing.TB, name string, opts NodeOptions) *Node {
	t.Helper()
	n, err := c.startNode(t, name, opts)
	if err != nil {
		t.Fatalf("kubetest: node %s: %v", name, err)
	}
	return n
}

func (c *ControlPlane) startNode(t testing.TB, name string, opts NodeOptions) (*Node, error) {
	if opts.Exec == "" {
		return nil, fmt.Errorf("NodeOptions.Exec is required: the binary the node's containers run")
	}
	c.mu.Lock()
	c.nodeCount++
	index := c.nodeCount
	c.mu.Unlock()
	dir := filepath.Join(c.Dir, "nodes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n := &Node{Name: name, Index: index, PidsFile: filepath.Join(dir, "pids"), t: t}
	args := []string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--name=" + name,
		"--index=" + strconv.Itoa(index),
		"--exec=" + opts.Exec,
		"--state-dir=" + dir,
		"--pids-file=" + n.PidsFile,
	}
	if opts.CPU != "" {
		args = append(args, "--cpu="+opts.CPU)
	}
	if opts.Memory != "" {
		args = append(args, "--memory="+opts.Memory)
	}
	agent, err := startProc(t, c.Dir, "inknode-"+name, c.inknode, 10*time.Second, args...)
	if err != nil {
		return nil, err
	}
	n.agent = agent
	// Before the agent is stopped (cleanups run last first): its pods go
	// first, by pid, thawed if frozen.
	t.Cleanup(n.killPods)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var node corev1.Node
		err := c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(&node)
		if err == nil && nodeReady(&node) && strings.Contains(n.agentLog(), "ready:") {
			return n, nil
		}
		select {
		case <-agent.exited:
			return nil, fmt.Errorf("inknode exited (%v); its output ends:\n%s", agent.err, agent.tail())
		case <-ctx.Done():
			return nil, fmt.Errorf("not ready after a minute; its output ends:\n%s", agent.tail())
		case <-tick.C:
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (n *Node) agentLog() string {
	b, _ := os.ReadFile(n.agent.logPath)
	return string(b)
}

// Log is the agent's output so far (for a failing test's message).
func (n *Node) Log() string { return n.agentLog() }

// Pid is the agent's process id.
func (n *Node) Pid() int { return n.agent.cmd.Process.Pid }

// PodPIDs maps "namespace/name" to the host pid of each pod process
// running on the node (its PID 1).
func (n *Node) PodPIDs() map[string]int {
	out := map[string]int{}
	b, err := os.ReadFile(n.PidsFile)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil {
			out[f[1]] = pid
		}
	}
	return out
}

// Freeze stops the node as a partition or a frozen VM would: SIGSTOP of the
// agent (no more Lease renewals, status reports, logs or port forwards),
// then of every process of its pods. It returns once every one of them is
// stopped. Thaw undoes it.
func (n *Node) Freeze() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped != nil {
		return
	}
	_ = syscall.Kill(n.Pid(), syscall.SIGSTOP)
	waitStopped(n.Pid(), true)
	n.stopped = []int{n.Pid()}
	for _, pid := range n.PodPIDs() {
		n.stopped = append(n.stopped, signalTree(pid, syscall.SIGSTOP)...)
	}
	for _, pid := range n.stopped {
		waitStopped(pid, true)
	}
}

// Thaw continues what Freeze stopped, the pods first, then the agent, and
// returns once none of them is stopped.
func (n *Node) Thaw() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.stopped) - 1; i >= 0; i-- {
		_ = syscall.Kill(n.stopped[i], syscall.SIGCONT)
	}
	for _, pid := range n.stopped {
		waitStopped(pid, false)
	}
	n.stopped = nil
}

// Stop ends the agent (SIGTERM: it kills its pods and exits) and waits.
// The Node object stays, its Lease goes stale.
func (n *Node) Stop() {
	n.Thaw()
	n.agent.stop(10 * time.Second)
}

// killPods SIGKILLs every pod process of the node, by pid, thawed first.
func (n *Node) killPods() {
	n.Thaw()
	select {
	case <-n.agent.exited:
		return // its pods died with it (they get SIGKILL when it dies)
	default:
	}
	for _, pid := range n.PodPIDs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
