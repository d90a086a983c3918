package worktree

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseDrivers(t *testing.T) {
	t.Parallel()
	entry := func(scope, key, value string) string { return scope + "\x00" + key + "\n" + value + "\x00" }
	out := entry("global", "filter.lfs.smudge", "git-lfs smudge -- %f") +
		entry("system", "diff.sys.textconv", "x") +
		entry("local", "filter.crypt.smudge", "git-crypt smudge") +
		entry("local", "filter.crypt.clean", "git-crypt clean") +
		entry("local", "filter.lfs.required", "true") +
		entry("local", "merge.a=b.c.driver", "evil %A") +
		entry("worktree", "diff.Pic.TEXTCONV", "exiftool") +
		entry("local", "diff.nothing.binary", "true") +
		entry("command", "filter.cmd.clean", "x") +
		entry("local", "core.fsmonitor", "evil") +
		entry("local", "filterx", "y")
	got := parseDrivers(out)
	want := []driver{{"filter", "crypt"}, {"filter", "lfs"}, {"merge", "a=b.c"}, {"diff", "Pic"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseDrivers = %v, want %v", got, want)
	}
}

func TestInert(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{
		"rev-parse HEAD": true, "worktree list --porcelain": true, "worktree prune": true,
		"worktree add x": false, "status": false, "diff HEAD": false, "merge x": false,
		"merge-tree --write-tree a b": false, "ls-files -m": false, "cat-file --filters x": false, "": false,
	} {
		if got := inert(strings.Fields(args)); got != want {
			t.Errorf("inert(%q) = %v, want %v", args, got, want)
		}
	}
}

// TestHardenedEnvIgnoresInheritedConfig: configuration and programs that
// reach ink's process through the environment (GIT_CONFIG_PARAMETERS,
// GIT_CONFIG_COUNT, GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_DIR) never reach
// ink's git; the identity and the config files the user chose do.
func TestHardenedEnvIgnoresInheritedConfig(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='echo params >> "+ran+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", "echo count >> "+ran)
	t.Setenv("GIT_EXTERNAL_DIFF", "echo extdiff >> "+ran+"; true")
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_AUTHOR_NAME", "Kept Author")
	env := strings.Join(hardenedEnv(fixedPins), "\n")
	for _, gone := range []string{"GIT_CONFIG_PARAMETERS=", "GIT_EXTERNAL_DIFF=", "GIT_DIR=", "GIT_CONFIG_VALUE_0=echo"} {
		if strings.Contains(env, gone) {
			t.Errorf("the hardened environment keeps %s", gone)
		}
	}
	for _, kept := range []string{"GIT_AUTHOR_NAME=Kept Author", "GIT_CONFIG_GLOBAL=", "GIT_CONFIG_KEY_0=core.fsmonitor\n", "GIT_CONFIG_VALUE_0=false\n"} {
		if !strings.Contains(env+"\n", kept) {
			t.Errorf("the hardened environment lacks %q", kept)
		}
	}
	ctx := context.Background()
	root := newRepo(t)
	writeFile(t, root, "README.md", "# changed\n")
	if _, err := read(ctx, root, "status", "--porcelain"); err != nil {
		t.Fatal(err)
	}
	// diff.external is pinned to nothing: a diff that would run an
	// external diff fails instead (ink's own diffs pass --no-ext-diff).
	if _, err := read(ctx, root, "diff"); err != nil && !strings.Contains(err.Error(), "cannot run") {
		t.Fatal(err)
	}
	if _, err := read(ctx, root, "diff", "--no-ext-diff"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Fatalf("ink's git ran what the environment configured:\n%s", data)
	}
}

// TestNoTransportWhateverTheConfig: a partial clone whose own config
// names its promisor remote with an ext:: URL (which runs a shell command)
// and allows that protocol: ink's git reading a missing object, or asked
// for the remote outright, never runs the command. git run the ordinary
// way does, so the trap was armed.
func TestNoTransportWhateverTheConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newRepo(t)
	git(t, src, "config", "uploadpack.allowFilter", "true")
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, src, "clone", "-q", "--filter=blob:none", "--no-checkout", "file://"+src, clone)
	ran := filepath.Join(t.TempDir(), "ran")
	url := "ext::sh -c echo% transport% >>% " + ran + ";% false"
	git(t, clone, "config", "remote.origin.url", url)
	git(t, clone, "config", "protocol.ext.allow", "always")
	blob := git(t, clone, "rev-parse", "HEAD:README.md")

	if _, err := read(ctx, clone, "cat-file", "-p", blob); err == nil {
		t.Error("ink's git read a blob the partial clone lacks")
	}
	if _, err := read(ctx, clone, "ls-remote", url); err == nil {
		t.Error("ink's git ran ls-remote over ext::")
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Fatalf("ink's git ran the ext:: command:\n%s", data)
	}
	if out, err := gitTry(clone, "cat-file", "-p", blob); err == nil {
		t.Fatalf("git cat-file of the missing blob worked; the clone is not partial:\n%s", out)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("git run the ordinary way did not run the ext:: command either; the test proves nothing (%v)", err)
	}
}

