package worktree

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// helperEnv switches the test binary into a helper process for the
// multi-process tests: "create" runs one Create and prints its Record as
// JSON, "crash" (crash_test.go) stops for good at one step of Create,
// "cycle" (concurrent_test.go) creates, lists and removes worktrees,
// "list" (list_test.go) lists them.
const helperEnv = "INK_WORKTREE_TEST_HELPER"

// createHooks maps a child id to the testHookCreate of the test that
// creates it.
var createHooks sync.Map // string -> func(step string) error

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "git" {
		os.Exit(fakeGit())
	}
	testHookCreate = func(id, step string) error {
		if f, ok := createHooks.Load(id); ok {
			return f.(func(string) error)(step)
		}
		return nil
	}
	switch os.Getenv(helperEnv) {
	case "create":
		os.Exit(helperCreate())
	case "crash":
		os.Exit(helperCrash())
	case "cycle":
		os.Exit(helperCycle())
	case "list":
		os.Exit(helperList())
	case "child":
		os.Exit(helperChild())
	}
	home, err := os.MkdirTemp("", "ink-worktree-test-home-")
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
	if templateRepo, err = buildTemplate(home); err != nil {
		fmt.Fprintln(os.Stderr, "build template repository:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// helperCreate runs Create for the repository and id given in the
// environment and prints the record.
func helperCreate() int {
	ctx := context.Background()
	repo, err := Detect(ctx, os.Getenv("INK_TEST_REPO"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rec, err := Create(ctx, repo, os.Getenv("INK_TEST_HOME"), os.Getenv("INK_TEST_ID"), os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(rec); err != nil {
		return 1
	}
	return 0
}

// git runs git in dir for a test and returns trimmed stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// writeFile writes content to dir/rel, creating directories.
func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// templateRepo is built once per test binary by buildTemplate and copied
// by newRepo, which saves a dozen git processes per test.
var templateRepo string

// buildTemplate makes a repository with three commits (README.md,
// src/main.go, docs/guide.md, a .gitignore for .env and build/) under dir.
func buildTemplate(dir string) (string, error) {
	repo := filepath.Join(dir, "template")
	steps := [][]string{{"init", "-q"}}
	files := []map[string]string{
		{"README.md": "# project\n", ".gitignore": ".env\nbuild/\n"},
		{"src/main.go": "package main\n\nfunc main() {}\n"},
		{"docs/guide.md": "line one\nline two\n"},
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return "", err
	}
	for _, s := range steps {
		if out, err := gitTry(repo, s...); err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
	}
	for i, fs := range files {
		for rel, content := range fs {
			p := filepath.Join(repo, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return "", err
			}
		}
		for _, s := range [][]string{{"add", "."}, {"commit", "-q", "-m", fmt.Sprintf("step %d", i+1)}} {
			if out, err := gitTry(repo, s...); err != nil {
				return "", fmt.Errorf("%v: %s", err, out)
			}
		}
	}
	return repo, nil
}

// newRepo copies the template repository into a temp dir and returns its
// resolved root.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := copyTree(templateRepo, dir); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

// newInkHome returns a fresh INK_HOME directory.
func newInkHome(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "inkhome")
}

// newWorktree detects root and creates a worktree for id.
func newWorktree(t testing.TB, root, inkHome, id string) Record {
	t.Helper()
	ctx := context.Background()
	repo, err := Detect(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Create(ctx, repo, inkHome, id, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// branchExists reports whether refs/heads/<branch> exists in root.
func branchExists(t testing.TB, root, branch string) bool {
	t.Helper()
	_, err := gitTry(root, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

// registeredPaths lists the worktree paths git knows in root.
func registeredPaths(t testing.TB, root string) []string {
	t.Helper()
	var ps []string
	for _, l := range strings.Split(git(t, root, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func isRegistered(t testing.TB, root, path string) bool {
	t.Helper()
	for _, p := range registeredPaths(t, root) {
		if samePath(p, path) {
			return true
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func itoa(n int) string { return strconv.Itoa(n) }
