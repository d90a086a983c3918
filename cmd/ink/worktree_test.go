package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inkdev/ink/session"
)

// newWtRepo is newEnv whose working directory is a git repository on
// branch main with one commit holding files. Scripts go beside it (see
// outside), so the main checkout stays clean; git in the workers (which get
// no GIT_* variables) finds its identity in the test's HOME.
func newWtRepo(t *testing.T, files map[string]string) *env {
	t.Helper()
	e := newEnv(t)
	gitconfig := "[user]\n\tname = ink test\n\temail = test@ink.invalid\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(e.dir), "home", ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		e.write(name, body)
	}
	e.wtGit("init", "-q", "-b", "main")
	e.wtGit("add", "-A")
	e.wtGit("commit", "-q", "-m", "initial")
	return e
}

// wtGit runs git in the main checkout and returns its trimmed stdout.
func (e *env) wtGit(args ...string) string {
	e.t.Helper()
	return e.wtGitIn(e.dir, args...)
}

// wtGitIn runs git in dir with the test's environment.
func (e *env) wtGitIn(dir string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = e.vars
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		e.t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// wtOutside writes a file beside the repository (not in it) and returns its
// path.
func (e *env) wtOutside(name, body string) string {
	e.t.Helper()
	p := filepath.Join(filepath.Dir(e.dir), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// wtBashChild is a script whose agent runs command with bash on its first
// turn and then answers "done".
func wtBashChild(command string) string {
	q, _ := json.Marshal(command)
	return fmt.Sprintf("rules:\n  - when: {turn: 1}\n    reply:\n      calls: [{tool: bash, args: {command: %s}}]\n  - reply: {text: \"done\"}\n", q)
}

// wtLatestRecord returns the TaskRecord of the newest shell session of e.
func wtLatestRecord(t *testing.T, e *env) session.TaskRecord {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) == 0 {
		t.Fatalf("want a shell session, got %v (%v)", list, err)
	}
	tr, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			return rec
		}
	}
	t.Fatalf("shell session %s has no TaskRecord", list[0].Path)
	return session.TaskRecord{}
}

// wtTask runs `ink task --worktree` whose child runs command in its
// worktree; it returns the result on stdout and the TaskRecord.
func (e *env) wtTask(name, command string) (string, session.TaskRecord) {
	e.t.Helper()
	script := e.wtOutside(name+".yaml", wtBashChild(command))
	p, code := e.run("task", "--worktree", "--model", "script:"+script, name)
	if code != 0 {
		e.t.Fatalf("ink task exited %d\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(e.t, e)
	if rec.Worktree == nil || rec.Worktree.Path == "" || rec.Worktree.Branch != "ink/"+rec.ChildID {
		e.t.Fatalf("TaskRecord lacks the worktree outcome: %+v", rec)
	}
	return p.stdout.String(), rec
}

// wtTreeSnapshot hashes every file under dir except .git, with its mode.
func wtTreeSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Name() == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h := ""
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			h = hex.EncodeToString(sum[:])
		}
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, fi.Mode(), h))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// wtMainState is what a user checks of the main checkout: its files, HEAD,
// branch, status and every ref.
func (e *env) wtMainState() string {
	e.t.Helper()
	return strings.Join([]string{wtTreeSnapshot(e.t, e.dir), e.wtGit("rev-parse", "HEAD"), e.wtGit("symbolic-ref", "HEAD"),
		e.wtGit("status", "--porcelain", "--untracked-files=all"), e.wtGit("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main")}, "\n")
}

// wtRegistered reports whether git lists path as a worktree, and whether it
// is locked.
func (e *env) wtRegistered(path string) (ok, locked bool) {
	e.t.Helper()
	for _, block := range strings.Split(e.wtGit("worktree", "list", "--porcelain"), "\n\n") {
		if strings.HasPrefix(block, "worktree "+path+"\n") {
			return true, strings.Contains(block, "\nlocked")
		}
	}
	return false, false
}

// wtBranchExists reports whether refs/heads/branch exists in the main checkout.
func (e *env) wtBranchExists(branch string) bool {
	e.t.Helper()
	return e.wtGit("branch", "--list", branch) != ""
}

