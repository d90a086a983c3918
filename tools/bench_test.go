package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// BenchmarkBashTrue measures one bash tool call running `true`: process
// group setup, output capture and cleanup, unconfined and in each sandbox
// mode (which adds the re-exec that applies Landlock and a temp dir).
func BenchmarkBashTrue(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.DangerFullAccess, sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		b.Run(string(mode), func(b *testing.B) {
			pool := builtins(b, Env{Root: b.TempDir(), LockDir: filepath.Join(b.TempDir(), "locks"),
				Sandbox: mode, SandboxExplicit: true, SandboxExe: testExe})
			bash, _ := Select(pool, []string{"bash"})
			args := json.RawMessage(`{"command":"true"}`)
			for b.Loop() {
				if r := bash[0].Run(context.Background(), args); r.IsError {
					b.Fatal(r.Content)
				}
			}
		})
	}
}

// BenchmarkBashTrueInCheckout is BenchmarkBashTrue under workspace-write
// in a git checkout, in each kind of mount namespace this machine gives:
// it adds the namespace and the read-only mount of the git directory.
func BenchmarkBashTrueInCheckout(b *testing.B) {
	kinds := []sandbox.Namespaces{sandbox.UserNamespace}
	if os.Geteuid() == 0 {
		kinds = append(kinds, sandbox.MountNamespace)
	}
	for _, ns := range kinds {
		b.Run(string(ns), func(b *testing.B) {
			root := b.TempDir()
			if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
				b.Fatalf("git init: %v\n%s", err, out)
			}
			pool := builtins(b, Env{Root: root, LockDir: filepath.Join(b.TempDir(), "locks"),
				Sandbox: sandbox.WorkspaceWrite, SandboxExplicit: true, SandboxExe: testExe, Namespaces: ns})
			bash, _ := Select(pool, []string{"bash"})
			args := json.RawMessage(`{"command":"true"}`)
			for b.Loop() {
				if r := bash[0].Run(context.Background(), args); r.IsError {
					b.Fatal(r.Content)
				}
			}
		})
	}
}

// BenchmarkExecBashTrue is the floor for BenchmarkBashTrue: a bare
// exec.Command("bash", "-c", "true").Run().
func BenchmarkExecBashTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrepTree measures grep over 500 small files.
func BenchmarkGrepTree(b *testing.B) {
	root := b.TempDir()
	for i := 0; i < 500; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%03d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("package p\n\nfunc F%d() int { return %d }\n", i, i)), 0o644)
	}
	pool := builtins(b, Env{Root: root, LockDir: filepath.Join(b.TempDir(), "locks")})
	grep, _ := Select(pool, []string{"grep"})
	args := json.RawMessage(`{"pattern":"return 4\\d\\d","glob":"*.go"}`)
	for b.Loop() {
		if r := grep[0].Run(context.Background(), args); r.IsError {
			b.Fatal(r.Content)
		}
	}
}
