package orchestrator

import (
	"fmt"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/worktree"
)

// ExecPrefix starts the --launcher value of the exec launcher.
const ExecPrefix = "exec:"

// KubeLauncher is the --launcher value that runs children in Pods
// (package launcher/kube); the caller builds that launcher and passes it
// as Config.RemoteLauncher with RemoteKind KubeLauncher.
const KubeLauncher = "kube"

// ParseLauncher checks a --launcher value and returns the command of an
// exec launcher ("" for "local" and for "kube").
func ParseLauncher(v string) (string, error) {
	switch {
	case v == "" || v == "local" || v == KubeLauncher:
		return "", nil
	case strings.HasPrefix(v, ExecPrefix):
		cmd := strings.TrimSpace(strings.TrimPrefix(v, ExecPrefix))
		if cmd == "" {
			return "", fmt.Errorf("--launcher %q names no command: give the command that runs `ink worker --remote`, e.g. --launcher 'exec:ssh buildbox ink worker --remote'", v)
		}
		return cmd, nil
	}
	return "", fmt.Errorf("--launcher %q: a launcher is local, kube (children in Pods of your Kubernetes cluster) or exec:COMMAND (a command that runs `ink worker --remote`, e.g. 'exec:ssh buildbox ink worker --remote')", v)
}

// remoteChild says whether a child of profile p runs on a remote worker:
// when the run has a remote launcher, unless the profile says `launcher:
// local`. A profile that asks for `launcher: remote` in a run without one,
// or for `launcher: kube` in a run whose remote launcher is not kube, is
// refused, saying what to pass.
func (o *Orchestrator) remoteChild(p *agents.Profile) (bool, string) {
	var want agents.Launcher
	if p != nil {
		want = p.Launcher
	}
	switch {
	case want == agents.LauncherLocal:
		return false, ""
	case want == agents.LauncherKube && o.remote != nil && o.cfg.RemoteKind != KubeLauncher:
		return false, fmt.Sprintf("task: agent %q asks for launcher: kube (%s), but this run's children run through --launcher exec:…; pass --launcher kube, or remove the line", p.Name, p.Source)
	case want == agents.LauncherKube && o.remote == nil:
		return false, fmt.Sprintf("task: agent %q asks for launcher: kube (%s), but this run has no Kubernetes launcher; pass --launcher kube, or remove the line", p.Name, p.Source)
	case o.remote != nil:
		return true, ""
	case want == agents.LauncherRemote:
		return false, fmt.Sprintf("task: agent %q asks for launcher: remote (%s), but this run has no remote launcher; pass --launcher 'exec:COMMAND' with a command that runs `ink worker --remote`, or remove the line", p.Name, p.Source)
	}
	return false, ""
}

// remoteSpecOf is the remote part of a spec for a child working in wt;
// the launcher fills in the rest.
func remoteSpecOf(wt worktree.Record) *ipc.RemoteSpec {
	return &ipc.RemoteSpec{Workspace: &ipc.RemoteWorkspace{Path: wt.Path, Baseline: wt.Baseline, Branch: wt.Branch}}
}
