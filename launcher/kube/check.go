package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/inkdev/ink/version"
)

// permission is one RBAC verb the launcher uses, and what for.
type permission struct {
	verb, resource, subresource, why string
}

// permissions are the verbs the launcher uses in its namespace; deploy/
// kube/rbac.yaml grants exactly these.
var permissions = []permission{
	{"create", "pods", "", "start each attempt's pod"},
	{"get", "pods", "", "read a pod's state"},
	{"list", "pods", "", "find the pods of dead supervisors (ink kube prune)"},
	{"watch", "pods", "", "follow a pod until it runs, and how it ends"},
	{"delete", "pods", "", "end a pod (cancel, timeout, node lost, done)"},
	{"deletecollection", "pods", "", "delete a run's pods when it ends"},
	{"get", "pods", "log", "read the worker's certificate hash from its first log line"},
	{"create", "pods", "portforward", "reach a worker from outside the cluster (--kube-connect port-forward)"},
	// A WebSocket port-forward is a GET, authorized as get (and, since
	// Kubernetes 1.35, also as create).
	{"get", "pods", "portforward", "reach a worker from outside the cluster over WebSocket (--kube-connect port-forward)"},
}

// Problem is one thing missing for the launcher, said so that the user
// can fix it.
type Problem struct {
	// What is missing ("RBAC create pods").
	What string
	// Fix says what to do.
	Fix string
}

// CheckResult is what Check found.
type CheckResult struct {
	// OK lists what is in place, one line each.
	OK []string
	// Problems lists what is missing.
	Problems []Problem
}

// Check asks the apiserver, for c's namespace, whether each verb the
// launcher uses is allowed (SelfSubjectAccessReview), and checks that
// image is tagged with this ink's version and that its `ink version`,
// run in a short-lived pod (deleted before Check returns), says so.
func Check(ctx context.Context, c *Client, image string) CheckResult {
	return check(ctx, c.api, c.namespace, image, c.inCluster)
}

func check(ctx context.Context, api podAPI, namespace, image string, inCluster bool) CheckResult {
	var res CheckResult
	for _, p := range permissions {
		if p.subresource == "portforward" && inCluster {
			continue
		}
		name := p.verb + " " + p.resource
		if p.subresource != "" {
			name += "/" + p.subresource
		}
		ok, reason, err := api.Allowed(ctx, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: p.verb, Resource: p.resource, Subresource: p.subresource})
		switch {
		case err != nil:
			res.Problems = append(res.Problems, Problem{What: "RBAC " + name, Fix: fmt.Sprintf("could not ask the apiserver (%v); the launcher needs it to %s", err, p.why)})
		case !ok:
			why := ""
			if reason != "" {
				why = " (" + reason + ")"
			}
			res.Problems = append(res.Problems, Problem{What: "RBAC " + name, Fix: fmt.Sprintf("not allowed in namespace %s%s; the launcher needs it to %s: apply deploy/kube/rbac.yaml", namespace, why, p.why)})
		default:
			res.OK = append(res.OK, fmt.Sprintf("RBAC %s in namespace %s", name, namespace))
		}
	}
	if image == "" {
		image = DefaultImage()
	}
	want := imageTag(version.Ink)
	if tag := imageTagOf(image); tag != want {
		res.Problems = append(res.Problems, Problem{What: "image " + image, Fix: fmt.Sprintf("its tag is %q and this ink is %s: the worker must be the same version (build and push the image of this version, or pass --kube-image with tag %s)", tag, version.Ink, want)})
		return res
	}
	if len(res.Problems) > 0 {
		// Without the verbs above, the pod that asks the image could not
		// be made, followed or read.
		res.Problems = append(res.Problems, Problem{What: "image " + image + " not run", Fix: "its `ink version` is asked in a pod once the RBAC above is in place; run ink kube check again then"})
		return res
	}
	got, err := imageVersion(ctx, api, namespace, image, imageCheckLimit)
	switch {
	case err != nil:
		res.Problems = append(res.Problems, Problem{What: "image " + image, Fix: fmt.Sprintf("its `ink version` could not be run in a pod (%v); check that the cluster can pull it and that it runs ink", err)})
	case got != version.Ink:
		res.Problems = append(res.Problems, Problem{What: "image " + image, Fix: fmt.Sprintf("its ink is %s and this ink is %s: build and push the image of this version, or pass --kube-image with one", got, version.Ink)})
	default:
		res.OK = append(res.OK, fmt.Sprintf("image %s runs ink %s, this ink's version (asked in a pod, deleted since)", image, got))
	}
	return res
}

// imageCheckLimit bounds the pod that asks an image for its ink version:
// scheduling, the image's pull and the run.
const imageCheckLimit = 2 * time.Minute

// imageTagOf is an image reference's tag ("latest" when it has none, ""
// for a digest).
func imageTagOf(image string) string {
	if i := strings.LastIndexByte(image, '@'); i >= 0 {
		return ""
	}
	slash := strings.LastIndexByte(image, '/')
	if i := strings.LastIndexByte(image, ':'); i > slash {
		return image[i+1:]
	}
	return "latest"
}

// Pruned is one pod Prune deleted, or found and left.
type Pruned struct {
	Pod    string
	Reason string
}

// Prune deletes the pods that supervisors of this host left when they
// died (another boot, or no such process), and reports those of other
// hosts it cannot judge.
func Prune(ctx context.Context, c *Client) (deleted, left []Pruned, err error) {
	l := &Launcher{api: c.api, self: thisSupervisor()}
	return l.pruneReport(ctx, processAlive)
}

// prune deletes the pods of dead supervisors of this host.
func (l *Launcher) prune(ctx context.Context, alive func(int) bool) (int, error) {
	deleted, _, err := l.pruneReport(ctx, alive)
	return len(deleted), err
}

func (l *Launcher) pruneReport(ctx context.Context, alive func(int) bool) (deleted, left []Pruned, err error) {
	pods, err := l.api.List(ctx, labelApp+"=ink,"+labelSupervisor)
	if err != nil {
		return nil, nil, fmt.Errorf("list ink's pods: %w", err)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	zero := int64(0)
	for _, p := range pods {
		s, ok := parseSupervisor(p.Annotations[annotationSupervisor])
		switch {
		case !ok:
			left = append(left, Pruned{p.Name, "no supervisor annotation"})
		case s.deadOnThisHost(l.self, alive):
			if err := l.api.Delete(ctx, p.Name, &zero); err != nil {
				return deleted, left, fmt.Errorf("delete pod %s: %w", p.Name, err)
			}
			deleted = append(deleted, Pruned{p.Name, fmt.Sprintf("its supervisor (pid %d on %s) is gone", s.Pid, s.Host)})
		case s.Host != l.self.Host:
			left = append(left, Pruned{p.Name, fmt.Sprintf("its supervisor runs on %s, which this host cannot check", s.Host)})
		}
	}
	return deleted, left, nil
}