// TestAssessNeverEntersSubmodules: a child that checks a repository out
// at a submodule path (with a configuration of its own that names
// programs) gets an Unknown worktree, and neither Assess nor Diff runs git
// inside it.
func TestAssessNeverEntersSubmodules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "s")
	ran := filepath.Join(t.TempDir(), "ran")
	sub := filepath.Join(rec.Path, "vendor", "lib")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, sub, "init", "-q")
	writeFile(t, sub, "f.txt", "f\n")
	git(t, sub, "add", ".")
	git(t, sub, "commit", "-q", "-m", "lib")
	git(t, sub, "config", "core.fsmonitor", "echo fsmonitor >> "+ran)
	writeFile(t, sub, ".gitattributes", "* filter=evil\n")
	git(t, sub, "config", "filter.evil.clean", "echo clean >> "+ran+"; cat")
	git(t, rec.Path, "add", "vendor/lib")
	os.Remove(ran)
	writeFile(t, sub, "f.txt", "dirty\n")
	a := Assess(ctx, rec)
	if a.State != Unknown || !strings.Contains(a.Detail, "submodule path vendor/lib") {
		t.Fatalf("Assess = %+v, want unknown naming the submodule", a)
	}
	if _, err := DiffFiles(ctx, findInfo(t, home, "s")); err != nil {
		t.Fatal(err)
	}
	if _, err := ListWith(ctx, home, ListOptions{Status: true}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(ran); err == nil {
		t.Fatalf("ink's git ran git inside the submodule:\n%s", data)
	}
}

// packsOf lists the pack files of the repository at root.
func packsOf(t *testing.T, root string) []string {
	t.Helper()
	p, err := filepath.Glob(filepath.Join(root, ".git", "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSync: a child's commits live in the worktree's own git directory
// until Sync brings them into the repository, checked and complete; a
// second Sync writes nothing; a worktree whose alternates were redirected
// or that lacks an object of its branch is refused and the repository's
// branch stays where it was.
func TestSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "y")
	writeFile(t, rec.Path, "new.txt", "new\n")
	git(t, rec.Path, "add", ".")
	git(t, rec.Path, "commit", "-q", "-m", "child")
	tip := git(t, rec.Path, "rev-parse", "HEAD")
	if _, err := gitTry(root, "cat-file", "-e", tip); err == nil {
		t.Fatal("the child's commit is in the user's repository before Sync")
	}
	if got := git(t, root, "rev-parse", "ink/y"); got != rec.Baseline {
		t.Fatalf("ink/y in the repository = %s before Sync, want the baseline", got)
	}
	if err := Sync(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := git(t, root, "rev-parse", "ink/y"); got != tip {
		t.Fatalf("ink/y after Sync = %s, want %s", got, tip)
	}
	if out := git(t, root, "fsck", "--strict", "--no-progress"); out != "" {
		t.Fatalf("git fsck after Sync:\n%s", out)
	}
	if log := git(t, root, "reflog", "show", "--format=%gs", "ink/y"); !strings.HasPrefix(log, "ink: the child's commits, from its worktree\n") {
		t.Errorf("the repository's reflog of ink/y does not record the sync:\n%s", log)
	}
	packs := packsOf(t, root)
	if err := Sync(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if again := packsOf(t, root); len(again) != len(packs) {
		t.Errorf("a Sync with nothing to bring wrote a pack: %v, were %v", again, packs)
	}

	// A commit whose new blob the worktree's git directory lacks.
	writeFile(t, rec.Path, "lost.txt", "lost\n")
	git(t, rec.Path, "add", ".")
	git(t, rec.Path, "commit", "-q", "-m", "lost")
	blob := git(t, rec.Path, "rev-parse", "HEAD:lost.txt")
	if err := os.Remove(filepath.Join(rec.GitDir(), "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	if err := Sync(ctx, rec); err == nil {
		t.Fatal("Sync of a branch with a missing object succeeded")
	}
	if got := git(t, root, "rev-parse", "ink/y"); got != tip {
		t.Fatalf("a failed Sync moved ink/y to %s", got)
	}

	// Alternates redirected to another repository.
	other := newRepo(t)
	writeFile(t, rec.GitDir(), "objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
	err := Sync(ctx, rec)
	var ue *UntrustedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Why, "alternates was changed") {
		t.Fatalf("Sync with redirected alternates = %v, want an UntrustedError", err)
	}
	if got := git(t, root, "rev-parse", "ink/y"); got != tip {
		t.Fatalf("a refused Sync moved ink/y to %s", got)
	}
}

// TestMergeCommitRefusesSymlinkedRefs: a child that replaced the
// directory of its branch's ref with a symlink into the user's repository
// cannot make `merge --commit` write there.
func TestMergeCommitRefusesSymlinkedRefs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "l")
	Unlock(ctx, rec)
	writeFile(t, rec.Path, "wip.txt", "wip\n")
	dir := filepath.Join(rec.GitDir(), "refs", "heads", "ink")
	userRefs := filepath.Join(root, ".git", "refs", "heads", "ink")
	before := git(t, root, "for-each-ref")
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(userRefs, dir); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(ctx, findInfo(t, home, "l"), MergeOptions{Commit: true})
	if err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("Merge --commit = %v, want a refusal to write through the symlink", err)
	}
	if after := git(t, root, "for-each-ref"); after != before {
		t.Errorf("the user's refs changed:\n%s\n---\n%s", before, after)
	}
}

// TestLegacyWorktreeAdopted: a worktree made by an earlier ink (its .git
// link names its metadata in the repository) is read there, and gets a git
// directory of its own when it is locked for a resume, keeping its work.
func TestLegacyWorktreeAdopted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "old")
	// Turn it into what an earlier ink made.
	admin := filepath.Join(root, ".git", "worktrees", "old")
	index, err := os.ReadFile(filepath.Join(rec.PrivateGitDir(), "index"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, admin, "index", string(index))
	writeFile(t, rec.Path, ".git", "gitdir: "+admin+"\n")
	if err := removeGitDir(rec.Path); err != nil {
		t.Fatal(err)
	}
	if a := Assess(ctx, rec); a.State != Clean {
		t.Fatalf("Assess of a legacy worktree = %+v, want clean", a)
	}
	commitIn(t, rec.Path, "legacy.txt", "legacy\n", "legacy work")
	if got, want := git(t, root, "rev-parse", "ink/old"), git(t, rec.Path, "rev-parse", "HEAD"); got != want {
		t.Fatalf("a legacy worktree's commit is not on the repository's branch: %s, %s", got, want)
	}
	before := Assess(ctx, rec)
	if before.State != WorkPresent {
		t.Fatalf("Assess = %+v, want work-present", before)
	}
	if err := Lock(ctx, rec, lockReason("old", os.Getpid())); err != nil {
		t.Fatal(err)
	}
	if link, _ := os.ReadFile(filepath.Join(rec.Path, ".git")); string(link) != linkContent(rec.PrivateGitDir()) {
		t.Fatalf("after Lock the .git link says %q", link)
	}
	l, err := openLayout(ctx, rec)
	if err != nil || !l.sealed {
		t.Fatalf("openLayout after Lock = %+v, %v; want its own git directory", l, err)
	}
	if after := Assess(ctx, rec); after.State != WorkPresent || after.Detail != before.Detail {
		t.Fatalf("Assess after adoption = %+v, want %+v", after, before)
	}
	if got := git(t, rec.Path, "log", "-1", "--format=%s"); got != "legacy work" {
		t.Fatalf("git in the adopted worktree sees %q", got)
	}
}

