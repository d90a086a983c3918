package tools

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/sandbox"
)

// noLandlockEnv declares that the machine running the tests has no
// Landlock: the confinement tests then stand down (and fail if the claim
// is false); the tests of the fallback, which fake a kernel without
// Landlock, run everywhere.
const noLandlockEnv = "INK_TEST_NO_LANDLOCK"

// requireLandlock fails the test unless this machine can run the bash
// sandbox; only a machine declared and shown to lack Landlock skips.
func requireLandlock(t *testing.T) {
	t.Helper()
	err := sandbox.Check()
	if os.Getenv(noLandlockEnv) == "1" {
		if err == nil {
			t.Fatalf("%s=1 says this machine has no Landlock, but the kernel offers it; unset %s", noLandlockEnv, noLandlockEnv)
		}
		t.Skipf("no Landlock here (%v); TestBashWithoutLandlock covers this machine", err)
	}
	if err != nil {
		t.Fatalf("the bash sandbox cannot run here: %v\n(on a machine without Landlock, set %s=1 to skip the confinement tests)", err, noLandlockEnv)
	}
}

// sandboxKit is a kit whose bash runs in mode, with HOME and the cache
// directory moved into the test's temp dir. Not for parallel tests: it
// sets HOME and XDG_CACHE_HOME.
func sandboxKit(t *testing.T, mode sandbox.Mode, adjust ...func(*Env)) (k *kit, home, cache string) {
	t.Helper()
	requireLandlock(t)
	home = filepath.Join(t.TempDir(), "home")
	cache = filepath.Join(home, ".cache")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", cache)
	adjust = append([]func(*Env){func(e *Env) { e.Sandbox = mode; e.SandboxExplicit = true }}, adjust...)
	return newKit(t, adjust...), home, cache
}

// wantPermissionError fails unless r is an error result from a write the
// kernel refused.
func wantPermissionError(t *testing.T, r Result) {
	t.Helper()
	wantError(t, r, "Permission denied", "[exit code ")
}

// wantMissing fails if path exists.
func wantMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (err %v): a write the sandbox should stop got through", path, err)
	}
}

// Under read-only, touching a file in the repository fails with a
// permission error and no file appears, while the private $TMPDIR is
// writable, fresh for each call, and gone afterwards.
func TestBashReadOnly(t *testing.T) {
	k, home, _ := sandboxKit(t, sandbox.ReadOnly)
	k.write(t, "README.md", "hello\n")

	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "touch new.txt"}))
	wantMissing(t, k.path("new.txt"))
	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "echo changed > README.md"}))
	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "rm README.md"}))
	if got := readFile(t, k.path("README.md")); got != "hello\n" {
		t.Fatalf("README.md changed to %q", got)
	}
	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "touch " + home + "/x"}))
	wantMissing(t, filepath.Join(home, "x"))

	r := k.run(t, "bash", map[string]any{"command": `echo data > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR"`})
	wantOK(t, r)
	lines := strings.Split(r.Content, "\n")
	if lines[0] != "data" || !filepath.IsAbs(lines[1]) {
		t.Fatalf("content = %q", r.Content)
	}
	tmp := lines[1]
	if within(k.root, tmp) {
		t.Fatalf("the temp dir %s is inside the root", tmp)
	}
	wantMissing(t, tmp)
	r2 := k.run(t, "bash", map[string]any{"command": `echo "$TMPDIR"; ls -A "$TMPDIR"`})
	wantOK(t, r2)
	fresh, _, _ := strings.Cut(r2.Content, "\n")
	if fresh == tmp || r2.Content != fresh+"\n\n[exit code 0]" {
		t.Fatalf("the second call did not get a fresh, empty temp dir: %q", r2.Content)
	}
}

// Under workspace-write, bash writes the root, the cache directory and the
// extra writable directories, but not a sibling directory (standing in for
// the user's checkout) nor $HOME.
func TestBashWorkspaceWrite(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	k, home, cache := sandboxKit(t, sandbox.WorkspaceWrite, func(e *Env) { e.Writable = []string{extra} })

	wantOK(t, k.run(t, "bash", map[string]any{"command": "mkdir -p src && echo code > src/new.go && mv src/new.go src/moved.go"}))
	if got := readFile(t, k.path("src/moved.go")); got != "code\n" {
		t.Fatalf("src/moved.go = %q", got)
	}
	wantOK(t, k.run(t, "bash", map[string]any{"command": "mkdir -p " + cache + "/go-build && touch " + cache + "/go-build/entry " + extra + "/out"}))
	for _, p := range []string{filepath.Join(cache, "go-build", "entry"), filepath.Join(extra, "out")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}

	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "echo x > " + k.outside + "/stolen"}))
	wantMissing(t, filepath.Join(k.outside, "stolen"))
	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "echo x > ~/.bashrc"}))
	wantMissing(t, filepath.Join(home, ".bashrc"))
	wantPermissionError(t, k.run(t, "bash", map[string]any{"command": "mv src/moved.go " + k.outside + "/"}))
	if _, err := os.Stat(k.path("src/moved.go")); err != nil {
		t.Fatalf("a refused move lost the file: %v", err)
	}
}

