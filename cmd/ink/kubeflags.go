package main

import (
	"time"

	"github.com/spf13/cobra"
)

// kubeOpts are the --kube-* flags as given. They are declared in every
// build, so that the command line is the same everywhere; only a build
// with the kube tag acts on them (see kube.go).
type kubeOpts struct {
	Context      string
	Namespace    string
	Image        string
	Connect      string
	CPU          string
	Memory       string
	StartTimeout time.Duration
}

// kubeFlagNames are the --kube-* flags.
var kubeFlagNames = []string{"kube-context", "kube-namespace", "kube-image", "kube-connect", "kube-cpu", "kube-memory", "kube-start-timeout"}

// addKubeFlags declares the --kube-* flags on the root.
func addKubeFlags(g *globals, cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	f := &g.kube
	pf.StringVar(&f.Context, "kube-context", "", "with --launcher kube: the kubeconfig context (default: the current one, or in-cluster)")
	pf.StringVar(&f.Namespace, "kube-namespace", "", "with --launcher kube: the namespace of the children's pods (default: the context's)")
	pf.StringVar(&f.Image, "kube-image", "", "with --launcher kube: the worker image, which must run this ink's version (default: ghcr.io/inkdev/ink:<this version>)")
	pf.StringVar(&f.Connect, "kube-connect", "auto", "with --launcher kube: how to reach a pod's worker: pod-ip, port-forward (through the apiserver), or auto (pod-ip inside the cluster)")
	pf.StringVar(&f.CPU, "kube-cpu", "", "with --launcher kube: CPU request and limit of each child's pod, e.g. 2 or 500m")
	pf.StringVar(&f.Memory, "kube-memory", "", "with --launcher kube: memory request and limit of each child's pod, e.g. 4Gi")
	pf.DurationVar(&f.StartTimeout, "kube-start-timeout", 5*time.Minute, "with --launcher kube: how long a pod may take to be scheduled, pull its image and greet")
}

// kubeGiven reports a --kube-* flag given to cmd.
func kubeGiven(cmd *cobra.Command) string {
	for _, n := range kubeFlagNames {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			return "--" + n
		}
	}
	return ""
}
