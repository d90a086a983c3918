package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// gitIn runs git in dir without the user's or the system's configuration
// and fails the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newCheckout makes a repository with one commit in dir.
func newCheckout(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "init")
}

// TestFindCheckout finds the git state of a checkout from its root or a
// subdirectory, through a linked worktree's .git file to its git dir and
// common dir, and through a submodule-style .git file.
func TestFindCheckout(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "repo")
	newCheckout(t, repo)
	if err := os.Mkdir(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(base, "wt")
	gitIn(t, repo, "worktree", "add", "-q", "-b", "feature", wt)
	// A checkout whose .git file names a git directory elsewhere, as a
	// submodule's does.
	moved := filepath.Join(base, "moved")
	if err := os.Rename(filepath.Join(repo, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git"), []byte("gitdir: ../moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(moved, "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(moved, "worktrees", "wt")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want sandbox.Checkout
	}{
		{repo, sandbox.Checkout{DotGit: filepath.Join(repo, ".git"), GitDir: moved, CommonDir: moved}},
		{filepath.Join(repo, "sub"), sandbox.Checkout{DotGit: filepath.Join(repo, ".git"), GitDir: moved, CommonDir: moved}},
		{wt, sandbox.Checkout{DotGit: filepath.Join(wt, ".git"), GitDir: filepath.Join(moved, "worktrees", "wt"), CommonDir: moved}},
	} {
		got, ok := sandbox.FindCheckout(tc.dir)
		if !ok || got != tc.want {
			t.Errorf("FindCheckout(%s) = %+v, %v; want %+v", tc.dir, got, ok, tc.want)
		}
	}
	if _, ok := sandbox.FindCheckout(base); ok {
		t.Errorf("FindCheckout(%s) found a checkout where there is none", base)
	}
	// A linked worktree of the user's (a worktree child is told apart by
	// ink's record, not by its root) is kept read-only like any checkout.
	wtCheckout, _ := sandbox.FindCheckout(wt)
	p, err := wtCheckout.Protect(false)
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Protection{ReadOnly: []string{filepath.Join(wt, ".git"), moved}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Protect(false) = %+v, want %+v", p, want)
	}
	if err := os.RemoveAll(filepath.Join(moved, "hooks")); err != nil {
		t.Fatal(err)
	}
	p, err = wtCheckout.Protect(true)
	if err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(moved, "worktrees", "wt")
	want = sandbox.Protection{
		ReadOnly: []string{filepath.Join(wt, ".git"), filepath.Join(moved, "config"), filepath.Join(moved, "hooks"),
			filepath.Join(linked, "commondir"), filepath.Join(linked, "config.worktree"),
			filepath.Join(moved, "commondir"), filepath.Join(moved, "config.worktree")},
		Writable: []string{linked, moved},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("Protect(true) = %+v, want %+v", p, want)
	}
	if fi, err := os.Stat(filepath.Join(moved, "hooks")); err != nil || !fi.IsDir() {
		t.Errorf("Protect(true) did not create the missing hooks directory: %v", err)
	}
	// What it created to mount over means what its absence meant: the
	// linked worktree's commondir is kept, the main one names itself.
	for path, content := range map[string]string{
		filepath.Join(linked, "commondir"): "../..\n", filepath.Join(moved, "commondir"): ".\n",
		filepath.Join(linked, "config.worktree"): "", filepath.Join(moved, "config.worktree"): "",
	} {
		if data, err := os.ReadFile(path); err != nil || string(data) != content {
			t.Errorf("%s holds %q (%v), want %q", path, data, err, content)
		}
	}
	if got, ok := sandbox.FindCheckout(wt); !ok || got != wtCheckout {
		t.Errorf("after Protect(true) FindCheckout(%s) = %+v, %v; want %+v", wt, got, ok, wtCheckout)
	}
	if got := gitIn(t, wt, "rev-parse", "--path-format=absolute", "--git-common-dir"); got != moved {
		t.Errorf("after Protect(true) git finds the common directory %s, want %s", got, moved)
	}
	if got := gitIn(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir"); got != moved+"\n"+moved {
		t.Errorf("after Protect(true) git finds in the main checkout %q, want %s twice", got, moved)
	}
}

// namespaceKinds are the ways of getting a mount namespace this machine
// offers: both as root (CI), the user namespace otherwise.
func namespaceKinds(t *testing.T) []sandbox.Namespaces {
	t.Helper()
	if _, err := sandbox.ProbeNamespaces(testExe); err != nil {
		t.Fatalf("no mount namespace here: %v", err)
	}
	if os.Geteuid() == 0 {
		return []sandbox.Namespaces{sandbox.MountNamespace, sandbox.UserNamespace}
	}
	return []sandbox.Namespaces{sandbox.UserNamespace}
}

// TestSandboxKeepsGitReadOnly: under workspace-write bash may write the
// checkout but not its git directory — no git config (core.fsmonitor runs
// a program), no commit, no hook, no moving .git away — in each kind of
// mount namespace; with git writes allowed it commits, but still cannot
// change the config or the hooks. The user's own view of the files is
// untouched: the mounts live only in the command's namespace.
func TestSandboxKeepsGitReadOnly(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	for _, ns := range namespaceKinds(t) {
		t.Run(string(ns), func(t *testing.T) {
			t.Parallel()
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			root, tmp := filepath.Join(base, "checkout"), filepath.Join(base, "tmp")
			newCheckout(t, root)
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			co, ok := sandbox.FindCheckout(root)
			if !ok {
				t.Fatal("no checkout found")
			}
			policy := func(allowWrites bool) sandbox.Policy {
				p, err := co.Protect(allowWrites)
				if err != nil {
					t.Fatal(err)
				}
				return sandbox.Policy{Mode: sandbox.WorkspaceWrite, TempDir: tmp, Root: root,
					Writable: p.Writable, ReadOnly: p.ReadOnly, Namespaces: ns}
			}
			git := `git -c user.name=t -c user.email=t@t `
			r := runIn(t, policy(false), root, `echo b > a.txt && echo write-ok; `+
				git+`config core.fsmonitor 'touch `+base+`/fsmonitor-ran'; echo config=$?; `+
				git+`commit -qam change; echo commit=$?; `+
				`echo evil > .git/hooks/pre-commit; echo hook=$?; mv .git gone; echo mv=$?; `+
				git+`status --short; echo status=$?`)
			for _, want := range []string{"write-ok", "config=255", "commit=128", "hook=1", "mv=1", " M a.txt", "status=0", "Read-only file system"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("read-only git dir: want %q in\n%s", want, r.out)
				}
			}
			if cfg, _ := os.ReadFile(filepath.Join(root, ".git", "config")); strings.Contains(string(cfg), "fsmonitor") {
				t.Fatalf("core.fsmonitor was set:\n%s", cfg)
			}
			if n := gitIn(t, root, "rev-list", "--count", "HEAD"); n != "1" {
				t.Errorf("the commit landed: %s commits", n)
			}

			// With git writes allowed a command may still not name another
			// git directory, with a config of its making, in commondir, nor
			// write config.worktree.
			r = runIn(t, policy(true), root, git+`commit -qam change; echo commit=$?; `+
				git+`config core.fsmonitor 'touch `+base+`/fsmonitor-ran'; echo config=$?; `+
				`echo evil > .git/hooks/pre-commit; echo hook=$?; rm .git/config; echo rm=$?; `+
				`cp -r .git evil && printf '[core]\n\tfsmonitor = touch `+base+`/fsmonitor-ran\n' >> evil/config && echo "$PWD/evil" > .git/commondir; echo commondir=$?; `+
				`rm -f .git/commondir; echo rm-commondir=$?; `+
				`printf '[core]\n\tfsmonitor = touch `+base+`/fsmonitor-ran\n' > .git/config.worktree; echo config-worktree=$?`)
			for _, want := range []string{"commit=0", "could not write config file", "hook=1", "rm=1", "commondir=1", "rm-commondir=1", "config-worktree=1"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("git writes allowed: want %q in\n%s", want, r.out)
				}
			}
			if strings.Contains(r.out, "config=0") {
				t.Errorf("git writes allowed: git config succeeded:\n%s", r.out)
			}
			if n := gitIn(t, root, "rev-list", "--count", "HEAD"); n != "2" {
				t.Errorf("with git writes allowed the commit did not land: %s commits", n)
			}
			if cfg, _ := os.ReadFile(filepath.Join(root, ".git", "config")); strings.Contains(string(cfg), "fsmonitor") {
				t.Fatalf("core.fsmonitor was set:\n%s", cfg)
			}
			wantAbsent(t, filepath.Join(root, ".git", "hooks", "pre-commit"))
			gitIn(t, root, "status") // would run a planted fsmonitor
			wantAbsent(t, filepath.Join(base, "fsmonitor-ran"))
			// The user's own namespace still writes the git dir.
			gitIn(t, root, "config", "ink.test", "1")
		})
	}
}

// TestSandboxExecRefusesToMountInPlace: asked for read-only mounts but
// started in its parent's mount namespace, the sandbox step refuses
// rather than change the user's own mounts.
func TestSandboxExecRefusesToMountInPlace(t *testing.T) {
	t.Parallel()
	d := newDirsNoEnv(t)
	host := mntNamespace(t)
	cmd := exec.Command(testExe, sandbox.Command, "-write", d, "-host-mntns", host, "-ro", d, "--", "true")
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 126 || !strings.Contains(string(out), "not in a private mount namespace") {
		t.Fatalf("exit %v, output %q", err, out)
	}
}

// newDirsNoEnv is a fresh directory, for tests that run in parallel.
func newDirsNoEnv(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mntNamespace is the test process's mount namespace as the sandbox step
// names it (device:inode of its namespace file).
func mntNamespace(t *testing.T) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/thread-self/ns/mnt", &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
