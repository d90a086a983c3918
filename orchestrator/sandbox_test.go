package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/session"
)

// sandboxOrchestrator is an orchestrator whose cwd is a checkout (a .git
// directory), whose machine gives ns (or noNS) for the git mounts, and
// whose warnings are collected.
func sandboxOrchestrator(t *testing.T, cfg Config, ns sandbox.Namespaces, nsErr error) (*Orchestrator, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var warnings []string
	cfg.Sink = func(e event.Envelope) {
		if w, ok := e.Body.(event.Warning); ok {
			mu.Lock()
			warnings = append(warnings, w.Text)
			mu.Unlock()
		}
	}
	o := newTestOrchestrator(t, cfg)
	if err := os.Mkdir(filepath.Join(o.cfg.Cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.landlock, o.network = nil, nil
	o.namespaces = func() (sandbox.Namespaces, error) { return ns, nsErr }
	return o, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), warnings...)
	}
}

// TestSandboxForProfiles: a profile narrows the run's sandbox and cannot
// widen it; a profile written during the run may set no sandbox field.
// What the agent gets reaches its spec and its launch record.
func TestSandboxForProfiles(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o, _ := sandboxOrchestrator(t, Config{}, sandbox.MountNamespace, nil)
		edit := []string{"read", "edit", "bash"}
		_, err := o.sandboxFor("main", "", edit, ptr(parse(t, "sandbox: danger-full-access")), o.cfg.Cwd)
		if err == nil || !strings.Contains(err.Error(), "--sandbox danger-full-access") {
			t.Fatalf("a wider profile: %v", err)
		}
		_, err = o.sandboxFor("main", "", edit, ptr(parse(t, "writable: /")), o.cfg.Cwd)
		if err == nil || !strings.Contains(err.Error(), "outside the project") {
			t.Fatalf("writable: /: %v", err)
		}
		reloaded := parse(t, "sandbox: read-only")
		reloaded.Reloaded = true
		_, err = o.sandboxFor("main", "", edit, &reloaded, o.cfg.Cwd)
		if err == nil || !strings.Contains(err.Error(), "written while the run was going") {
			t.Fatalf("a reloaded profile: %v", err)
		}

		box, err := o.sandboxFor("main", "", edit, ptr(parse(t, "sandbox: read-only")), o.cfg.Cwd)
		if err != nil {
			t.Fatal(err)
		}
		var spec ipc.AttemptSpec
		box.apply(&spec)
		if spec.Sandbox != "read-only" || !spec.SandboxExplicit || spec.Network || !spec.NetworkExplicit {
			t.Errorf("narrowed spec = %+v", spec)
		}
		box, err = o.sandboxFor("main", "", edit, nil, o.cfg.Cwd)
		if err != nil {
			t.Fatal(err)
		}
		spec = ipc.AttemptSpec{}
		box.apply(&spec)
		if spec.Sandbox != "workspace-write" || spec.Network || spec.NetworkExplicit || spec.Namespaces != "mount" || spec.AllowGitWrites {
			t.Errorf("default spec = %+v", spec)
		}
		if ref := box.ref(); ref.Network == nil || *ref.Network || ref.GitWrites {
			t.Errorf("launch record = %+v, want the network recorded as not granted", ref)
		}
		box, err = o.sandboxFor("main", "", edit, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		spec = ipc.AttemptSpec{}
		box.apply(&spec)
		if spec.Namespaces != "" {
			t.Errorf("a worktree child got the checkout's git mounts: %+v", spec)
		}
	})
}

// TestSandboxForWithoutNamespaces: where the git directory cannot be
// mounted read-only, a defaulted workspace-write warns once per run and
// an explicit one is refused, saying what to do.
func TestSandboxForWithoutNamespaces(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		unavailable := &sandbox.NamespacesUnavailableError{Tried: []string{"user namespace: operation not permitted"}, Hint: "enable them"}
		o, warnings := sandboxOrchestrator(t, Config{}, sandbox.NoNamespaces, unavailable)
		tools := []string{"edit", "bash"}
		for i := 0; i < 2; i++ {
			if _, err := o.sandboxFor("main", "", tools, nil, o.cfg.Cwd); err != nil {
				t.Fatal(err)
			}
		}
		if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "bash may write the repository's git directory") {
			t.Errorf("warnings = %q, want one about the git directory", w)
		}
		if _, err := o.sandboxFor("main", "", []string{"read", "bash"}, nil, o.cfg.Cwd); err != nil {
			t.Fatalf("read-only needs no mount: %v", err)
		}

		o, _ = sandboxOrchestrator(t, Config{Sandbox: sandbox.WorkspaceWrite}, sandbox.NoNamespaces, unavailable)
		_, err := o.sandboxFor("main", "", tools, nil, o.cfg.Cwd)
		if err == nil || !strings.Contains(err.Error(), "operation not permitted") || !strings.Contains(err.Error(), "run without --sandbox workspace-write") {
			t.Fatalf("explicit workspace-write without namespaces: %v", err)
		}
		if refusal := (*SandboxRefusal)(nil); !errors.As(err, &refusal) {
			t.Errorf("the refusal is a %T, not a *SandboxRefusal (ink run exits 3 on those)", err)
		}

		// A binary that cannot be started is not a namespace problem: the
		// worker will fail to start with its own message.
		o, warnings = sandboxOrchestrator(t, Config{Sandbox: sandbox.WorkspaceWrite}, sandbox.NoNamespaces, errors.New("probe: no such file"))
		if _, err := o.sandboxFor("main", "", tools, nil, o.cfg.Cwd); err != nil || len(warnings()) != 0 {
			t.Fatalf("unstartable binary: %v, warnings %q", err, warnings())
		}
	})
}