// wtAssertKept checks that the worktree, its branch and its registration are
// all there, and that the worktree is no longer locked (its worker is gone).
func wtAssertKept(t *testing.T, e *env, w *session.WorktreeOutcome) {
	t.Helper()
	if fi, err := os.Stat(w.Path); err != nil || !fi.IsDir() {
		t.Errorf("worktree directory %s is gone: %v", w.Path, err)
	}
	if !e.wtBranchExists(w.Branch) {
		t.Errorf("branch %s is gone", w.Branch)
	}
	ok, locked := e.wtRegistered(w.Path)
	if !ok {
		t.Errorf("%s is no longer a registered worktree", w.Path)
	}
	if locked {
		t.Errorf("%s is still locked after its worker ended", w.Path)
	}
}

// wtAssertGone checks that nothing of a worktree is left: directory, branch,
// registration, and its record file.
func wtAssertGone(t *testing.T, e *env, path, branch string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("worktree directory %s still exists", path)
	}
	if _, err := os.Lstat(path + ".json"); err == nil {
		t.Errorf("worktree record %s.json still exists", path)
	}
	if e.wtBranchExists(branch) {
		t.Errorf("branch %s still exists", branch)
	}
	if ok, _ := e.wtRegistered(path); ok {
		t.Errorf("%s is still registered", path)
	}
}

// TestWorktreeUntouchedRemoved: a worktree child that only looks around
// works in its own worktree on its own branch, in the subdirectory its
// parent was in; afterwards its directory, branch and registration are all
// gone, the result says so, and the main checkout is as it was.
func TestWorktreeUntouchedRemoved(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "sub/b.txt": "b\n"})
	before := e.wtMainState()
	script := e.wtOutside("s.yaml", `rules:
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "git rev-parse --abbrev-ref HEAD; pwd; cat b.txt"}}]
  - when: {tool: bash, result: "^ink/[0-9a-z]+\n/.*/worktrees/work-[0-9a-f]{8}/[0-9a-z]+/sub\nb\n"}
    reply: {text: "I worked in my own worktree"}
  - reply: {text: "I did not work in a worktree"}
`)
	p, code := e.run("task", "--worktree", "--cwd", filepath.Join(e.dir, "sub"), "--model", "script:"+script, "look around")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	out := p.stdout.String()
	if !strings.HasPrefix(out, "I worked in my own worktree\n") {
		t.Fatalf("the child did not run in its worktree's sub directory on its branch:\n%s", out)
	}
	list, err := session.ListSessions(e.home, filepath.Join(e.dir, "sub"))
	if err != nil || len(list) != 1 {
		t.Fatalf("want one shell session, got %v (%v)", list, err)
	}
	tr, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	var rec session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, _ = session.ParseTaskRecord(m.TaskRecord)
		}
	}
	w := rec.Worktree
	if w == nil || w.Disposition != "removed" || w.Branch != "ink/"+rec.ChildID || filepath.Base(w.Path) != rec.ChildID {
		t.Fatalf("TaskRecord worktree = %+v (child %s), want removed", w, rec.ChildID)
	}
	if rec.Cwd != filepath.Join(w.Path, "sub") {
		t.Errorf("TaskRecord cwd = %s, want %s", rec.Cwd, filepath.Join(w.Path, "sub"))
	}
	want := fmt.Sprintf("[task] no changes: worktree %s and branch %s removed\n", w.Path, w.Branch)
	if !strings.Contains(out, want) {
		t.Errorf("result does not say the worktree was removed (want %q):\n%s", want, out)
	}
	wtAssertGone(t, e, w.Path, w.Branch)
	if _, err := os.Lstat(filepath.Dir(w.Path)); err == nil {
		t.Errorf("the repository's directory %s under INK_HOME/worktrees is left behind", filepath.Dir(w.Path))
	}
	if got := e.wtGit("worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("git still lists other worktrees:\n%s", got)
	}
	if after := e.wtMainState(); after != before {
		t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWorktreeKeepsWork: whatever work a child leaves (an untracked file,
// a staged change, a modified file, a commit, an empty commit, a commit then
// a reset to the baseline), its worktree, branch and registration are kept,
// unlocked, and the result says what was kept and why; the main checkout is
// untouched.
func TestWorktreeKeepsWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, command string
		says          []string // each must appear in the result line's parentheses
		diff          string   // must appear in `ink worktrees diff`
	}{
		{"untracked file", "echo 'a note' > notes.txt", []string{"uncommitted changes (untracked); untracked: notes.txt"}, "+a note"},
		{"staged change", "echo staged >> a.txt && git add a.txt", []string{"uncommitted changes (staged); 1 file changed, 1 insertion(+)"}, "+staged"},
		{"modified file", "echo modified >> a.txt", []string{"uncommitted changes (modified); 1 file changed, 1 insertion(+)"}, "+modified"},
		{"commit", "echo committed >> a.txt && git commit -qam more", []string{"1 commit since baseline ", "; 1 file changed, 1 insertion(+)"}, "+committed"},
		{"empty commit", "git commit -q --allow-empty -m nothing", []string{"1 commit since baseline "}, ""},
		{"commit then reset to baseline", "echo lost >> a.txt && git commit -qam soon-lost && git reset -q --hard HEAD~1", []string{"moved off baseline ", " and back"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
			before := e.wtMainState()
			out, rec := e.wtTask("work", tc.command)
			w := rec.Worktree
			if w.Disposition != "kept-work" {
				t.Fatalf("disposition %q (%s), want kept-work\n%s", w.Disposition, w.Detail, out)
			}
			prefix := fmt.Sprintf("[task] changes kept in worktree %s on branch %s (", w.Path, w.Branch)
			suffix := fmt.Sprintf(") — review with `ink worktrees diff %s`, merge with `ink worktrees merge %s`", rec.ChildID, rec.ChildID)
			line := ""
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "[task] ") {
					line = l
				}
			}
			if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, suffix) {
				t.Fatalf("result line %q, want %q…%q", line, prefix, suffix)
			}
			for _, s := range tc.says {
				if !strings.Contains(line, s) {
					t.Errorf("result line %q does not say %q", line, s)
				}
			}
			wtAssertKept(t, e, w)
			if after := e.wtMainState(); after != before {
				t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if tc.diff != "" {
				p, code := e.run("worktrees", "diff", rec.ChildID)
				if code != 0 || !strings.Contains(p.stdout.String(), tc.diff) {
					t.Errorf("ink worktrees diff exited %d and lacks %q:\n%s\n%s", code, tc.diff, p.stdout.String(), p.stderr.String())
				}
			}
		})
	}
}

