package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// TestCeilingAdmit: a profile narrows the run's sandbox, never widens it;
// what it asks beyond the ceiling is refused naming the file, the field
// and the flag that would allow it; a profile written during the run may
// set no sandbox field at all.
func TestCeilingAdmit(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	gitDir := filepath.Join(project, ".git")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(project, "build"), filepath.Join(gitDir, "hooks"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	def := sandbox.Ceiling{Mode: sandbox.WorkspaceWrite, Project: project, GitDirs: []string{gitDir}}
	with := func(f func(*sandbox.Ceiling)) sandbox.Ceiling {
		c := def
		f(&c)
		return c
	}
	const src = "/p/pwn.md"
	tests := []struct {
		name    string
		ceiling sandbox.Ceiling
		ask     sandbox.Ask
		def     sandbox.Mode
		want    sandbox.Grant
		refusal []string
	}{
		{name: "no profile, default", ceiling: def, def: sandbox.WorkspaceWrite,
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite}},
		{name: "no profile, read-only tools", ceiling: def, def: sandbox.ReadOnly,
			want: sandbox.Grant{Mode: sandbox.ReadOnly}},
		{name: "explicit --sandbox applies to every agent", ceiling: with(func(c *sandbox.Ceiling) { c.Mode, c.Explicit = sandbox.ReadOnly, true }),
			def: sandbox.WorkspaceWrite, want: sandbox.Grant{Mode: sandbox.ReadOnly, Explicit: true, NetworkExplicit: true}},
		{name: "profile narrows", ceiling: def, def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Mode: sandbox.ReadOnly},
			want: sandbox.Grant{Mode: sandbox.ReadOnly, Explicit: true, NetworkExplicit: true}},
		{name: "profile narrows an explicit danger-full-access", ceiling: with(func(c *sandbox.Ceiling) { c.Mode, c.Explicit = sandbox.DangerFullAccess, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Mode: sandbox.WorkspaceWrite},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, Explicit: true, NetworkExplicit: true}},
		{name: "danger-full-access over the default ceiling", ceiling: def, def: sandbox.WorkspaceWrite,
			ask:     sandbox.Ask{Source: src, Mode: sandbox.DangerFullAccess},
			refusal: []string{src, "sandbox: danger-full-access", "wider than the run's sandbox, workspace-write", "--sandbox danger-full-access"}},
		{name: "workspace-write over an explicit read-only", ceiling: with(func(c *sandbox.Ceiling) { c.Mode, c.Explicit = sandbox.ReadOnly, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Mode: sandbox.WorkspaceWrite},
			refusal: []string{"sandbox: workspace-write", "wider than the run's sandbox, read-only"}},
		{name: "network: true without --network", ceiling: def, def: sandbox.WorkspaceWrite,
			ask: sandbox.Ask{Source: src, Network: &yes}, refusal: []string{"network: true", "--network"}},
		{name: "network: true under --network", ceiling: with(func(c *sandbox.Ceiling) { c.Network, c.NetworkExplicit = true, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Network: &yes},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, Network: true}},
		{name: "network: true under danger-full-access", ceiling: with(func(c *sandbox.Ceiling) { c.Mode, c.Explicit = sandbox.DangerFullAccess, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Mode: sandbox.WorkspaceWrite, Network: &yes},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, Explicit: true, Network: true}},
		{name: "network: false narrows --network", ceiling: with(func(c *sandbox.Ceiling) { c.Network, c.NetworkExplicit = true, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Network: &no},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, NetworkExplicit: true}},
		{name: "--network=false is a cut by name", ceiling: with(func(c *sandbox.Ceiling) { c.NetworkExplicit = true }),
			def: sandbox.WorkspaceWrite, want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, NetworkExplicit: true}},
		{name: "writable: inside the project", ceiling: def, def: sandbox.WorkspaceWrite,
			ask:  sandbox.Ask{Source: src, Writable: []string{filepath.Join(project, "build")}},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, Writable: []string{filepath.Join(project, "build")}}},
		{name: "writable: /", ceiling: def, def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Writable: []string{"/"}},
			refusal: []string{"writable: /", "lies outside the project " + project, "--writable /"}},
		{name: "writable: / under an explicit workspace-write", ceiling: with(func(c *sandbox.Ceiling) { c.Explicit = true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Writable: []string{"/"}},
			refusal: []string{"writable: /", "outside the project"}},
		{name: "writable: outside, given with --writable", ceiling: with(func(c *sandbox.Ceiling) { c.Writable = []string{outside} }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Writable: []string{outside}},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite, Writable: []string{outside}}},
		{name: "writable: the git directory", ceiling: def, def: sandbox.WorkspaceWrite,
			ask:     sandbox.Ask{Source: src, Writable: []string{filepath.Join(gitDir, "hooks")}},
			refusal: []string{"writable: " + filepath.Join(gitDir, "hooks"), "git directory " + gitDir}},
		{name: "writable: the project, which holds the git directory", ceiling: def, def: sandbox.WorkspaceWrite,
			ask: sandbox.Ask{Source: src, Writable: []string{project}}, refusal: []string{"git directory"}},
		{name: "writable: missing", ceiling: def, def: sandbox.WorkspaceWrite,
			ask: sandbox.Ask{Source: src, Writable: []string{filepath.Join(project, "nope")}}, refusal: []string{"does not exist"}},
		{name: "reloaded profile with a sandbox field", ceiling: with(func(c *sandbox.Ceiling) { c.Mode, c.Explicit = sandbox.DangerFullAccess, true }),
			def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Mode: sandbox.ReadOnly, Reloaded: true},
			refusal: []string{src, "written while the run was going", "restart ink"}},
		{name: "reloaded profile without one", ceiling: def, def: sandbox.WorkspaceWrite, ask: sandbox.Ask{Source: src, Reloaded: true},
			want: sandbox.Grant{Mode: sandbox.WorkspaceWrite}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.ceiling.Admit(tc.ask, tc.def)
			if tc.refusal != nil {
				if err == nil {
					t.Fatalf("Admit = %+v, want a refusal", g)
				}
				for _, w := range tc.refusal {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal %q does not say %q", err, w)
					}
				}
				if len(tc.ceiling.Needs(tc.ask)) == 0 {
					t.Error("Needs is empty for a refused profile")
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if len(g.Writable) == 0 {
				g.Writable = nil
			}
			if !reflect.DeepEqual(g, tc.want) {
				t.Errorf("Admit = %+v, want %+v", g, tc.want)
			}
		})
	}
}