// TestSandboxForWithoutSeccomp: where the kernel cannot cut bash off the
// network, a cut nobody asked for by name is dropped with one warning per
// run, whatever the number of agents; a cut asked for by name (--sandbox,
// --network=false, a profile's sandbox: or network: false) is refused,
// saying why and what to pass; --network needs no cut and gets no warning.
func TestSandboxForWithoutSeccomp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		missing := &sandbox.NetworkUnavailableError{Kernel: "4.0.0"}
		edit := []string{"read", "edit", "bash"}
		o, warnings := sandboxOrchestrator(t, Config{}, sandbox.MountNamespace, nil)
		o.network = missing
		for i := 0; i < 3; i++ {
			box, err := o.sandboxFor("main", "", edit, nil, o.cfg.Cwd)
			if err != nil {
				t.Fatal(err)
			}
			var spec ipc.AttemptSpec
			box.apply(&spec)
			if !spec.Network {
				t.Fatalf("a cut the kernel cannot make is still asked of the worker: %+v", spec)
			}
		}
		if w := warnings(); len(w) != 1 || !strings.Contains(w[0], "takes no seccomp filter") {
			t.Errorf("warnings = %q, want one saying the network cannot be cut", w)
		}

		for _, tc := range []struct {
			name string
			cfg  Config
			prof *agents.Profile
		}{
			{name: "--sandbox workspace-write", cfg: Config{Sandbox: sandbox.WorkspaceWrite}},
			{name: "--network=false", cfg: Config{NetworkExplicit: true}},
			{name: "a profile's sandbox:", prof: ptr(parse(t, "sandbox: read-only"))},
			{name: "a profile's network: false", prof: ptr(parse(t, "network: false"))},
		} {
			o, warnings := sandboxOrchestrator(t, tc.cfg, sandbox.MountNamespace, nil)
			o.network = missing
			_, err := o.sandboxFor("main", "", edit, tc.prof, o.cfg.Cwd)
			if err == nil || !strings.Contains(err.Error(), "cannot run bash without the network") || !strings.Contains(err.Error(), "--network") {
				t.Errorf("%s on a kernel without seccomp: %v, want a refusal naming --network", tc.name, err)
			}
			if refusal := (*SandboxRefusal)(nil); err != nil && !errors.As(err, &refusal) {
				t.Errorf("%s: the refusal is a %T, not a *SandboxRefusal", tc.name, err)
			}
			if w := warnings(); len(w) != 0 {
				t.Errorf("%s: warnings %q beside the refusal", tc.name, w)
			}
		}

		o, warnings = sandboxOrchestrator(t, Config{Network: true, NetworkExplicit: true}, sandbox.MountNamespace, nil)
		o.network = missing
		if _, err := o.sandboxFor("main", "", edit, nil, o.cfg.Cwd); err != nil || len(warnings()) != 0 {
			t.Errorf("--network on a kernel without seccomp: %v, warnings %q", err, warnings())
		}
	})
}

// TestSandboxDriftNetwork: a resume that would change the network or the
// git writes of a child is told, naming the flag; a record from before the
// network was recorded is not.
func TestSandboxDriftNetwork(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		no, yes := false, true
		ww := sandbox.Decision{Requested: sandbox.WorkspaceWrite, Effective: sandbox.WorkspaceWrite}
		now := bashSandbox{decision: ww}
		if why := sandboxDrift(&session.SandboxRef{Mode: "workspace-write", Network: &yes}, now); !strings.Contains(why, "resume it with --network") {
			t.Errorf("network lost: %q", why)
		}
		online := bashSandbox{decision: ww, networkAsked: true}
		if why := sandboxDrift(&session.SandboxRef{Mode: "workspace-write", Network: &no}, online); !strings.Contains(why, "without --network") {
			t.Errorf("network gained: %q", why)
		}
		if why := sandboxDrift(&session.SandboxRef{Mode: "workspace-write"}, online); why != "" {
			t.Errorf("an old record drifted: %q", why)
		}
		if why := sandboxDrift(&session.SandboxRef{Mode: "workspace-write", Network: &no, GitWrites: true}, now); !strings.Contains(why, "--allow-git-writes") {
			t.Errorf("git writes lost: %q", why)
		}
	})
}
