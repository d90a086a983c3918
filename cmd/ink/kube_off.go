//go:build !kube

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/orchestrator"
)

// This build has no Kubernetes launcher: it was built without the kube
// tag, so that no ink process pays client-go's package initialisation
// (see kube.go).

// errNoKube says how to get the Kubernetes launcher.
func errNoKube() error {
	return usageErr("this ink was built without the Kubernetes launcher; install the build that has it: go install -tags kube github.com/inkdev/ink/cmd/ink@<version> (see README, Running children on Kubernetes)")
}

func checkKubeFlags(*globals) error { return errNoKube() }

// kubeRemote is never made in this build.
type kubeRemote struct{}

func (*kubeRemote) launcher() orchestrator.Launcher   { return nil }
func (*kubeRemote) attach(*orchestrator.Orchestrator) {}
func (*kubeRemote) close()                            {}

func (g *globals) newKubeRemote(context.Context, *slog.Logger) (*kubeRemote, error) {
	return nil, errNoKube()
}

func newKubeCmd(*globals) *cobra.Command {
	return uses(&cobra.Command{
		Use:   "kube",
		Short: "Check and clean up the Kubernetes launcher (needs ink built with -tags kube)",
		RunE:  func(*cobra.Command, []string) error { return errNoKube() },
		Args:  cobra.ArbitraryArgs,
	}, "kube-context", "kube-namespace", "kube-image")
}
