package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/session"
)

// These tests attack ink's git as a hostile child or a hostile repository
// would, with real bash and real git, and count how often the program they
// plant runs: it appends a line to a counter file outside every worktree.

// counter is the file a planted program appends to, and the shell command
// that appends name to it.
type counter struct{ path string }

// assertMergedInert runs ink worktrees ls --status, diff and merge on the
// worktree of child id, whose commit appended "more" to a.txt: each must
// succeed without running the planted command, and the merge must bring
// the commit into the checkout.
func assertMergedInert(t *testing.T, e *env, c counter, id string) {
	t.Helper()
	for _, args := range [][]string{{"worktrees", "ls", "--status"}, {"worktrees", "diff", id}} {
		if p, code := e.run(args...); code != 0 {
			t.Fatalf("ink %s exited %d:\n%s", strings.Join(args, " "), code, p.stderr.String())
		}
		c.assertNone(t, "ink "+strings.Join(args, " "))
	}
	p, code := e.run("worktrees", "merge", id)
	c.assertNone(t, "ink worktrees merge")
	if code != 0 || !strings.Contains(p.stdout.String(), "merged ink/"+id+" into main") {
		t.Fatalf("ink worktrees merge exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if data, _ := os.ReadFile(filepath.Join(e.dir, "a.txt")); string(data) != "hello\nmore\n" {
		t.Fatalf("a.txt after the merge = %q", data)
	}
}

func newCounter(t *testing.T) counter {
	return counter{path: filepath.Join(t.TempDir(), "ran")}
}

func (c counter) cmd(name string) string { return "echo " + name + " >> " + c.path }

// runs returns the lines the planted programs wrote.
func (c counter) runs() string {
	data, _ := os.ReadFile(c.path)
	return strings.TrimSpace(string(data))
}

// assertNone fails when a planted program ran during step.
func (c counter) assertNone(t *testing.T, step string) {
	t.Helper()
	if r := c.runs(); r != "" {
		t.Fatalf("%s ran the planted programs:\n%s", step, r)
	}
}

// gitTry runs the test's own git (not ink's) in dir with e's environment;
// it may fail.
func (e *env) gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, e.vars
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestWorktreeAttackPlantedGitDir: a worktree child copies its git
// directory, plants core.fsmonitor, a filter, a pager, an external diff and
// hooks in the copy's config, and points its worktree's .git link at it.
// ink's git never follows the link: the settle after the attempt, `ink
// worktrees ls` (with and without --status), diff, merge, the MCP
// worktrees_list tool, prune, a resume of the child and rm never run any
// of it; the worktree is listed as unknown with why, the resume is
// refused, and only `rm --force` removes it. The same
// planted directory does run for a plain `git status` there, so the trap
// was armed.
func TestWorktreeAttackPlantedGitDir(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	c := newCounter(t)
	hooks := filepath.Join(filepath.Dir(e.dir), "planted-hooks")
	plant := strings.Join([]string{
		`id=$(basename "$(git rev-parse --git-dir)")`,
		`cp -r "$(git rev-parse --git-common-dir)" .evil`,
		`git config --file .evil/config core.fsmonitor '` + c.cmd("fsmonitor") + `'`,
		`git config --file .evil/config core.pager '` + c.cmd("pager") + `; cat'`,
		`git config --file .evil/config diff.external '` + c.cmd("external-diff") + `'`,
		`git config --file .evil/config core.hooksPath ` + hooks,
		`git config --file .evil/config filter.evil.clean '` + c.cmd("clean-filter") + `; cat'`,
		`git config --file .evil/config filter.evil.smudge '` + c.cmd("smudge-filter") + `; cat'`,
		`git config --file .evil/config diff.evil.textconv '` + c.cmd("textconv") + `; cat'`,
		`echo '* filter=evil diff=evil' > .gitattributes`,
		`echo changed >> a.txt`,
		`printf 'gitdir: %s\n' "$PWD/.evil/worktrees/$id" > .git`,
		`echo planted`,
	}, " && ")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"post-checkout", "pre-commit", "post-merge", "reference-transaction", "post-index-change"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+c.cmd(h)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, rec := e.wtTask("plant", plant)
	w := rec.Worktree
	c.assertNone(t, "the settle after the attempt")
	if w.Disposition != "kept-unknown" || !strings.Contains(w.Detail, "ink runs no git in the worktree") || !strings.Contains(w.Detail, "its .git link was changed") {
		t.Fatalf("worktree outcome %+v, want kept-unknown because its .git link was changed\n%s", w, out)
	}
	id := rec.ChildID

	p, code := e.run("worktrees", "ls")
	c.assertNone(t, "ink worktrees ls")
	if code != 0 || !strings.Contains(p.stdout.String(), id) || !strings.Contains(p.stdout.String(), " unknown ") ||
		!strings.Contains(p.stdout.String(), id+" is unknown: ink runs no git in it, as its .git link was changed") {
		t.Fatalf("ink worktrees ls exited %d, want the worktree listed as unknown with why:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	p, code = e.run("worktrees", "ls", "--status", "--json")
	c.assertNone(t, "ink worktrees ls --status")
	if code != 0 || !strings.Contains(p.stdout.String(), `"untrusted":"its .git link was changed`) || !strings.Contains(p.stdout.String(), `"state":"unknown"`) {
		t.Fatalf("ink worktrees ls --status --json exited %d, want it to say why the worktree is unknown:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	p, code = e.run("worktrees", "diff", id)
	c.assertNone(t, "ink worktrees diff")
	if code == 0 || !strings.Contains(p.stderr.String(), "ink runs no git in the worktree") {
		t.Fatalf("ink worktrees diff exited %d, want a refusal:\n%s", code, p.stderr.String())
	}
	p, code = e.run("worktrees", "merge", "--commit", id)
	c.assertNone(t, "ink worktrees merge")
	if code == 0 || !strings.Contains(p.stderr.String(), "ink cannot tell what the worktree") || !strings.Contains(p.stderr.String(), "do not run git in") {
		t.Fatalf("ink worktrees merge exited %d, want a refusal that warns against running git there:\n%s", code, p.stderr.String())
	}
	s := e.startMCP("--model", "script:"+e.wtOutside("mcp.yaml", "rules:\n  - reply: {text: done}\n"))
	list, res := s.call(t, "worktrees_list", nil)
	c.assertNone(t, "the MCP tool worktrees_list")
	if res.IsError || !strings.Contains(list, id) || !strings.Contains(list, "unknown") || !strings.Contains(list, "its .git link was changed") {
		t.Fatalf("worktrees_list:\n%s", list)
	}
	p, code = e.run("worktrees", "prune")
	c.assertNone(t, "ink worktrees prune")
	if code != 0 || !strings.Contains(p.stdout.String(), "ink runs no git in the worktree") {
		t.Fatalf("ink worktrees prune exited %d, want the worktree kept with why:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
	code, _, stderr := e.resumeOut("--resume", id, "--model", "script:"+filepath.Join(filepath.Dir(e.dir), "plant.yaml"), "go on")
	c.assertNone(t, "a resume of the child")
	if code != 3 || !strings.Contains(stderr, "worktree-untrusted: ink runs no git in the worktree") {
		t.Fatalf("a resume into the planted worktree exited %d, want a worktree-untrusted refusal:\n%s", code, stderr)
	}
	p, code = e.run("worktrees", "rm", id)
	c.assertNone(t, "ink worktrees rm")
	if code == 0 || !strings.Contains(p.stderr.String(), "ink cannot tell what") {
		t.Fatalf("ink worktrees rm exited %d, want a refusal:\n%s", code, p.stderr.String())
	}

	// The trap is armed: git run there the ordinary way follows the link.
	if out, err := e.gitTry(w.Path, "status", "--short"); err != nil {
		t.Fatalf("git status in the planted worktree: %v\n%s", err, out)
	}
	if !strings.Contains(c.runs(), "fsmonitor") {
		t.Fatalf("git status in the planted worktree did not run the planted core.fsmonitor; the test proves nothing (ran: %q)", c.runs())
	}
	os.Remove(c.path)

	p, code = e.run("worktrees", "rm", "--force", id)
	c.assertNone(t, "ink worktrees rm --force")
	if code != 0 {
		t.Fatalf("ink worktrees rm --force exited %d:\n%s", code, p.stderr.String())
	}
	wtAssertGone(t, e, w.Path, w.Branch)
	if _, err := os.Lstat(w.Path + ".git"); err == nil {
		t.Errorf("the worktree's git directory %s.git remains", w.Path)
	}
}

// hostileRepo plants, in e's repository, what a hostile repository ships:
// a tracked hostile.gitconfig that the repository's .git/config includes
// (as a project's README asks its users to do), naming core.fsmonitor,
// hooks, a pager, an external diff and filter, merge and diff drivers that
// .gitattributes applies to *.secret files, all of which append to c.
func hostileRepo(t *testing.T, e *env, c counter) {
	t.Helper()
	hooks := filepath.Join(e.dir, "hooks")
	cfg := strings.Join([]string{
		"[core]",
		"\tfsmonitor = " + c.cmd("fsmonitor"),
		"\thooksPath = " + hooks,
		"\tpager = " + c.cmd("pager") + "; cat",
		"[diff]",
		"\texternal = " + c.cmd("external-diff"),
		`[filter "evil"]`,
		"\tclean = " + c.cmd("clean-filter") + "; cat",
		"\tsmudge = " + c.cmd("smudge-filter") + "; cat",
		`[merge "evil"]`,
		"\tdriver = " + c.cmd("merge-driver") + "; false",
		`[diff "evil"]`,
		"\ttextconv = " + c.cmd("textconv") + "; cat",
		"",
	}, "\n")
	e.write("hostile.gitconfig", cfg)
	e.write(".gitattributes", "*.secret filter=evil merge=evil diff=evil\n")
	e.write("x.secret", "sealed\n")
	e.write(".gitignore", ".env\n")
	e.write(".worktreeinclude", ".env\n")
	e.write(".env", "TOKEN=local\n")
	for _, h := range []string{"post-checkout", "pre-commit", "commit-msg", "pre-merge-commit", "post-merge", "post-commit", "reference-transaction", "post-index-change"} {
		e.write(filepath.Join("hooks", h), "#!/bin/sh\n"+c.cmd(h)+"\n")
		if err := os.Chmod(filepath.Join(hooks, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.wtGit("add", "-A")
	e.wtGit("commit", "-q", "-m", "ship the project's git setup")
	e.wtGit("config", "include.path", "../hostile.gitconfig")
	if r := c.runs(); r != "" {
		t.Fatalf("setting up ran the planted programs already: %s", r)
	}
}

// TestWorktreeAttackRepositoryConfig: the user's repository configures
// programs (as a repository planted by an agent or shipped by a project
// would); ink's own git — `git worktree add`, the checkout, the
// .worktreeinclude copy, status, diff, the settle, ls --status, diff,
// merge, the removal of the merged worktree, rm --force and prune — never
// runs one. A merge that would need the repository's filter or merge
// driver is refused, naming it. A plain `git status` in the repository
// does run them, so the trap was armed.
func TestWorktreeAttackRepositoryConfig(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	c := newCounter(t)
	hostileRepo(t, e, c)

	_, rec := e.wtTask("edit", "echo more >> a.txt && git commit -qam more && git status --short && git diff HEAD~1 --stat")
	c.assertNone(t, "creating, settling and assessing a worktree")
	if rec.Worktree.Disposition != "kept-work" {
		t.Fatalf("worktree %+v, want kept-work", rec.Worktree)
	}
	if data, err := os.ReadFile(filepath.Join(rec.Worktree.Path, "x.secret")); err != nil || string(data) != "sealed\n" {
		t.Fatalf("x.secret in the worktree = %q, %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(rec.Worktree.Path, ".env")); err != nil || string(data) != "TOKEN=local\n" {
		t.Fatalf(".env, which .worktreeinclude names, in the worktree = %q, %v", data, err)
	}
	assertMergedInert(t, e, c, rec.ChildID)

	// A child that changes a file the repository's drivers handle: its
	// merge is refused, naming the driver, and changes nothing.
	_, rec = e.wtTask("secret", "echo opened >> x.secret && git commit -qam secret")
	c.assertNone(t, "a worktree child changing a *.secret file")
	head := e.wtGit("rev-parse", "HEAD")
	p, code := e.run("worktrees", "merge", rec.ChildID)
	c.assertNone(t, "a refused merge")
	if code == 0 || !strings.Contains(p.stderr.String(), "defines the filter driver evil, merge driver evil") || !strings.Contains(p.stderr.String(), "\n  x.secret") {
		t.Fatalf("ink worktrees merge of a driver-handled file exited %d, want a refusal naming the drivers:\n%s", code, p.stderr.String())
	}
	if e.wtGit("rev-parse", "HEAD") != head {
		t.Fatal("a refused merge moved HEAD")
	}
	_, clean := e.wtTask("look", "git status --short && git log --oneline -1")
	c.assertNone(t, "a worktree child that changes nothing")
	if clean.Worktree.Disposition != "removed" {
		t.Fatalf("an untouched worktree %+v, want it removed", clean.Worktree)
	}
	if p, code := e.run("worktrees", "rm", "--force", rec.ChildID); code != 0 {
		t.Fatalf("ink worktrees rm --force exited %d:\n%s", code, p.stderr.String())
	}
	c.assertNone(t, "ink worktrees rm --force")
	wtAssertGone(t, e, rec.Worktree.Path, rec.Worktree.Branch)
	if p, code := e.run("worktrees", "prune", "--include-resumable"); code != 0 {
		t.Fatalf("ink worktrees prune exited %d:\n%s", code, p.stderr.String())
	}
	c.assertNone(t, "ink worktrees prune")

	// The trap is armed for git run the ordinary way.
	os.WriteFile(filepath.Join(e.dir, "x.secret"), []byte("sealed\n"), 0o644)
	if out, err := e.gitTry(e.dir, "status", "--short"); err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if !strings.Contains(c.runs(), "fsmonitor") {
		t.Fatalf("git status in the repository did not run the planted core.fsmonitor; the test proves nothing (ran: %q)", c.runs())
	}
}

// TestWorktreeAttackNestedRepository: an agent allowed to commit in the
// checkout (--allow-git-writes) cannot change the repository's config or
// hooks, but it can make a repository of its own inside the checkout,
// configure core.fsmonitor, hooks and a filter there, stage it as a
// submodule, commit, and leave a file of it modified. ink's git — a
// worktree child's creation and settle, ls --status, diff and merge —
// never looks into that submodule, so runs none of it; the user's own
// `git status` does, so the trap was armed.
func TestWorktreeAttackNestedRepository(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	c := newCounter(t)
	hooks := filepath.Join(filepath.Dir(e.dir), "nested-hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "post-merge", "reference-transaction", "post-index-change"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+c.cmd(h)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plant := strings.Join([]string{
		`git init -q vendor`,
		`cd vendor`,
		`echo '* filter=evil diff=evil' > .gitattributes`,
		`echo data > f`,
		`git add -A`,
		`git commit -qm vendor`,
		`git config core.fsmonitor '` + c.cmd("fsmonitor") + `'`,
		`git config core.hooksPath ` + hooks,
		`git config filter.evil.clean '` + c.cmd("clean-filter") + `; cat'`,
		`git config filter.evil.smudge '` + c.cmd("smudge-filter") + `; cat'`,
		`git config diff.evil.textconv '` + c.cmd("textconv") + `; cat'`,
		`cd ..`,
		`git add vendor`,
		`git commit -qm 'vendor it'`,
		`echo more >> vendor/f`,
		`echo planted`,
	}, " && ")
	_, _, result := sandboxedTask(t, e, plant, "--allow-git-writes")
	if !strings.Contains(result, "planted") {
		t.Fatalf("the agent could not plant its repository:\n%s", result)
	}
	if got := e.wtGit("ls-files", "-s", "vendor"); !strings.HasPrefix(got, "160000 ") {
		t.Fatalf("vendor is not staged as a submodule: %q", got)
	}
	c.assertNone(t, "planting the nested repository")

	_, rec := e.wtTask("edit", "echo more >> a.txt && git commit -qam more")
	c.assertNone(t, "creating and settling a worktree beside a hostile submodule")
	if rec.Worktree.Disposition != "kept-work" {
		t.Fatalf("worktree %+v, want kept-work", rec.Worktree)
	}
	assertMergedInert(t, e, c, rec.ChildID)

	// The trap is armed: the user's git status looks into the submodule.
	if out, err := e.gitTry(e.dir, "status", "--short"); err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	if !strings.Contains(c.runs(), "fsmonitor") {
		t.Fatalf("git status in the repository did not run the submodule's core.fsmonitor; the test proves nothing (ran: %q)", c.runs())
	}
}

// TestWorktreeAttackObjectStore: a worktree child deletes the object store
// its git names, then tries the user's own store, another child's ink/*
// branch and the user's main. Only its own git directory suffers: every
// write into the user's repository is denied, the other branch and main do
// not move, and `git fsck` of the user's repository is clean.
func TestWorktreeAttackObjectStore(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	_, other := e.wtTask("other", "echo other > other.txt && git add other.txt && git commit -qm other")
	if other.Worktree.Disposition != "kept-work" {
		t.Fatalf("the other child's worktree %+v, want kept-work", other.Worktree)
	}
	e.wtGit("gc", "-q")
	packs, _ := filepath.Glob(filepath.Join(e.dir, ".git", "objects", "pack", "*.pack"))
	if len(packs) == 0 {
		t.Fatal("git gc left no pack to attack")
	}
	main, otherTip := e.wtGit("rev-parse", "main"), e.wtGit("rev-parse", other.Worktree.Branch)
	userGit := filepath.Join(e.dir, ".git")
	attack := strings.Join([]string{
		`rm -rf "$(git rev-parse --git-common-dir)/objects/pack"`,
		`store=$(cat "$(git rev-parse --git-common-dir)/objects/info/alternates")`,
		`rm -rf "$store/pack"; echo "pack: $?"`,
		`touch "$store/planted"; echo "touch: $?"`,
		`git --git-dir=` + userGit + ` update-ref refs/heads/` + other.Worktree.Branch + ` HEAD; echo "other branch: $?"`,
		`echo 0000000000000000000000000000000000000000 > ` + userGit + `/refs/heads/` + other.Worktree.Branch + `; echo "other ref file: $?"`,
		`git --git-dir=` + userGit + ` update-ref refs/heads/main HEAD; echo "main: $?"`,
		`git --git-dir=` + userGit + ` config core.fsmonitor true; echo "config: $?"`,
	}, "; ")
	_, _, result := sandboxedTask(t, e, attack, "--worktree", "--sandbox", "workspace-write")
	for _, step := range []string{"pack", "touch", "other branch", "other ref file", "main", "config"} {
		if strings.Contains(result, step+": 0") {
			t.Errorf("the attack step %q succeeded:\n%s", step, result)
		}
	}
	if !strings.Contains(result, "Permission denied") {
		t.Errorf("the attack was not denied:\n%s", result)
	}
	if after, _ := filepath.Glob(filepath.Join(e.dir, ".git", "objects", "pack", "*.pack")); len(after) != len(packs) {
		t.Errorf("the user's packs changed: %v, were %v", after, packs)
	}
	if got := e.wtGit("rev-parse", "main"); got != main {
		t.Errorf("main moved from %s to %s", main, got)
	}
	if got := e.wtGit("rev-parse", other.Worktree.Branch); got != otherTip {
		t.Errorf("%s moved from %s to %s", other.Worktree.Branch, otherTip, got)
	}
	if out, err := e.gitTry(e.dir, "fsck", "--strict", "--no-progress"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("git fsck of the user's repository: %v\n%s", err, out)
	}
	if out, err := e.gitTry(e.dir, "status", "--short"); err != nil {
		t.Errorf("the user's checkout is broken: %v\n%s", err, out)
	}
}

// TestWorktreeGrandchildCommits: a child that a worktree child starts
// without a worktree of its own works in that worktree, and commits there
// as its parent does; a grandchild with a worktree of its own branches
// from its parent's commit, which ink brings into the repository first.
func TestWorktreeGrandchildCommits(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	script := e.wtOutside("s.yaml", `rules:
  - when: {user: "^outer$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo outer > outer.txt && git add outer.txt && git commit -qm outer"}}]
  - when: {user: "^outer$", turn: 2}
    reply:
      calls: [{tool: task, args: {prompt: "shared"}}, {tool: task, args: {prompt: "own", worktree: true}}]
  - when: {user: "^outer$"}
    reply: {text: "outer done"}
  - when: {user: "^shared$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo shared > shared.txt && git add shared.txt && git commit -qm shared && echo committed"}}]
  - when: {user: "^own$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "test -f outer.txt && echo own > own.txt && git add own.txt && git commit -qm own && echo committed"}}]
  - when: {tool: bash, result: "committed"}
    reply: {text: "child committed"}
  - reply: {text: "child failed"}
`)
	p, code := e.run("task", "--worktree", "--max-depth", "2", "--sandbox", "workspace-write", "--model", "script:"+script, "outer")
	if code != 0 || !strings.HasPrefix(p.stdout.String(), "outer done") {
		t.Fatalf("ink task exited %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	outer := rec.Worktree
	if log := e.wtGit("log", "--format=%s", outer.Branch); log != "shared\nouter\ninitial" {
		t.Fatalf("%s in the repository holds %q, want the worktree child's commit and its shared child's", outer.Branch, log)
	}
	tr, err := session.Open(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}
	if out := wtToolOutputs(t, tr.Path); strings.Count(out, "child committed") != 2 {
		t.Fatalf("the grandchildren did not both commit:\n%s", out)
	}
	branches := strings.Fields(e.wtGit("branch", "--list", "ink/*", "--format=%(refname:short)"))
	if len(branches) != 2 {
		t.Fatalf("ink branches %v, want the worktree child's and its own grandchild's", branches)
	}
	for _, b := range branches {
		if b == outer.Branch {
			continue
		}
		if log := e.wtGit("log", "--format=%s", b); log != "own\nouter\ninitial" {
			t.Errorf("%s holds %q, want the grandchild's commit on top of its parent's", b, log)
		}
	}
}
