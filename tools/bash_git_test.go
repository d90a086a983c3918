package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// gitCheckout makes e.Root a repository with one commit and gives bash the
// machine's mount namespace, as the supervisor does.
func gitCheckout(t *testing.T) func(*Env) {
	return func(e *Env) {
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
			cmd := exec.Command("git", append([]string{"-C", e.Root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		ns, err := sandbox.ProbeNamespaces(testExe)
		if err != nil {
			t.Fatalf("no mount namespace here: %v", err)
		}
		e.Namespaces = ns
	}
}

// In the user's checkout under workspace-write neither bash nor the file
// tools change the git directory: git config and commit fail, edit and
// write refuse .git/config and a hook. With git writes allowed bash
// commits, and config, hooks, commondir and config.worktree stay out of
// reach.
func TestBashKeepsCheckoutGitReadOnly(t *testing.T) {
	k, _, _ := sandboxKit(t, sandbox.WorkspaceWrite, gitCheckout(t))
	git := "git -c user.name=t -c user.email=t@t "
	r := k.run(t, "bash", map[string]any{"command": "touch new.txt && echo touch-ok; " + git + "config core.fsmonitor x; echo config=$?; " + git + "commit -q --allow-empty -m x; echo commit=$?"})
	for _, want := range []string{"touch-ok", "config=255", "commit=128", "Read-only file system"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("bash in the checkout: want %q in\n%s", want, r.Content)
		}
	}
	if d := k.tools["bash"].Spec().Description; !strings.Contains(d, "git directory is read-only") {
		t.Errorf("bash does not tell the model its git directory is read-only:\n%s", d)
	}
	wantError(t, k.run(t, "write", map[string]any{"path": ".git/config", "content": "[core]\n\tfsmonitor = x\n"}), "the repository's git state")
	wantError(t, k.run(t, "write", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}), "the repository's git state")
	wantMissing(t, filepath.Join(k.root, ".git", "hooks", "pre-commit"))
	if cfg, _ := os.ReadFile(filepath.Join(k.root, ".git", "config")); strings.Contains(string(cfg), "fsmonitor") {
		t.Fatalf("core.fsmonitor landed:\n%s", cfg)
	}

	k, _, _ = sandboxKit(t, sandbox.WorkspaceWrite, gitCheckout(t), func(e *Env) { e.AllowGitWrites = true })
	r = k.run(t, "bash", map[string]any{"command": git + "commit -q --allow-empty -m x; echo commit=$?; " + git + "config core.fsmonitor x; echo config=$?"})
	if !strings.Contains(r.Content, "commit=0") || strings.Contains(r.Content, "config=0") {
		t.Errorf("bash with git writes allowed:\n%s", r.Content)
	}
	wantError(t, k.run(t, "write", map[string]any{"path": ".git/config", "content": "x"}), "the repository's git state")
	// commondir would name another git directory, with a config of its own.
	for _, p := range []string{".git/commondir", ".git/config.worktree"} {
		wantError(t, k.run(t, "write", map[string]any{"path": p, "content": "/tmp/elsewhere\n"}), "the repository's git state")
	}
	r = k.run(t, "bash", map[string]any{"command": "echo /tmp/elsewhere > .git/commondir; echo commondir=$?"})
	if !strings.Contains(r.Content, "commondir=1") {
		t.Errorf("bash with git writes allowed rewrote .git/commondir:\n%s", r.Content)
	}
	if d := k.tools["bash"].Spec().Description; !strings.Contains(d, "config and hooks are read-only") {
		t.Errorf("bash does not tell the model what it may write of git:\n%s", d)
	}
}

// Without the network bash says so in its description; with it, nothing
// is said.
func TestBashSpecDescribesNetwork(t *testing.T) {
	k, _, _ := sandboxKit(t, sandbox.WorkspaceWrite)
	if d := k.tools["bash"].Spec().Description; !strings.Contains(d, "There is no network") {
		t.Errorf("description without the network:\n%s", d)
	}
	k, _, _ = sandboxKit(t, sandbox.WorkspaceWrite, func(e *Env) { e.Network = true })
	if d := k.tools["bash"].Spec().Description; strings.Contains(d, "network") {
		t.Errorf("description with the network:\n%s", d)
	}
}

// An explicit cut of the network on a kernel that cannot make it is
// refused; a defaulted one lets bash run with the network.
func TestBashNetworkWithoutSeccomp(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	missing := func() error { return &sandbox.NetworkUnavailableError{Kernel: "4.0.0"} }
	root := t.TempDir()
	_, _, err := Builtins(Env{Root: root, LockDir: filepath.Join(root, "locks"), Sandbox: sandbox.WorkspaceWrite, NetworkExplicit: true, testNetwork: missing})
	if err == nil || !strings.Contains(err.Error(), "cannot run bash without the network") {
		t.Fatalf("explicit cut without seccomp: %v", err)
	}
	pool, closer, err := Builtins(Env{Root: root, LockDir: filepath.Join(root, "locks"), Sandbox: sandbox.WorkspaceWrite, SandboxExe: testExe, testNetwork: missing})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	for _, tl := range pool {
		if tl.Spec().Name == "bash" && strings.Contains(tl.Spec().Description, "no network") {
			t.Error("bash claims a network cut it does not have")
		}
	}
}