// TestModeWider orders the modes and fails closed on a value that is not
// one.
func TestModeWider(t *testing.T) {
	t.Parallel()
	if !sandbox.DangerFullAccess.Wider(sandbox.WorkspaceWrite) || !sandbox.WorkspaceWrite.Wider(sandbox.ReadOnly) {
		t.Error("the modes are not ordered read-only < workspace-write < danger-full-access")
	}
	if sandbox.ReadOnly.Wider(sandbox.ReadOnly) || sandbox.ReadOnly.Wider(sandbox.DangerFullAccess) {
		t.Error("read-only is wider than itself or than danger-full-access")
	}
	if !sandbox.Mode("loose").Wider(sandbox.DangerFullAccess) {
		t.Error("a value that is not a mode must count as the widest")
	}
}

// TestDecideNetwork: the network is cut in the confined modes unless
// granted; where the kernel cannot cut it, a defaulted cut is dropped
// with a warning and one asked for by name is refused.
func TestDecideNetwork(t *testing.T) {
	t.Parallel()
	ww := sandbox.Decision{Requested: sandbox.WorkspaceWrite, Effective: sandbox.WorkspaceWrite}
	danger := sandbox.Decision{Requested: sandbox.WorkspaceWrite, Effective: sandbox.DangerFullAccess}
	missing := &sandbox.NetworkUnavailableError{Kernel: "4.0.0"}
	tests := []struct {
		name      string
		d         sandbox.Decision
		allow     bool
		explicit  bool
		available error
		allowed   bool
		warning   bool
		refusal   []string
	}{
		{name: "cut by default", d: ww},
		{name: "granted", d: ww, allow: true, allowed: true},
		{name: "nothing confined", d: danger, allowed: true},
		{name: "cannot cut, default", d: ww, available: missing, allowed: true, warning: true},
		{name: "cannot cut, granted anyway", d: ww, allow: true, available: missing, allowed: true},
		{name: "cannot cut, by name", d: ww, explicit: true, available: missing,
			refusal: []string{"cannot run bash without the network", "Linux 4.0.0 takes no seccomp filter", "--network"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nd, err := sandbox.DecideNetwork(tc.d, tc.allow, tc.explicit, tc.available)
			if tc.refusal != nil {
				if err == nil {
					t.Fatalf("DecideNetwork = %+v, want a refusal", nd)
				}
				for _, w := range tc.refusal {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("refusal %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if nd.Allowed != tc.allowed || (nd.Warning != "") != tc.warning {
				t.Errorf("DecideNetwork = %+v, want allowed %v, warning %v", nd, tc.allowed, tc.warning)
			}
		})
	}
}