// TestDetectInsideWorktree: a child working in a worktree that asks for a
// worktree of its own gets one of the same repository, branched from its
// own HEAD, whose commits ink brings into the repository first; a worktree
// whose link was changed is refused without running git in it.
func TestDetectInsideWorktree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	parent := newWorktree(t, root, home, "parent")
	writeFile(t, parent.Path, "src/p.go", "package main // parent\n")
	git(t, parent.Path, "add", ".")
	git(t, parent.Path, "commit", "-q", "-m", "parent work")
	head := git(t, parent.Path, "rev-parse", "HEAD")
	repo, err := Detect(ctx, filepath.Join(parent.Path, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if repo.Root != root || repo.Prefix != "src/" || repo.Head != head {
		t.Fatalf("Detect = %+v, want root %s, prefix src/, head %s", repo, root, head)
	}
	child, err := Create(ctx, repo, home, "child", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if child.Baseline != head || child.Cwd != filepath.Join(child.Path, "src") {
		t.Fatalf("nested worktree %+v, want baseline %s", child, head)
	}
	if data, err := os.ReadFile(filepath.Join(child.Path, "src", "p.go")); err != nil || !bytes.Contains(data, []byte("parent")) {
		t.Fatalf("the nested worktree lacks the parent's work: %q, %v", data, err)
	}
	if got := git(t, root, "rev-parse", "ink/parent"); got != head {
		t.Errorf("ink/parent in the repository = %s, want the parent's commit %s", got, head)
	}

	writeFile(t, parent.Path, ".git", "gitdir: "+filepath.Join(root, ".git")+"\n")
	var ue *UntrustedError
	if _, err := Detect(ctx, parent.Path); !errors.As(err, &ue) {
		t.Fatalf("Detect in a worktree whose link was changed = %v, want an UntrustedError", err)
	}
}
