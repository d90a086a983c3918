package main

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultPath is the PATH of a container whose env sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// podEnv resolves the container's environment as a kubelet does: values
// with $(VAR) references to earlier variables, and the downward API's
// fieldRef. Secrets and config maps are refused: inknode has none.
func podEnv(pod *corev1.Pod, c corev1.Container, podIP string) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	set("PATH", defaultPath)
	set("HOSTNAME", pod.Name)
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, expand(e.Value, vals))
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldRef(pod, e.ValueFrom.FieldRef.FieldPath, podIP)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			set(e.Name, v)
		case e.ValueFrom.ResourceFieldRef != nil:
			r := e.ValueFrom.ResourceFieldRef.Resource
			var q string
			if lim, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(r, "limits."))]; ok && strings.HasPrefix(r, "limits.") {
				q = lim.String()
			} else if req, ok := c.Resources.Requests[corev1.ResourceName(strings.TrimPrefix(r, "requests."))]; ok && strings.HasPrefix(r, "requests.") {
				q = req.String()
			} else {
				return nil, fmt.Errorf("env %s: inknode resolves resourceFieldRef only to a limit or request the container sets (%s)", e.Name, r)
			}
			set(e.Name, q)
		default:
			return nil, fmt.Errorf("env %s: inknode has no secrets or config maps to take a value from", e.Name)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

// fieldRef is the downward API's value of path for pod.
func fieldRef(pod *corev1.Pod, path, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return "127.0.0.1", nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if k, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(k, "']") {
			return m[strings.TrimSuffix(k, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported by inknode", path)
}

// expand replaces $(VAR) with vars[VAR] where VAR is set, leaves other
// references as written, and turns $$ into $, as Kubernetes does for env
// values, command and args.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
