package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// TestMain gives the tests a HOME of their own with a git identity, so the
// worktree tests commit with real git without reading the user's
// configuration.
//
// The test binary also stands in for the ink binary's hidden sandbox step,
// which the supervisor starts once to learn how bash gets a private mount
// namespace (sandbox.ProbeNamespaces).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Command {
		sandbox.Main(os.Args[2:])
	}
	home, err := os.MkdirTemp("", "ink-orchestrator-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := filepath.Join(home, "gitconfig")
	const gitconfig = "[user]\n\tname = Ink Test\n\temail = ink@example.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(cfg, []byte(gitconfig), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Setenv("GIT_CONFIG_GLOBAL", cfg)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
