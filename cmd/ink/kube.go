//go:build kube

// The Kubernetes launcher links client-go, whose package initialisation
// every ink process would pay (workers included: they are the same
// binary), so it is built only with the kube tag: `go build -tags kube`.
// kube_off.go stands in for it otherwise.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/launcher/kube"
	"github.com/inkdev/ink/orchestrator"
)

// flags returns the launcher's flags of o.
func (o kubeOpts) flags() kube.Flags {
	return kube.Flags{Context: o.Context, Namespace: o.Namespace, Image: o.Image, Connect: o.Connect, CPU: o.CPU, Memory: o.Memory, StartTimeout: o.StartTimeout}
}

// checkKubeFlags checks the --kube-* flags.
func checkKubeFlags(g *globals) error {
	if _, err := g.kube.flags().Config(); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// kubeRemote is the remote launcher of --launcher kube, made before the
// orchestrator, whose warnings it passes on once it exists.
type kubeRemote struct {
	l   *kube.Launcher
	orc atomic.Pointer[orchestrator.Orchestrator]
}

// launcher is the orchestrator's remote launcher.
func (r *kubeRemote) launcher() orchestrator.Launcher { return r.l }

// attach passes the launcher's warnings to orc from now on.
func (r *kubeRemote) attach(orc *orchestrator.Orchestrator) { r.orc.Store(orc) }

// close deletes the run's pods.
func (r *kubeRemote) close() { r.l.Close() }

// newKubeRemote connects to the cluster and makes the launcher (which
// prunes the pods of this host's dead supervisors).
func (g *globals) newKubeRemote(ctx context.Context, log *slog.Logger) (*kubeRemote, error) {
	cfg, err := g.kube.flags().Config()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	client, err := kube.Connect("", g.kube.Context, g.kube.Namespace)
	if err != nil {
		return nil, &exitError{code: exitFailed, msg: err.Error()}
	}
	r := &kubeRemote{}
	cfg.TaskTimeout, cfg.Grace = g.taskTimeout, orchestrator.DefaultGrace
	cfg.Environ, cfg.Logger, cfg.Includes = os.Environ(), log, g.shipIncludes
	cfg.Warn = func(agent, text string) {
		if o := r.orc.Load(); o != nil {
			o.Warn(agent, text)
		}
	}
	if r.l, err = kube.New(ctx, client, cfg); err != nil {
		return nil, &exitError{code: exitFailed, msg: err.Error()}
	}
	return r, nil
}

func newKubeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Check and clean up the Kubernetes launcher (--launcher kube)",
	}
	check := uses(&cobra.Command{
		Use:   "check",
		Short: "Check the context, namespace, RBAC and image --launcher kube needs",
		Long: "Check what --launcher kube needs: the kubeconfig context, the namespace, each RBAC verb the\n" +
			"launcher uses (asked with SelfSubjectAccessReview), and that the image is this ink's version.\n" +
			"One line per piece; exits non-zero when something is missing. Changes nothing.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := kube.Connect("", g.kube.Context, g.kube.Namespace)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			fmt.Printf("ok      context %q, apiserver %s\n", client.Context(), client.Server())
			fmt.Printf("ok      namespace %s\n", client.Namespace())
			ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Minute)
			defer cancel()
			res := kube.Check(ctx, client, g.kube.Image)
			for _, ok := range res.OK {
				fmt.Println("ok      " + ok)
			}
			for _, p := range res.Problems {
				fmt.Printf("MISSING %s: %s\n", p.What, p.Fix)
			}
			if len(res.Problems) > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d missing for --launcher kube", len(res.Problems))}
			}
			return nil
		},
	}, "kube-context", "kube-namespace", "kube-image")
	prune := uses(&cobra.Command{
		Use:   "prune",
		Short: "Delete the pods that ink supervisors of this host left when they died",
		Long: "Delete the children's pods whose supervisor ran on this host and is gone (another boot, or no\n" +
			"such process). Such pods stop on their own within seconds, as their stream is gone; this removes\n" +
			"them. `ink run` with --launcher kube does the same when it starts. Pods of other hosts are listed,\n" +
			"not deleted: this host cannot tell whether their supervisor lives.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := kube.Connect("", g.kube.Context, g.kube.Namespace)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			deleted, left, err := kube.Prune(ctx, client)
			for _, d := range deleted {
				fmt.Printf("deleted %s (%s)\n", d.Pod, d.Reason)
			}
			for _, l := range left {
				fmt.Printf("left    %s (%s)\n", l.Pod, l.Reason)
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if len(deleted) == 0 {
				fmt.Printf("no pod of a dead supervisor of this host in namespace %s\n", client.Namespace())
			}
			return nil
		},
	}, "kube-context", "kube-namespace")
	cmd.AddCommand(check, prune)
	return cmd
}