// A grandchild is confined as bash is, however it was started.
func TestBashSandboxCoversGrandchildren(t *testing.T) {
	k, _, _ := sandboxKit(t, sandbox.ReadOnly)
	target := k.path("grandchild.txt")
	for _, cmd := range []string{
		`bash -c 'sh -c "touch ` + target + `"'`,
		`(sleep 0.01; touch ` + target + `) & wait $!`,
		`setsid -w sh -c "touch ` + target + `"`,
	} {
		t.Run(cmd, func(t *testing.T) {
			wantPermissionError(t, k.run(t, "bash", map[string]any{"command": cmd}))
			wantMissing(t, target)
		})
	}
}

// danger-full-access runs bash unconfined: it writes anywhere the user may.
func TestBashDangerFullAccess(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	k := newKit(t, func(e *Env) { e.Sandbox = sandbox.DangerFullAccess; e.SandboxExplicit = true; e.SandboxExe = "" })
	wantOK(t, k.run(t, "bash", map[string]any{"command": "touch new.txt " + k.outside + "/sibling.txt ~/home.txt"}))
	for _, p := range []string{k.path("new.txt"), filepath.Join(k.outside, "sibling.txt"), filepath.Join(home, "home.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(k.tools["bash"].Spec().Description, "sandbox") {
		t.Errorf("an unconfined bash claims a sandbox: %s", k.tools["bash"].Spec().Description)
	}
}

// A worktree child under workspace-write can write its worktree and
// commit on its own branch in the git directory ink made for it, but can
// change neither that directory's config and hooks nor anything of the
// user's checkout (files, hooks, config, object store, branches) nor
// $HOME.
func TestBashWorktreeChild(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkout := filepath.Join(base, "checkout")
	worktree := filepath.Join(base, "worktrees", "child")
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = gitEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	git(checkout, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(checkout, "main.go"), "package main\n")
	git(checkout, "add", ".")
	git(checkout, "commit", "-qm", "init")
	git(checkout, "worktree", "add", "-q", "-b", "ink/child", worktree)
	// The worktree's own git directory, laid out as package worktree
	// makes it.
	gitDir := worktree + ".git"
	private := filepath.Join(gitDir, "worktrees", "child")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads/ink", "logs/refs/heads/ink", "hooks", "info", "packed", "worktrees/child"} {
		if err := os.MkdirAll(filepath.Join(gitDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	head := git(checkout, "rev-parse", "HEAD")
	for name, content := range map[string]string{
		"HEAD": "ref: refs/heads/ink/child\n", "config": "[core]\n\tbare = true\n\tlogallrefupdates = true\n",
		"objects/info/alternates": filepath.Join(checkout, ".git", "objects") + "\n", "refs/heads/ink/child": head + "\n",
		"worktrees/child/HEAD": "ref: refs/heads/ink/child\n", "worktrees/child/commondir": "../..\n",
		"worktrees/child/gitdir": filepath.Join(worktree, ".git") + "\n",
		"worktrees/child/index":  readFile(t, filepath.Join(checkout, ".git", "worktrees", "child", "index")),
	} {
		writeFile(t, filepath.Join(gitDir, name), content)
	}
	if err := os.Symlink("packed/packed-refs", filepath.Join(gitDir, "packed-refs")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(worktree, ".git"), "gitdir: "+private+"\n")
	mainBefore := git(checkout, "rev-parse", "main")
	packsBefore, _ := os.ReadDir(filepath.Join(checkout, ".git", "objects"))
	configBefore := readFile(t, filepath.Join(checkout, ".git", "config"))

	requireLandlock(t)
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	pool := builtins(t, Env{Root: worktree, WorktreeGitDir: private, LockDir: filepath.Join(base, "locks"), SandboxExe: testExe})
	bash, _ := Select(pool, []string{"bash"})
	run := func(command string) Result {
		return bash[0].Run(t.Context(), rawArgs(t, map[string]any{"command": command}))
	}
	const id = "-c user.name=child -c user.email=c@c"

	wantOK(t, run("echo child > feature.go && echo more >> main.go"))
	if got := readFile(t, filepath.Join(worktree, "main.go")); got != "package main\nmore\n" {
		t.Fatalf("worktree main.go = %q", got)
	}
	wantOK(t, run("git add -A && git "+id+" commit -qm child && git log --oneline | wc -l"))
	if got := git(worktree, "rev-list", "--count", "ink/child"); got != "2" {
		t.Fatalf("the child's branch has %s commits, want 2", got)
	}
	wantOK(t, run("echo wip > wip.txt && git stash -q -u && git stash pop -q && git branch scratch && git tag t1 && git branch -D scratch && git tag -d t1 && git stash list | wc -l"))
	if r := run("git rev-parse -q --verify refs/stash; echo stash=$?"); !strings.Contains(r.Content, "stash=1") {
		t.Fatalf("the stash outlived its pop:\n%s", r.Content)
	}
	if got := git(checkout, "rev-list", "--count", "ink/child"); got != "1" {
		t.Fatalf("the user's repository sees %s commits on ink/child, want 1 (ink brings the child's commits back itself)", got)
	}

	wantPermissionError(t, run("echo x >> "+checkout+"/main.go"))
	wantPermissionError(t, run("touch "+checkout+"/.git/hooks/pre-commit"))
	wantPermissionError(t, run("git config --file "+checkout+"/.git/config core.hooksPath /tmp"))
	wantPermissionError(t, run("touch "+checkout+"/.git/objects/planted"))
	wantPermissionError(t, run("rm -rf "+checkout+"/.git/objects/info"))
	wantError(t, run("git --git-dir="+checkout+"/.git update-ref refs/heads/main HEAD"), "Permission denied")
	wantError(t, run("git --git-dir="+checkout+"/.git branch escape"), "Permission denied")
	wantError(t, run("git config core.fsmonitor 'touch /tmp/x'"), "Permission denied")
	wantPermissionError(t, run("touch $(git rev-parse --git-common-dir)/hooks/pre-commit"))
	wantPermissionError(t, run("echo evil > $(git rev-parse --git-common-dir)/config"))
	wantPermissionError(t, run("touch ~/x"))

	if got := readFile(t, filepath.Join(checkout, "main.go")); got != "package main\n" {
		t.Fatalf("the checkout's main.go changed to %q", got)
	}
	if got := readFile(t, filepath.Join(checkout, ".git", "config")); got != configBefore {
		t.Fatalf("the checkout's git config changed:\n%s", got)
	}
	if got := git(checkout, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("the user's branch moved: %s -> %s", mainBefore, got)
	}
	wantMissing(t, filepath.Join(checkout, ".git", "hooks", "pre-commit"))
	wantMissing(t, filepath.Join(checkout, ".git", "objects", "planted"))
	wantMissing(t, filepath.Join(gitDir, "hooks", "pre-commit"))
	if packsAfter, _ := os.ReadDir(filepath.Join(checkout, ".git", "objects")); len(packsAfter) != len(packsBefore) {
		t.Errorf("the user's object store changed: %d entries, were %d", len(packsAfter), len(packsBefore))
	}
	wantMissing(t, filepath.Join(checkout, ".git", "refs", "heads", "escape"))
	wantMissing(t, filepath.Join(home, "x"))
	if d := bash[0].Spec().Description; !strings.Contains(d, "this worktree's own git directory") {
		t.Errorf("the description does not mention the worktree's git state:\n%s", d)
	}
}

// A bad mode name or a bad writable directory is refused when the tools
// are built, with a message that says how to fix it.
func TestBashSandboxBadEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	locks := filepath.Join(t.TempDir(), "locks")
	tests := []struct {
		name string
		env  Env
		want string
	}{
		{"bad mode", Env{Sandbox: "strict"}, `tools env: unknown sandbox mode "strict"; pick one of read-only, workspace-write, danger-full-access`},
		{"relative writable", Env{Writable: []string{"build"}}, `writable directory "build" is not an absolute path`},
		{"missing writable", Env{Writable: []string{filepath.Join(root, "nope")}}, "does not exist; create it first or leave it out"},
		{"relative binary", Env{SandboxExe: "ink"}, `SandboxExe "ink" is not an absolute path`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env.Root, tc.env.LockDir = root, locks
			_, _, err := Builtins(tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Builtins: %v; want an error with %q", err, tc.want)
			}
		})
	}
}

// Without Landlock (faked here, so this runs on every machine): the
// default mode is dropped and bash runs unconfined, while an explicitly
// requested mode makes Builtins refuse, saying why and what to do.
func TestBashWithoutLandlock(t *testing.T) {
	t.Parallel()
	missing := func() error { return &sandbox.UnavailableError{Kernel: "5.15.0-91-generic", ABI: 1} }
	k := newKit(t, func(e *Env) { e.testLandlock = missing; e.SandboxExe = "" })
	wantOK(t, k.run(t, "bash", map[string]any{"command": "touch " + k.outside + "/unconfined"}))
	if _, err := os.Stat(filepath.Join(k.outside, "unconfined")); err != nil {
		t.Fatal(err)
	}
	if d := k.tools["bash"].Spec().Description; strings.Contains(d, "sandbox") {
		t.Errorf("bash claims a sandbox it does not have: %s", d)
	}

	for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
		_, _, err := Builtins(Env{Root: k.root, LockDir: k.env.LockDir, Sandbox: mode, SandboxExplicit: true, testLandlock: missing})
		want := "cannot run bash in the " + string(mode) + " sandbox: Landlock is too old: Linux 5.15.0-91-generic offers Landlock ABI 1"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "pick --sandbox danger-full-access") {
			t.Fatalf("explicit %s without Landlock: %v", mode, err)
		}
	}
}