// TestWorktreeUnknownKeptForSafety: a child that deletes its worktree's
// .git file, switches branch or detaches HEAD leaves a worktree ink cannot
// judge: it is kept for safety, nothing is deleted, and the result says why.
func TestWorktreeUnknownKeptForSafety(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, command, why string }{
		{".git file deleted", "rm .git", ".git link is missing or broken"},
		{"branch switched", "git switch -q -c elsewhere", `is registered on "elsewhere", not on ink/`},
		{"detached HEAD", "git checkout -q --detach", "has a detached HEAD, not on ink/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "dir/b.txt": "b\n"})
			before := e.wtMainState()
			out, rec := e.wtTask("break", tc.command)
			w := rec.Worktree
			if w.Disposition != "kept-unknown" || !strings.Contains(w.Detail, tc.why) {
				t.Fatalf("worktree outcome %+v, want kept-unknown saying %q", w, tc.why)
			}
			want := "[task] worktree kept for safety: "
			if !strings.Contains(out, want) || !strings.Contains(out, tc.why) || !strings.Contains(out, ". Nothing was deleted. Inspect "+w.Path+"\n") {
				t.Fatalf("result does not say the worktree was kept for safety and why:\n%s", out)
			}
			for _, f := range []string{"a.txt", "dir/b.txt"} {
				if _, err := os.Stat(filepath.Join(w.Path, f)); err != nil {
					t.Errorf("%s was deleted from the kept worktree: %v", f, err)
				}
			}
			if !e.wtBranchExists(w.Branch) {
				t.Errorf("branch %s was deleted", w.Branch)
			}
			if ok, _ := e.wtRegistered(w.Path); !ok {
				t.Errorf("%s was unregistered", w.Path)
			}
			if after := e.wtMainState(); after != before {
				t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
