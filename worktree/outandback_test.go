package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// remoteRepo is a repository whose baseline holds an executable and two
// symlinks besides the template's files, with a worktree for childID.
func remoteRepo(t *testing.T, childID string) Record {
	t.Helper()
	root := newRepo(t)
	writeFile(t, root, "bin/run.sh", "#!/bin/sh\necho run\n")
	if err := os.Chmod(filepath.Join(root, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../README.md", filepath.Join(root, "docs", "readme-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(root, "code")); err != nil {
		t.Fatal(err)
	}
	git(t, root, "add", ".")
	git(t, root, "commit", "-q", "-m", "executable and symlinks")
	return newWorktree(t, root, newInkHome(t), childID)
}

// workerDir is where a test's "remote" worker materialises the workspace
// of rec: another directory whose last element is the child id, as the
// worker's machine would have at rec.Path.
func workerDir(t *testing.T, rec Record) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "remote", rec.ChildID())
}

// dirState describes every file under root (but its top .git and what
// skip names): its kind, permission bits and content, or its target.
func dirState(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" || slices.Contains(skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			state[rel] = "symlink -> " + target
		case fi.IsDir():
			state[rel] = "dir"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			state[rel] = fmt.Sprintf("file %v %x", fi.Mode().Perm()&0o111 != 0, sha256.Sum256(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// sameState fails the test when two directory states differ, naming each
// path that differs.
func sameState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g := got[p]; g != w {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want %q", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want nothing", p, g))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s differ:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// shipTo packs the worktree of rec and materialises it at dir.
func shipTo(t *testing.T, rec Record, dir string, opts PackOptions) (Shipped, Workspace) {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer
	sh, err := Pack(ctx, rec, &b, opts)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	if sh.Bytes != int64(b.Len()) {
		t.Fatalf("Pack says it wrote %d bytes, wrote %d", sh.Bytes, b.Len())
	}
	ws, err := Materialise(ctx, dir, &b)
	if err != nil {
		t.Fatalf("Materialise: %v", err)
	}
	return sh, ws
}

// snapshot takes the worker's snapshot of dir since since.
func snapshot(t *testing.T, dir, since string) (SnapshotInfo, []byte) {
	t.Helper()
	var b bytes.Buffer
	info, err := Snapshot(context.Background(), dir, since, &b)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return info, b.Bytes()
}

func apply(t *testing.T, rec Record, bundle []byte) Applied {
	t.Helper()
	res, err := ApplySnapshot(context.Background(), rec, bytes.NewReader(bundle), ApplyOptions{})
	if err != nil {
		t.Fatalf("ApplySnapshot: %v", err)
	}
	return res
}

// worktreeGit runs git in the worktree of rec through its own git
// directory, as ink does.
func worktreeGit(t *testing.T, rec Record, args ...string) string {
	t.Helper()
	return git(t, rec.Path, append([]string{"--git-dir=" + rec.PrivateGitDir(), "--work-tree=" + rec.Path}, args...)...)
}

// changedFiles lists the changes against HEAD and the untracked files of
// the worktree at dir (pre are git's global options).
func changedFiles(t *testing.T, dir string, pre ...string) string {
	t.Helper()
	return git(t, dir, append(pre, "diff", "HEAD", "--name-status")...) + "\n" +
		git(t, dir, append(pre, "ls-files", "--others", "--exclude-standard")...)
}

// indexState is what is staged and what is not in the worktree at dir
// (pre are git's global options): each with its status letter.
func indexState(t *testing.T, dir string, pre ...string) string {
	t.Helper()
	return "staged:\n" + git(t, dir, append(pre, "diff", "--cached", "--name-status")...) +
		"\nunstaged:\n" + git(t, dir, append(pre, "diff", "--name-status")...)
}

// TestSnapshotCarriesTheIndex: what a worker staged comes back staged —
// a staged edit, a staged new file, a staged deletion, and a file staged
// then edited again (staged and unstaged at once) — and goes out again
// to a resumed worker; a snapshot with nothing staged has one parent, as
// before the index travelled.
func TestSnapshotCarriesTheIndex(t *testing.T) {
	rec := remoteRepo(t, "staged")
	wdir := workerDir(t, rec)
	_, ws := shipTo(t, rec, wdir, PackOptions{})
	onSupervisor := []string{"--git-dir=" + rec.PrivateGitDir(), "--work-tree=" + rec.Path}

	writeFile(t, wdir, "README.md", "# project, edited and staged\n")
	writeFile(t, wdir, "notes/staged.txt", "new and staged\n")
	writeFile(t, wdir, "src/main.go", "package main // staged\n")
	git(t, wdir, "add", "README.md", "notes/staged.txt", "src/main.go")
	git(t, wdir, "rm", "-q", "docs/guide.md")
	writeFile(t, wdir, "src/main.go", "package main // staged, then edited again\n")
	writeFile(t, wdir, "notes/untracked.txt", "never staged\n")
	want := indexState(t, wdir)
	if !strings.Contains(want, "A\tnotes/staged.txt") || !strings.Contains(want, "unstaged:\nM\tsrc/main.go") {
		t.Fatalf("the worker's index is not what the test staged:\n%s", want)
	}

	info, bundle := snapshot(t, wdir, ws.Snapshot)
	if got := indexState(t, wdir); got != want {
		t.Fatalf("Snapshot changed the worker's index:\n%s", got)
	}
	if parents := strings.Fields(git(t, wdir, "rev-list", "--parents", "-n1", info.Commit)); len(parents) != 3 {
		t.Fatalf("a snapshot with something staged has parents %v, want HEAD and the index commit", parents[1:])
	}
	apply(t, rec, bundle)
	sameState(t, "worktree and worker", dirState(t, rec.Path), dirState(t, wdir))
	if got := indexState(t, rec.Path, onSupervisor...); got != want {
		t.Fatalf("the worktree's index after the snapshot:\n%s\nthe worker's:\n%s", got, want)
	}
	if got, w := git(t, rec.Path, append(onSupervisor, "status", "--porcelain")...), git(t, wdir, "status", "--porcelain"); got != w {
		t.Fatalf("git status in the worktree:\n%s\nin the worker:\n%s", got, w)
	}

	// A resumed worker gets the index as it is now.
	wdir2 := workerDir(t, rec)
	shipTo(t, rec, wdir2, PackOptions{})
	if got := indexState(t, wdir2); got != want {
		t.Fatalf("the resumed worker's index:\n%s\nwant:\n%s", got, want)
	}

	// Everything committed: nothing staged, and the snapshot has one
	// parent again; the worktree's index is HEAD's.
	git(t, wdir2, "add", "-A")
	git(t, wdir2, "commit", "-q", "-m", "all of it")
	info2, bundle2 := snapshot(t, wdir2, "")
	if parents := strings.Fields(git(t, wdir2, "rev-list", "--parents", "-n1", info2.Commit)); len(parents) != 2 {
		t.Fatalf("a snapshot with nothing staged has parents %v, want only HEAD", parents[1:])
	}
	apply(t, rec, bundle2)
	if got := indexState(t, rec.Path, onSupervisor...); got != "staged:\n\nunstaged:\n" {
		t.Fatalf("the worktree's index after a clean snapshot:\n%s", got)
	}
}

func TestWorkspaceRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec := remoteRepo(t, "roundtrip")
	wdir := workerDir(t, rec)
	sh, ws := shipTo(t, rec, wdir, PackOptions{})

	// Out: the worker's repository is the baseline, at the same SHA,
	// shallow there, on the branch, its files byte for byte the
	// worktree's.
	if sh.Baseline != rec.Baseline || ws.Baseline != rec.Baseline || ws.Head != rec.Baseline {
		t.Fatalf("shipped %+v, materialised %+v; baseline %s", sh, ws, rec.Baseline)
	}
	if got := git(t, wdir, "rev-parse", "HEAD"); got != rec.Baseline {
		t.Fatalf("worker HEAD = %s, want the baseline %s", got, rec.Baseline)
	}
	if got := git(t, wdir, "symbolic-ref", "--short", "HEAD"); got != rec.Branch {
		t.Fatalf("worker branch = %s, want %s", got, rec.Branch)
	}
	if got := git(t, wdir, "rev-list", "--count", "HEAD"); got != "1" {
		t.Fatalf("the worker's history has %s commits, want only the baseline", got)
	}
	if st := git(t, wdir, "status", "--porcelain"); st != "" {
		t.Fatalf("worker status after Materialise:\n%s", st)
	}
	sameState(t, "worker and worktree after Materialise", dirState(t, wdir), dirState(t, rec.Path))

	// The worker works: a commit, then uncommitted changes of every kind.
	writeFile(t, wdir, "src/main.go", "package main\n\nfunc main() { println(1) }\n")
	git(t, wdir, "commit", "-q", "-am", "print one")
	git(t, wdir, "rm", "-q", "docs/guide.md")
	writeFile(t, wdir, "README.md", "# project, edited\n")
	writeFile(t, wdir, "notes/new.txt", "untracked\n")
	writeFile(t, wdir, "build/out.bin", "ignored build output\n")
	if err := os.Chmod(filepath.Join(wdir, "src/main.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(wdir, "code")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("notes/new.txt", filepath.Join(wdir, "code")); err != nil {
		t.Fatal(err)
	}
	// (git carries files, not directories: an emptied directory does not
	// travel, so the test removes bin/ whole.)
	if err := os.RemoveAll(filepath.Join(wdir, "bin")); err != nil {
		t.Fatal(err)
	}
	workerHead := git(t, wdir, "rev-parse", "HEAD")

	info, bundle := snapshot(t, wdir, ws.Snapshot)
	if info.Head != workerHead {
		t.Fatalf("snapshot head = %s, want %s", info.Head, workerHead)
	}
	if st := git(t, wdir, "status", "--porcelain"); !strings.Contains(st, "?? notes/") || !strings.Contains(st, "D  docs/guide.md") {
		t.Fatalf("Snapshot changed the worker's index:\n%s", st)
	}
	res := apply(t, rec, bundle)
	if !res.Changed || res.Snapshot != info.Commit || res.Branch != workerHead {
		t.Fatalf("ApplySnapshot = %+v, want snapshot %s on branch %s", res, info.Commit, workerHead)
	}
	// Back: the worktree is the worker's, byte for byte, but for the
	// ignored build output, which does not travel.
	if exists(filepath.Join(rec.Path, "build")) {
		t.Fatal("an ignored file came back")
	}
	sameState(t, "worktree and worker after the first snapshot", dirState(t, rec.Path), dirState(t, wdir, "build"))
	if got := worktreeGit(t, rec, "rev-parse", "HEAD"); got != workerHead {
		t.Fatalf("worktree HEAD = %s, want the worker's %s", got, workerHead)
	}
	// What is uncommitted is the same on both sides, and so is what was
	// staged (the staged deletion): the index travels too.
	if got, want := changedFiles(t, rec.Path, "--git-dir="+rec.PrivateGitDir(), "--work-tree="+rec.Path), changedFiles(t, wdir); got != want {
		t.Fatalf("worktree's uncommitted work:\n%s\nworker's:\n%s", got, want)
	}
	if got, want := indexState(t, rec.Path, "--git-dir="+rec.PrivateGitDir(), "--work-tree="+rec.Path), indexState(t, wdir); got != want {
		t.Fatalf("worktree's index:\n%s\nworker's:\n%s", got, want)
	}
	// Sync brings the worker's commit into the user's repository.
	if err := Sync(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := git(t, rec.RepoRoot, "rev-parse", "refs/heads/"+rec.Branch); got != workerHead {
		t.Fatalf("ink/%s in the repository = %s, want %s", rec.ChildID(), got, workerHead)
	}
	if a := Assess(ctx, rec); a.State != WorkPresent {
		t.Fatalf("Assess = %+v, want work present", a)
	}

	// A second round: the untracked file goes, another commit, a file
	// made executable again.
	if err := os.RemoveAll(filepath.Join(wdir, "notes")); err != nil {
		t.Fatal(err)
	}
	git(t, wdir, "add", "-A")
	git(t, wdir, "commit", "-q", "-m", "second")
	writeFile(t, wdir, "docs/later.md", "later\n")
	info2, bundle2 := snapshot(t, wdir, info.Commit)
	if len(bundle2) >= len(bundle)+4096 {
		t.Fatalf("the second snapshot is %d bytes, the first %d: it should carry only what changed", len(bundle2), len(bundle))
	}
	res2 := apply(t, rec, bundle2)
	if !res2.Changed || res2.Snapshot != info2.Commit {
		t.Fatalf("second ApplySnapshot = %+v", res2)
	}
	sameState(t, "worktree and worker after the second snapshot", dirState(t, rec.Path), dirState(t, wdir, "build"))

	// Applying the same snapshot again changes nothing.
	before := dirState(t, rec.Path)
	again := apply(t, rec, bundle2)
	if again.Changed || again.Snapshot != info2.Commit || again.Branch != info2.Head {
		t.Fatalf("repeated ApplySnapshot = %+v, want unchanged at %s", again, info2.Commit)
	}
	sameState(t, "worktree after a repeated apply", dirState(t, rec.Path), before)
	// An unchanged worker sends the same snapshot, which is a no-op too.
	info3, bundle3 := snapshot(t, wdir, info2.Commit)
	if info3.Commit != info2.Commit {
		t.Fatalf("an unchanged worktree made a new snapshot %s (was %s)", info3.Commit, info2.Commit)
	}
	if again := apply(t, rec, bundle3); again.Changed {
		t.Fatalf("an unchanged snapshot was applied again: %+v", again)
	}

	// A resume ships the worktree as it is now: a new worker starts
	// where the last one stopped, uncommitted work included.
	wdir2 := workerDir(t, rec)
	_, ws2 := shipTo(t, rec, wdir2, PackOptions{})
	if ws2.Head != info2.Head {
		t.Fatalf("resumed worker HEAD = %s, want %s", ws2.Head, info2.Head)
	}
	sameState(t, "resumed worker and worktree", dirState(t, wdir2), dirState(t, rec.Path))
	if got, want := changedFiles(t, wdir2), changedFiles(t, rec.Path, "--git-dir="+rec.PrivateGitDir(), "--work-tree="+rec.Path); got != want {
		t.Fatalf("resumed worker status:\n%s\nworktree status:\n%s", got, want)
	}
	if got := git(t, wdir2, "log", "--format=%s", "HEAD"); got != "second\nprint one\nexecutable and symlinks" {
		t.Fatalf("resumed worker history:\n%s", got)
	}
}

func TestMaterialiseRefusesAnExistingPath(t *testing.T) {
	ctx := context.Background()
	rec := remoteRepo(t, "exists")
	var b bytes.Buffer
	if _, err := Pack(ctx, rec, &b, PackOptions{}); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(t.TempDir(), "full", rec.ChildID())
	writeFile(t, full, "keep.txt", "mine\n")
	for _, dir := range []string{rec.Path, full} {
		before := dirState(t, dir)
		_, err := Materialise(ctx, dir, bytes.NewReader(b.Bytes()))
		var ee *ExistsError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "already exists on this machine") {
			t.Fatalf("Materialise(%s) = %v, want an ExistsError", dir, err)
		}
		sameState(t, "a refused Materialise", dirState(t, dir), before)
		if dir != rec.Path && exists(dir+".git") {
			t.Fatal("a refused Materialise made a git directory")
		}
	}
	// An empty directory (a mount point) is fine.
	empty := filepath.Join(t.TempDir(), rec.ChildID())
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Materialise(ctx, empty, bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("Materialise into an empty directory: %v", err)
	}
	// A bundle cut short leaves nothing behind.
	cut := filepath.Join(t.TempDir(), rec.ChildID())
	if _, err := Materialise(ctx, cut, bytes.NewReader(b.Bytes()[:b.Len()/2])); err == nil {
		t.Fatal("Materialise accepted half a bundle")
	}
	if exists(cut) || exists(cut+".git") {
		t.Fatal("a failed Materialise left files behind")
	}
}

func TestPackShipsIncludesOnlyWhenAsked(t *testing.T) {
	root := newRepo(t)
	writeFile(t, root, ".worktreeinclude", ".env\n")
	git(t, root, "add", ".worktreeinclude")
	git(t, root, "commit", "-q", "-m", "include .env")
	writeFile(t, root, ".env", "SECRET=1\n")
	rec := newWorktree(t, root, newInkHome(t), "includes")
	if !exists(filepath.Join(rec.Path, ".env")) {
		t.Fatal("Create did not copy .env")
	}
	sh, _ := shipTo(t, rec, workerDir(t, rec), PackOptions{})
	if len(sh.Includes) != 0 || !slices.Equal(sh.LeftOut, []string{".env"}) {
		t.Fatalf("default Pack: includes %v, left out %v", sh.Includes, sh.LeftOut)
	}
	wdir := workerDir(t, rec)
	sh, ws := shipTo(t, rec, wdir, PackOptions{ShipIncludes: true})
	if !slices.Equal(sh.Includes, []string{".env"}) || !slices.Equal(ws.Includes, []string{".env"}) {
		t.Fatalf("Pack with includes: shipped %v, written %v", sh.Includes, ws.Includes)
	}
	if got, err := os.ReadFile(filepath.Join(wdir, ".env")); err != nil || string(got) != "SECRET=1\n" {
		t.Fatalf("worker .env = %q, %v", got, err)
	}
	if st := git(t, wdir, "status", "--porcelain"); st != "" {
		t.Fatalf("the shipped include shows in the worker's status:\n%s", st)
	}
	// The include is ignored, so it does not come back in a snapshot, and
	// was never stored in a git directory.
	info, _ := snapshot(t, wdir, ws.Snapshot)
	if out := git(t, wdir, "ls-tree", "-r", "--name-only", info.Commit); strings.Contains(out, ".env") {
		t.Fatalf("the snapshot carries .env:\n%s", out)
	}
	if _, err := gitTry(rec.Path, "--git-dir="+rec.GitDir(), "cat-file", "-e", git(t, root, "hash-object", ".env")); err == nil {
		t.Fatal("Pack stored the include file in the worktree's git directory")
	}
}

// attacker is a worker that crafts what it sends with git alone.
type attacker struct {
	t    *testing.T
	dir  string
	head string
}

func (a attacker) git(stdin string, args ...string) string {
	a.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", a.dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		a.t.Fatalf("git %v: %v\n%s", args, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// blob stores content and returns its sha.
func (a attacker) blob(content string) string {
	return a.git(content, "hash-object", "-w", "--stdin")
}

// treeWith is HEAD's tree with extra top-level entries ("mode type sha\tname").
func (a attacker) treeWith(extra ...string) string {
	entries := append(strings.Split(a.git("", "ls-tree", "HEAD"), "\n"), extra...)
	return a.git(strings.Join(entries, "\n")+"\n", "mktree")
}

// treeWithFiles is HEAD's tree with files added at any depth
// ("mode,sha,path" each).
func (a attacker) treeWithFiles(files ...string) string {
	idx := filepath.Join(a.t.TempDir(), "index")
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", a.dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			a.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("read-tree", "HEAD")
	for _, f := range files {
		run("update-index", "--add", "--cacheinfo", f)
	}
	return run("write-tree")
}

func (a attacker) commit(tree string, parents ...string) string {
	args := []string{"commit-tree", tree, "-m", "evil"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return a.git("", args...)
}

// bundle is a snapshot bundle of commit, with prereqs as prerequisites
// and refs besides refs/ink/snapshot.
func (a attacker) bundle(commit string, prereqs []string, extraRefs ...string) []byte {
	var b bytes.Buffer
	names := append([]string{refSnapshot}, extraRefs...)
	refs := map[string]string{}
	for _, n := range names {
		refs[n] = commit
	}
	if err := writeBundleHeader(&b, prereqs, names, refs); err != nil {
		a.t.Fatal(err)
	}
	revs := commit + "\n"
	for _, p := range prereqs {
		revs += "^" + p + "\n"
	}
	cmd := exec.Command("git", "-C", a.dir, "pack-objects", "--revs", "--stdout", "-q")
	var errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(revs), &b, &errb
	if err := cmd.Run(); err != nil {
		a.t.Fatalf("pack-objects: %v\n%s", err, errb.String())
	}
	return b.Bytes()
}

// packCount counts the files of the worktree's object packs.
func packCount(t *testing.T, rec Record) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(rec.GitDir(), "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestApplySnapshotRefusesHostileSnapshots(t *testing.T) {
	ctx := context.Background()
	rec := remoteRepo(t, "hostile")
	wdir := workerDir(t, rec)
	sh, ws := shipTo(t, rec, wdir, PackOptions{})
	a := attacker{t: t, dir: wdir, head: ws.Head}
	base := []string{rec.Baseline, sh.Snapshot}
	outside := filepath.Join(t.TempDir(), "outside")

	evil := a.blob("[core]\n\tfsmonitor = touch /tmp/pwned\n")
	dotGit := a.git("100644 blob "+evil+"\tconfig\n", "mktree")
	orphan := a.commit(a.git("", "rev-parse", "HEAD^{tree}"))
	writeFile(t, wdir, "big.bin", strings.Repeat("\x00", 2<<20))
	for i := range 4 {
		writeFile(t, wdir, fmt.Sprintf("many/%d", i), "one of many\n")
	}
	bigInfo, bigBundle := snapshot(t, wdir, ws.Snapshot)
	if err := os.Remove(filepath.Join(wdir, "big.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(wdir, "many")); err != nil {
		t.Fatal(err)
	}
	git(t, wdir, "commit", "-q", "--allow-empty", "-m", "unknown to the supervisor")
	unknown := git(t, wdir, "rev-parse", "HEAD")
	git(t, wdir, "reset", "-q", "--hard", ws.Head)

	cases := []struct {
		name   string
		bundle []byte
		opts   ApplyOptions
		want   Refusal
		path   string
	}{
		{name: "not a bundle", bundle: []byte("PACK\x00\x00\x00\x02garbage"), want: RefusedMalformed},
		{name: "a pack cut short", bundle: a.bundle(a.commit(a.treeWith("100644 blob "+a.blob("x\n")+"\tx"), a.head), base)[:200], want: RefusedMalformed},
		{name: "another ref", bundle: a.bundle(a.commit(a.treeWith(), a.head), base, "refs/heads/main"), want: RefusedMalformed},
		{name: "a commit not descending from the baseline", bundle: a.bundle(a.commit(a.treeWith(), orphan), base), want: RefusedNotDescendant},
		{name: "two parents", bundle: a.bundle(a.commit(a.treeWith(), a.head, orphan), base), want: RefusedNotDescendant},
		{name: "a prerequisite the supervisor lacks", bundle: a.bundle(a.commit(a.treeWith(), unknown), []string{rec.Baseline, unknown}), want: RefusedUnknownBase},
		{name: "a path ../x", bundle: a.bundle(a.commit(a.treeWith("100644 blob "+evil+"\t.."), a.head), base), want: RefusedPath},
		{name: "a .git/config entry", bundle: a.bundle(a.commit(a.treeWith("040000 tree "+dotGit+"\t.git"), a.head), base), want: RefusedPath},
		{name: "a .GIT/config entry", bundle: a.bundle(a.commit(a.treeWith("040000 tree "+dotGit+"\t.GIT"), a.head), base), want: RefusedPath},
		{name: "an absolute symlink", bundle: a.bundle(a.commit(a.treeWithFiles("120000,"+a.blob(outside)+",escape"), a.head), base), want: RefusedSymlink, path: "escape"},
		{name: "a symlink climbing out", bundle: a.bundle(a.commit(a.treeWithFiles("120000,"+a.blob("../../outside")+",src/up"), a.head), base), want: RefusedSymlink, path: "src/up"},
		{name: "a symlink out through another", bundle: a.bundle(a.commit(a.treeWithFiles("120000,"+a.blob("../..")+",a/b/s", "120000,"+a.blob("a/b/s/..")+",t"), a.head), base), want: RefusedSymlink, path: "t"},
		{name: "a symlink on the worker's branch", bundle: a.bundle(a.commit(a.treeWith(), a.commit(a.treeWithFiles("120000,"+a.blob("/etc")+",etc"), a.head)), base), want: RefusedSymlink, path: "etc"},
		{name: "a bundle over the bound", bundle: bigBundle, opts: ApplyOptions{MaxBytes: 1000}, want: RefusedTooLarge},
		{name: "files over the bound", bundle: bigBundle, opts: ApplyOptions{MaxWriteBytes: 1 << 20}, want: RefusedTooLarge},
		{name: "too many files", bundle: bigBundle, opts: ApplyOptions{MaxFiles: 3}, want: RefusedTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := dirState(t, rec.Path)
			tip := worktreeGit(t, rec, "rev-parse", "HEAD")
			packs := packCount(t, rec)
			_, err := ApplySnapshot(ctx, rec, bytes.NewReader(c.bundle), c.opts)
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("ApplySnapshot = %v, want a refusal (%s)", err, c.want)
			}
			if re.Refusal != c.want || re.Path != c.path || !strings.Contains(err.Error(), "nothing of it was applied") {
				t.Fatalf("refusal %s at %q: %v; want %s at %q", re.Refusal, re.Path, err, c.want, c.path)
			}
			t.Log(err)
			sameState(t, "the worktree after a refusal", dirState(t, rec.Path), before)
			if got := worktreeGit(t, rec, "rev-parse", "HEAD"); got != tip {
				t.Fatalf("the branch moved to %s", got)
			}
			if got := packCount(t, rec); got != packs {
				t.Fatalf("a refused snapshot left objects: %d pack files, were %d", got, packs)
			}
			if m, _ := filepath.Glob(filepath.Join(rec.GitDir(), "incoming-*")); len(m) > 0 {
				t.Fatalf("quarantine left behind: %v", m)
			}
			if exists(outside) {
				t.Fatal("something was written outside the worktree")
			}
		})
	}
	// Within the bounds, the same big snapshot applies.
	if res := apply(t, rec, bigBundle); res.Snapshot != bigInfo.Commit {
		t.Fatalf("ApplySnapshot = %+v", res)
	}
}

// A symlink in the worktree that leads outside (one ink copied in as a
// .worktreeinclude file, say) is never written through, whatever the
// snapshot holds at its path.
func TestApplySnapshotNeverWritesThroughASymlink(t *testing.T) {
	rec := remoteRepo(t, "through")
	wdir := workerDir(t, rec)
	_, ws := shipTo(t, rec, wdir, PackOptions{})
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(rec.Path, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, wdir, "link/x", "through the link\n")
	_, bundle := snapshot(t, wdir, ws.Snapshot)
	_, err := ApplySnapshot(context.Background(), rec, bytes.NewReader(bundle), ApplyOptions{})
	t.Logf("ApplySnapshot: %v", err)
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Fatalf("ApplySnapshot (%v) wrote outside the worktree: %v", err, entries)
	}
	if err == nil {
		// git replaced the symlink by the worker's directory.
		if fi, lerr := os.Lstat(filepath.Join(rec.Path, "link")); lerr != nil || !fi.IsDir() {
			t.Fatalf("link after the apply: %v, %v", fi, lerr)
		}
	}
}

func TestSnapshotPathChecks(t *testing.T) {
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"src/main.go", true}, {".gitignore", true}, {"a/.github/x", true}, {"..x", true},
		{"../x", false}, {"a/../../x", false}, {"/etc/passwd", false}, {"a//b", false}, {"./a", false},
		{".git/config", false}, {"sub/.GIT/hooks/pre-commit", false}, {".git./config", false}, {".git /x", false}, {"GIT~1/config", false},
	} {
		if err := checkPath(c.path); (err == nil) != c.ok {
			t.Errorf("checkPath(%q) = %v, want ok %v", c.path, err, c.ok)
		}
	}
	links := map[string]string{
		"in":        "src/main.go",
		"up":        "../x",
		"abs":       "/etc",
		"a/b/root":  "../..",
		"via":       "a/b/root/..",
		"via-ok":    "a/b/root/src",
		"loop1":     "loop2",
		"loop2":     "loop1",
		"a/sibling": "../in",
	}
	for p, want := range map[string]bool{"in": false, "up": true, "abs": true, "a/b/root": false, "via": true, "via-ok": false, "loop1": true, "a/sibling": false} {
		if got := leadsOutside(p, links); got != want {
			t.Errorf("leadsOutside(%q -> %q) = %v, want %v", p, links[p], got, want)
		}
	}
}
