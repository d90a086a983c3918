package main

import (
	"context"
	"fmt"
	"log"
	"runtime"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

func everything() labels.Selector { return labels.Everything() }

// register creates (or takes over) the Node and reports it Ready, with the
// kubelet endpoint on this agent's HTTPS port at 127.0.0.1.
func (a *agent) register(ctx context.Context) error {
	now := metav1.Now()
	status := corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: a.cfg.cpu, corev1.ResourceMemory: a.cfg.memory, corev1.ResourcePods: a.cfg.pods},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: a.cfg.cpu, corev1.ResourceMemory: a.cfg.memory, corev1.ResourcePods: a.cfg.pods},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "inknode is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		// Only InternalIP: the apiserver's preferred address types try
		// Hostname first, and a node name does not resolve.
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.port)}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            runtime.GOARCH,
			ContainerRuntimeVersion: "inknode://0",
		},
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.cfg.name, Labels: map[string]string{
			"kubernetes.io/hostname": a.cfg.name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     runtime.GOARCH,
			"ink.dev/inknode":        "true",
		}},
		Status: status,
	}
	_, err := a.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", a.cfg.name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := a.cs.CoreV1().Nodes().Get(ctx, a.cfg.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = status
		_, err = a.cs.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s status: %w", a.cfg.name, err)
	}
	return a.renewOnce(ctx)
}

// renewLease renews the node's Lease every --lease-interval until ctx ends.
// A frozen agent stops renewing, and the other nodes stop binding to it.
func (a *agent) renewLease(ctx context.Context) {
	t := time.NewTicker(a.cfg.leaseInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.renewOnce(ctx); err != nil && ctx.Err() == nil {
				log.Printf("lease: %v", err)
			}
		}
	}
}

func (a *agent) renewOnce(ctx context.Context) error {
	leases := a.cs.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NowMicro()
	l, err := leases.Get(ctx, a.cfg.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secs := int32(40)
		holder := a.cfg.name
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.cfg.name, Namespace: nodeLeaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) { // the apiserver creates the namespace shortly after it starts
			_, err = a.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeLeaseNamespace}}, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				return a.renewOnce(ctx)
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func (a *agent) kickBinder() {
	select {
	case a.bindCh <- struct{}{}:
	default:
	}
}

// binder binds Pending pods that have no node, round robin over the live
// nodes. Only the live node with the smallest name binds, so that two
// agents do not race; when it freezes, the next one takes over once its
// Lease is stale.
func (a *agent) binder(ctx context.Context) {
	t := time.NewTicker(a.cfg.leaseInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.bindCh:
		case <-t.C:
		}
		live := a.liveNodes()
		if len(live) == 0 || live[0].Name != a.cfg.name {
			continue
		}
		pods, _ := a.pods.List(everything())
		for _, p := range pods {
			if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
				continue
			}
			if err := a.schedule(ctx, p, live); err != nil && ctx.Err() == nil {
				log.Printf("bind %s/%s: %v", p.Namespace, p.Name, err)
			}
		}
	}
}

// schedule binds pod to the next live node whose labels match its
// nodeSelector and whose allocatable holds its requests, or marks it
// unschedulable as kube-scheduler would. It does not count the requests of
// the pods already on a node, nor taints and affinities.
func (a *agent) schedule(ctx context.Context, pod *corev1.Pod, live []*corev1.Node) error {
	req := podRequests(pod)
	var fit []*corev1.Node
	short := map[corev1.ResourceName]int{}
	sel := labels.SelectorFromSet(pod.Spec.NodeSelector)
	mismatch := 0
	for _, n := range live {
		if !sel.Matches(labels.Set(n.Labels)) {
			mismatch++
			continue
		}
		ok := true
		for r, q := range req {
			alloc, has := n.Status.Allocatable[r]
			if !has || q.Cmp(alloc) > 0 {
				short[r]++
				ok = false
			}
		}
		if ok {
			fit = append(fit, n)
		}
	}
	if len(fit) == 0 {
		var why []string
		if mismatch > 0 {
			why = append(why, fmt.Sprintf("%d node(s) didn't match Pod's node affinity/selector", mismatch))
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if short[r] > 0 {
				why = append(why, fmt.Sprintf("%d Insufficient %s", short[r], r))
				delete(short, r)
			}
		}
		for r, n := range short {
			why = append(why, fmt.Sprintf("%d Insufficient %s", n, r))
		}
		msg := fmt.Sprintf("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d No preemption victims found for incoming pod.", len(live), strings.Join(why, ", "), len(live), len(live))
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == msg {
				return nil
			}
		}
		return a.updatePodStatus(ctx, pod.Namespace, pod.Name, pod.UID, func(s *corev1.PodStatus) {
			setCondition(s, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg})
		})
	}
	a.mu.Lock()
	target := fit[a.rr%len(fit)]
	a.rr++
	a.mu.Unlock()
	err := a.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: target.Name},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // bound or deleted meanwhile
	}
	if err == nil {
		log.Printf("bound %s/%s to %s", pod.Namespace, pod.Name, target.Name)
	}
	return err
}

// podRequests sums the containers' requests (the apiserver defaults a
// request to its limit).
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for r, q := range c.Resources.Requests {
			sum := out[r]
			sum.Add(q)
			out[r] = sum
		}
	}
	one := resource.MustParse("1")
	out[corev1.ResourcePods] = one
	return out
}

// setCondition replaces s's condition of c's type, or adds it.
func setCondition(s *corev1.PodStatus, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.Now()
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			if s.Conditions[i].Status == c.Status {
				c.LastTransitionTime = s.Conditions[i].LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// updatePodStatus applies change to the pod's current status and writes it,
// retrying on conflicts; a pod deleted (or replaced) meanwhile is no error.
func (a *agent) updatePodStatus(ctx context.Context, ns, name string, uid types.UID, change func(*corev1.PodStatus)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := a.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != uid {
			return nil
		}
		change(&cur.Status)
		_, err = a.cs.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