// The model is told what its commands may write, so a refused write is
// not a mystery it retries.
func TestBashSpecDescribesSandbox(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	k, _, cache := sandboxKit(t, sandbox.WorkspaceWrite, func(e *Env) { e.Writable = []string{extra} })
	d := k.tools["bash"].Spec().Description
	for _, w := range []string{"workspace-write sandbox", k.root, cache + " (the cache directory)", extra, "$TMPDIR", `"Permission denied"`} {
		if !strings.Contains(d, w) {
			t.Errorf("description lacks %q:\n%s", w, d)
		}
	}
	k, _, _ = sandboxKit(t, sandbox.ReadOnly)
	d = k.tools["bash"].Spec().Description
	if !strings.Contains(d, "read-only sandbox: they may read any file but write only under $TMPDIR") || strings.Contains(d, k.root) {
		t.Errorf("read-only description:\n%s", d)
	}
}

// When the sandbox cannot be applied, the command does not run and the
// result says why.
func TestBashSandboxFailureIsAnError(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	k, _, _ := sandboxKit(t, sandbox.WorkspaceWrite, func(e *Env) { e.Writable = []string{extra} })
	if err := os.Remove(extra); err != nil {
		t.Fatal(err)
	}
	r := k.run(t, "bash", map[string]any{"command": "touch ran"})
	wantError(t, r, "bash: the command did not run: the workspace-write sandbox could not be applied: writable directory: stat "+extra+": no such file or directory")
	wantMissing(t, k.path("ran"))

	k = newKit(t, func(e *Env) { e.SandboxExe = "" })
	r = k.run(t, "bash", map[string]any{"command": "touch ran"})
	wantError(t, r, "bash: cannot apply the workspace-write sandbox: the ink binary that applies it is not known")
	wantMissing(t, k.path("ran"))
}

// A worker killed mid-call leaves its call's temp dir behind; the next
// sandboxed bash sweeps the temp dirs of processes that are gone, and
// only those. Not parallel: it sets TMPDIR.
func TestBashSweepsStaleTempDirs(t *testing.T) {
	requireLandlock(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("ink-bash-%d-123", gone.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("ink-bash-%d-456", os.Getpid()))
	other := filepath.Join(tmp, "ink-bash-notapid")
	for _, d := range []string{stale, live, other} {
		writeFile(t, filepath.Join(d, "sub", "f"), "x")
	}
	k := newKit(t)
	wantOK(t, k.run(t, "bash", map[string]any{"command": "true"}))
	wantMissing(t, stale)
	for _, d := range []string{live, other} {
		if _, err := os.Stat(filepath.Join(d, "sub", "f")); err != nil {
			t.Fatalf("the sweep removed %s: %v", d, err)
		}
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 2 {
		t.Fatalf("the call's own temp dir was left behind: %v", entries)
	}
}
