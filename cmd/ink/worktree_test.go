package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

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
	return firstRecord(t, list[0].Path)
}

// wtTask runs `ink task --worktree` whose child runs command in its
// worktree (with extra flags); it returns the result on stdout and the
// TaskRecord.
func (e *env) wtTask(name, command string, flags ...string) (string, session.TaskRecord) {
	e.t.Helper()
	script := e.wtOutside(name+".yaml", wtBashChild(command))
	p, code := e.run(append(append([]string{"task", "--worktree"}, flags...), "--model", "script:"+script, name)...)
	if code != 0 {
		e.t.Fatalf("ink task exited %d\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(e.t, e)
	w := rec.Worktree
	if w == nil || w.Path == "" || w.Branch != "ink/"+rec.ChildID {
		e.t.Fatalf("TaskRecord lacks the worktree outcome: %+v", rec)
	}
	// The progress on stderr says what became of the worktree too.
	said := map[string]string{
		"removed":      "; worktree removed (no changes)",
		"kept-work":    fmt.Sprintf("; worktree kept on branch %s at %s (review with `ink worktrees diff %s`)", w.Branch, w.Path, rec.ChildID),
		"kept-unknown": "; worktree kept for safety at " + w.Path + ": ",
	}[w.Disposition]
	if said == "" || !strings.Contains(p.stderr.String(), said) {
		e.t.Fatalf("stderr does not tell what became of the worktree (%s); want %q:\n%s", w.Disposition, said, p.stderr.String())
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

// cmdWorktreeID is the testscript command `worktreeid VAR [HOME]`: it sets
// VAR to the child id of the only worktree under HOME/worktrees (default
// $INK_HOME).
func cmdWorktreeID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: worktreeid VAR [INK_HOME]")
	}
	home := ts.Getenv("INK_HOME")
	if len(args) == 2 {
		home = args[1]
	}
	dirs, _ := filepath.Glob(filepath.Join(home, "worktrees", "*", "*"))
	var ids []string
	for _, d := range dirs {
		// <id>.git beside a worktree is its git directory, not a worktree.
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !strings.Contains(filepath.Base(d), ".") {
			ids = append(ids, filepath.Base(d))
		}
	}
	if len(ids) != 1 {
		ts.Fatalf("worktreeid: %d worktrees under %s, want 1: %v", len(ids), home, ids)
	}
	ts.Setenv(args[0], ids[0])
}

// sameLines reports whether a and b hold the same lines in any order.
func sameLines(a, b string) bool {
	la, lb := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	sort.Strings(la)
	sort.Strings(lb)
	return strings.Join(la, "\n") == strings.Join(lb, "\n")
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
// parent was in, and sees the committed file, not the parent's uncommitted
// edit; afterwards its directory, branch and registration are all
// gone, the result says so, and the main checkout is as it was.
func TestWorktreeUntouchedRemoved(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "sub/b.txt": "b\n"})
	e.write("sub/b.txt", "the parent's uncommitted edit\n")
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
			merge := "ink worktrees merge " + rec.ChildID
			if !strings.Contains(tc.name, "commit") {
				merge = "ink worktrees merge --commit " + rec.ChildID
			}
			suffix := fmt.Sprintf(") — review with `ink worktrees diff %s`, merge with `%s`", rec.ChildID, merge)
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
	// Creating a branch of its own is beyond what the default sandbox
	// lets a worktree child write; here the child may do it.
	cases := []struct {
		name, command, why string
		flags              []string
	}{
		{".git file deleted", "rm .git", ".git link is missing or broken", nil},
		{"branch switched", "git switch -q -c elsewhere", `is on "elsewhere", not on ink/`, []string{"--sandbox", "danger-full-access"}},
		{"detached HEAD", "git checkout -q --detach", "has a detached HEAD, not on ink/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "dir/b.txt": "b\n"})
			before := e.wtMainState()
			out, rec := e.wtTask("break", tc.command, tc.flags...)
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

// wtChildren returns the TaskRecords in the main transcript of an `ink run
// --json`, in call order.
func wtChildren(t *testing.T, evs []map[string]any) (*session.Transcript, []session.TaskRecord) {
	t.Helper()
	ends := ofType(evs, "run.end")
	if len(ends) != 1 {
		t.Fatalf("want one run.end, got %v", ends)
	}
	tr, err := session.Open(ends[0]["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var recs []session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	return tr, recs
}

// wtToolOutputs returns the text of every tool result in a transcript.
func wtToolOutputs(t *testing.T, path string) string {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			b.WriteString(r.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestWorktreeParallelSameFile: two worktree children edit and commit the
// same file at the same time; each sees only its own edit, both worktrees
// are kept, the main checkout is untouched, `ink worktrees merge` of the
// first succeeds and of the second refuses, naming the conflicting file and
// changing nothing.
func TestWorktreeParallelSameFile(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"shared.txt": "base\n", "other.txt": "x\n"})
	syncDir := filepath.Join(filepath.Dir(e.dir), "sync")
	if err := os.Mkdir(syncDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each child commits its edit, then waits until the other has committed
	// too before it reads the file back: the two edits overlap for sure.
	child := func(me, other string) string {
		q, _ := json.Marshal(fmt.Sprintf("printf '%s\\n' > shared.txt && git commit -qam %s && touch %s/%s && "+
			"for i in $(seq 600); do [ -e %s/%s ] && break; sleep 0.1; done && echo \"sees: $(cat shared.txt)\"", me, me, syncDir, me, syncDir, other))
		return string(q)
	}
	script := e.wtOutside("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "edit one", worktree: true}}
        - {tool: task, args: {prompt: "edit two", worktree: true}}
  - when: {depth: 0, tool: task}
    reply: {text: "both children edited shared.txt"}
  - when: {depth: 1, user: "edit one", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: `+child("one", "two")+`}}]
  - when: {depth: 1, user: "edit two", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: `+child("two", "one")+`}}]
  - when: {depth: 1}
    reply: {text: "committed"}
`)
	before := e.wtMainState()
	// The children meet in a directory outside their worktrees.
	p, code := e.run("run", "--json", "--sandbox", "danger-full-access", "--model", "script:"+script, "edit shared.txt twice")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	_, recs := wtChildren(t, evs)
	if len(recs) != 2 {
		t.Fatalf("want two TaskRecords, got %+v", recs)
	}
	want := []string{"one", "two"}
	for i, rec := range recs {
		w := rec.Worktree
		if rec.Status != "completed" || w == nil || w.Disposition != "kept-work" {
			t.Fatalf("child %d: status %s, worktree %+v; want completed and kept-work", i+1, rec.Status, w)
		}
		wtAssertKept(t, e, w)
		out := wtToolOutputs(t, rec.Transcript.Path)
		if !strings.Contains(out, "sees: "+want[i]+"\n") || strings.Contains(out, "sees: "+want[1-i]) {
			t.Errorf("child %d should see only its own edit %q; its bash printed:\n%s", i+1, want[i], out)
		}
		data, err := os.ReadFile(filepath.Join(w.Path, "shared.txt"))
		if err != nil || string(data) != want[i]+"\n" {
			t.Errorf("shared.txt in %s = %q (%v), want %q", w.Path, data, err, want[i]+"\n")
		}
	}
	if recs[0].Worktree.Path == recs[1].Worktree.Path {
		t.Fatalf("both children got the same worktree %s", recs[0].Worktree.Path)
	}
	if after := e.wtMainState(); after != before {
		t.Fatalf("the main checkout changed while the children worked:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Merge the first: it lands on main with a merge commit.
	first, second := recs[0], recs[1]
	mp, code := e.run("worktrees", "merge", first.ChildID)
	if code != 0 {
		t.Fatalf("merge of the first child exited %d\nstdout:\n%s\nstderr:\n%s", code, mp.stdout.String(), mp.stderr.String())
	}
	if !strings.Contains(mp.stdout.String(), "merged "+first.Worktree.Branch+" into main") {
		t.Errorf("merge output = %q", mp.stdout.String())
	}
	if data, _ := os.ReadFile(filepath.Join(e.dir, "shared.txt")); string(data) != "one\n" {
		t.Errorf("after merging the first child shared.txt = %q, want \"one\\n\"", data)
	}
	if msg := e.wtGit("log", "-1", "--format=%s"); !strings.Contains(msg, first.Worktree.Branch) {
		t.Errorf("HEAD after the merge is %q, want a merge of %s", msg, first.Worktree.Branch)
	}
	if st := e.wtGit("status", "--porcelain"); st != "" {
		t.Errorf("the main checkout is not clean after the merge:\n%s", st)
	}

	// Merge the second: refused (exit 3) with the conflicting file, and
	// nothing changes.
	merged := e.wtMainState()
	mp, code = e.run("worktrees", "merge", second.ChildID)
	if code != 3 {
		t.Fatalf("merge of the second child exited %d, want 3\nstdout:\n%s\nstderr:\n%s", code, mp.stdout.String(), mp.stderr.String())
	}
	stderr := mp.stderr.String()
	if !strings.Contains(stderr, "would conflict") || !strings.Contains(stderr, "shared.txt") || strings.Contains(stderr, "other.txt") {
		t.Errorf("refusal does not name the conflicting file:\n%s", stderr)
	}
	if after := e.wtMainState(); after != merged {
		t.Errorf("a refused merge changed the main checkout:\nbefore:\n%s\nafter:\n%s", merged, after)
	}
	wtAssertKept(t, e, second.Worktree)
}

// TestWorktreesCommands: `ink worktrees ls [--json] | diff | merge | rm
// [--force] | prune` on the worktrees real children left, refusals
// included: a dirty main checkout (files listed), unmerged work without
// --force, a worktree whose supervisor still runs; prune removes only the
// clean leftover of a child whose supervisor was killed.
func TestWorktreesCommands(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	if p, code := e.run("worktrees", "ls"); code != 0 || p.stdout.String() != "no worktrees\n" {
		t.Fatalf("ls with no worktrees: exit %d, %q", code, p.stdout.String())
	}
	if p, code := e.run("worktrees", "diff", "nosuchchild"); code != 2 || !strings.Contains(p.stderr.String(), "no worktree for child \"nosuchchild\"; list them with `ink worktrees ls`") {
		t.Fatalf("diff of an unknown id: exit %d, stderr %q", code, p.stderr.String())
	}
	_, a := e.wtTask("feature", "echo feature > feature.txt && git add feature.txt && git commit -qm feature")
	_, b := e.wtTask("draft", "echo change >> a.txt && git commit -qam change && echo draft > notes.txt")

	// ls: one row per worktree with its repository, what git's worktree
	// list tells (the branch moved: "committed"), lock and transcript;
	// --status adds the assessment, ahead/behind and dirty.
	lsRows := func(args ...string) map[string]string {
		t.Helper()
		p, code := e.run(append([]string{"worktrees", "ls"}, args...)...)
		if code != 0 {
			t.Fatalf("ls %v exit %d: %s", args, code, p.stderr.String())
		}
		rows := map[string]string{}
		for _, r := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
			f := strings.Fields(r)
			rows[f[0]] = strings.Join(f, " ")
		}
		return rows
	}
	want := map[string]string{
		"CHILD":   "CHILD REPOSITORY STATE BRANCH LOCK TRANSCRIPT PATH",
		a.ChildID: fmt.Sprintf("%s %s committed %s no completed %s", a.ChildID, e.dir, a.Worktree.Branch, a.Worktree.Path),
		b.ChildID: fmt.Sprintf("%s %s committed %s no completed %s", b.ChildID, e.dir, b.Worktree.Branch, b.Worktree.Path),
	}
	if got := lsRows(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ls rows:\n%v\nwant:\n%v", got, want)
	}
	want = map[string]string{
		"CHILD":   "CHILD REPOSITORY STATE BRANCH AHEAD/BEHIND DIRTY LOCK TRANSCRIPT PATH",
		a.ChildID: fmt.Sprintf("%s %s work-present %s 1/0 false no completed %s", a.ChildID, e.dir, a.Worktree.Branch, a.Worktree.Path),
		b.ChildID: fmt.Sprintf("%s %s work-present %s 1/0 true no completed %s", b.ChildID, e.dir, b.Worktree.Branch, b.Worktree.Path),
	}
	if got := lsRows("--status"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ls --status rows:\n%v\nwant:\n%v", got, want)
	}
	p, code := e.run("worktrees", "ls", "--json")
	if code != 0 || strings.Count(p.stdout.String(), "\n") != 2 || strings.Contains(p.stdout.String(), `"assessment"`) || strings.Contains(p.stdout.String(), `"dirty"`) ||
		!strings.Contains(p.stdout.String(), `"repoRoot":"`+e.dir+`"`) || !strings.Contains(p.stdout.String(), `"child":{"transcript":"`) {
		t.Fatalf("ls --json without --status: exit %d\n%s", code, p.stdout.String())
	}
	p, code = e.run("worktrees", "ls", "--status", "--json")
	if code != 0 {
		t.Fatalf("ls --json exit %d: %s", code, p.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(p.stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("ls --json printed %d lines, want 2:\n%s", len(lines), p.stdout.String())
	}
	for _, l := range lines {
		var info struct {
			ChildID string `json:"childId"`
			Record  struct {
				Path, Branch, Baseline, RepoRoot string
			} `json:"record"`
			Assessment struct {
				State string `json:"state"`
			} `json:"assessment"`
			Ahead, Behind int
			Dirty, Locked bool
		}
		if err := json.Unmarshal([]byte(l), &info); err != nil {
			t.Fatalf("ls --json line %q: %v", l, err)
		}
		want := map[string]session.TaskRecord{a.ChildID: a, b.ChildID: b}[info.ChildID]
		if want.Worktree == nil || info.Record.Path != want.Worktree.Path || info.Record.Branch != want.Worktree.Branch ||
			info.Assessment.State != "work-present" || info.Ahead != 1 || info.Behind != 0 || info.Locked || info.Dirty != (info.ChildID == b.ChildID) ||
			info.Record.RepoRoot != e.dir || info.Record.Baseline != e.wtGit("rev-parse", "HEAD") {
			t.Errorf("ls --json line %s does not describe the child's worktree %+v", l, want.Worktree)
		}
	}

	// diff: committed and untracked changes against the baseline.
	p, code = e.run("worktrees", "diff", b.ChildID)
	if code != 0 {
		t.Fatalf("diff exit %d: %s", code, p.stderr.String())
	}
	for _, want := range []string{"+++ b/a.txt", "+change", "+++ b/notes.txt", "+draft"} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, p.stdout.String())
		}
	}

	// merge refuses while the main checkout has uncommitted changes, or an
	// untracked file the merge would overwrite, listing the files.
	e.write("a.txt", "hello\nlocal edit\n")
	e.write("b.txt", "new\n")
	e.wtGit("add", "b.txt")
	dirty := e.wtMainState()
	p, code = e.run("worktrees", "merge", a.ChildID)
	if code != 3 || !strings.Contains(p.stderr.String(), "has uncommitted changes; commit or stash them first:\n  a.txt\n  b.txt\n") {
		t.Fatalf("merge into a dirty checkout: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	if after := e.wtMainState(); after != dirty {
		t.Fatalf("a refused merge changed the main checkout")
	}
	e.wtGit("reset", "-q", "--hard")
	e.write("feature.txt", "my own feature notes\n")
	dirty = e.wtMainState()
	p, code = e.run("worktrees", "merge", a.ChildID)
	if code != 3 || !strings.Contains(p.stderr.String(), "would overwrite untracked or ignored files") || !strings.Contains(p.stderr.String(), "\n  feature.txt") {
		t.Fatalf("merge over an untracked file: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	if after := e.wtMainState(); after != dirty {
		t.Fatalf("a refused merge changed the main checkout")
	}
	os.Remove(filepath.Join(e.dir, "feature.txt"))
	if p, code = e.run("worktrees", "merge", "--json", a.ChildID); code != 0 {
		t.Fatalf("merge exit %d: %s", code, p.stderr.String())
	}
	var merged struct {
		ChildID, Branch, Into, Commit, Shortstat string
		Removed                                  bool
	}
	if err := json.Unmarshal(p.stdout.Bytes(), &merged); err != nil || merged.ChildID != a.ChildID || merged.Branch != a.Worktree.Branch || merged.Into != "main" ||
		merged.Commit != e.wtGit("rev-parse", "HEAD") || merged.Shortstat != "1 file changed, 1 insertion(+)" || !merged.Removed {
		t.Fatalf("merge --json printed %q (%v)", p.stdout.String(), err)
	}
	if data, err := os.ReadFile(filepath.Join(e.dir, "feature.txt")); err != nil || string(data) != "feature\n" {
		t.Fatalf("the merge did not bring feature.txt: %q %v", data, err)
	}
	// Everything in a is merged: its worktree and branch went with the merge.
	wtAssertGone(t, e, a.Worktree.Path, a.Worktree.Branch)

	// rm refuses unmerged work without --force.
	p, code = e.run("worktrees", "rm", b.ChildID)
	if code != 3 || !strings.Contains(p.stderr.String(), "holds unmerged work") || !strings.Contains(p.stderr.String(), "ink worktrees rm --force "+b.ChildID) ||
		!strings.Contains(p.stderr.String(), "ink worktrees merge --commit "+b.ChildID) {
		t.Fatalf("rm of unmerged work: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	wtAssertKept(t, e, b.Worktree)

	// A worktree whose supervisor runs is refused even with --force.
	ready := filepath.Join(filepath.Dir(e.dir), "ready")
	live := e.wtOutside("live.yaml", wtBashChild("touch "+ready+" && sleep 300"))
	run := e.start("task", "--json", "--worktree", "--sandbox", "danger-full-access", "--model", "script:"+live, "wait")
	start := waitForEvent(t, run, "task.start")
	path, worker := start["worktree"].(string), int(start["pid"].(float64))
	liveID := filepath.Base(path)
	waitFor(t, run, func(m map[string]any) bool { return m["type"] == "tool.start" })
	p, code = e.run("worktrees", "rm", "--force", liveID)
	if code != 3 || !strings.Contains(p.stderr.String(), fmt.Sprintf("locked by running process %d", run.cmd.Process.Pid)) {
		t.Fatalf("rm --force of a live worktree: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a refused rm removed %s: %v", path, err)
	}
	p, _ = e.run("worktrees", "ls")
	if !strings.Contains(p.stdout.String(), fmt.Sprintf("pid %d (live)", run.cmd.Process.Pid)) {
		t.Errorf("ls does not show the live lock:\n%s", p.stdout.String())
	}
	wantPrune := fmt.Sprintf("kept %s: holds work (1 commit since baseline %s; 1 file changed, 1 insertion(+); untracked: notes.txt): review it with `ink worktrees diff %s`, merge it with `ink worktrees merge --commit %s`\n"+
		"kept %s: in use by running process %d (ink %s pid %d)\n", b.Worktree.Path, e.wtGit("rev-parse", "--short=12", b.Worktree.Branch+"~1"), b.ChildID, b.ChildID, path, run.cmd.Process.Pid, liveID, run.cmd.Process.Pid)
	if p, code = e.run("worktrees", "prune"); code != 0 || !sameLines(p.stdout.String(), wantPrune) {
		t.Fatalf("prune with a live and a work-present worktree: exit %d, stderr %s, stdout\n%s\nwant\n%s", code, p.stderr.String(), p.stdout.String(), wantPrune)
	}

	// Kill the supervisor: the worker stops, the clean worktree is left
	// locked by a dead pid; prune removes it and keeps the one with work.
	if err := syscall.Kill(run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	run.wait(t, time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	for alive(worker) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(worker) {
		t.Fatalf("worker %d outlived its supervisor", worker)
	}
	p, _ = e.run("worktrees", "ls")
	if !strings.Contains(p.stdout.String(), fmt.Sprintf("pid %d (dead)", run.cmd.Process.Pid)) {
		t.Errorf("ls does not show the dead lock:\n%s", p.stdout.String())
	}
	// Its child was interrupted, so it can be resumed: prune keeps its
	// worktree until asked to remove it, and then says what is lost.
	type pruneEntry struct {
		ChildID, Path, Why, Lost string
		Resumable                bool
	}
	var pruned struct{ Removed, Kept []pruneEntry }
	prune := func(args ...string) {
		t.Helper()
		p, code := e.run(append([]string{"worktrees", "prune", "--json"}, args...)...)
		pruned.Removed, pruned.Kept = nil, nil
		if err := json.Unmarshal(p.stdout.Bytes(), &pruned); code != 0 || err != nil {
			t.Fatalf("prune %v: exit %d, stdout %q (%v), stderr %s", args, code, p.stdout.String(), err, p.stderr.String())
		}
	}
	prune()
	if len(pruned.Removed) != 0 || len(pruned.Kept) != 2 {
		t.Fatalf("prune with a resumable child: %+v", pruned)
	}
	for _, k := range pruned.Kept {
		if k.ChildID == liveID && (!k.Resumable || !strings.Contains(k.Why, "can still be resumed (its last attempt ended interrupted)")) {
			t.Errorf("prune does not say the child can be resumed: %+v", k)
		}
	}
	if _, err := os.Stat(path); err != nil || !e.wtBranchExists("ink/"+liveID) {
		t.Fatalf("prune removed the resumable child's worktree or branch: %v", err)
	}
	prune("--include-resumable")
	if len(pruned.Removed) != 1 || pruned.Removed[0].Path != path || !strings.Contains(pruned.Removed[0].Lost, "child "+liveID+" can no longer be resumed (its last attempt ended interrupted") {
		t.Fatalf("prune --include-resumable: %+v", pruned)
	}
	wtAssertGone(t, e, path, "ink/"+liveID)
	wtAssertKept(t, e, b.Worktree)

	// rm --force drops unmerged work: directory, branch and registration,
	// and names the dropped tip so that it can be recovered.
	tip := e.wtGit("rev-parse", b.Worktree.Branch)
	wantRm := fmt.Sprintf("removed %s and branch %s\ndiscarded its uncommitted files: ?? notes.txt\nits tip was %s; recover it with `git -C %s branch %s %s` before git collects it\n", b.Worktree.Path, b.Worktree.Branch, tip, e.dir, b.Worktree.Branch, tip)
	if p, code = e.run("worktrees", "rm", "--force", b.ChildID); code != 0 || p.stdout.String() != wantRm {
		t.Fatalf("rm --force: exit %d, stdout %q, want %q; stderr %s", code, p.stdout.String(), wantRm, p.stderr.String())
	}
	wtAssertGone(t, e, b.Worktree.Path, b.Worktree.Branch)
	if p, code = e.run("worktrees", "ls"); code != 0 || p.stdout.String() != "no worktrees\n" {
		t.Fatalf("ls after removing everything: %q", p.stdout.String())
	}
}

// wtFakeOpenAI is a Chat Completions server that answers every request
// with the text "done" and keeps each request's system message.
func wtFakeOpenAI(t *testing.T) (url string, systems func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		for _, m := range req.Messages {
			if m.Role != "system" {
				continue
			}
			var text string
			if json.Unmarshal(m.Content, &text) != nil {
				var parts []struct {
					Text string `json:"text"`
				}
				json.Unmarshal(m.Content, &parts)
				for _, p := range parts {
					text += p.Text
				}
			}
			mu.Lock()
			seen = append(seen, text)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake","choices":[{"index":0,"delta":{"role":"assistant","content":"done"},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestWorktreeSystemPrompt: the system prompt a worktree child's model
// receives says where it works, that the parent's uncommitted changes are
// not there, and to commit on its branch; the launch record fingerprints
// exactly that prompt and records the worktree.
func TestWorktreeSystemPrompt(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	url, systems := wtFakeOpenAI(t)
	e.vars = append(e.vars, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+url+"/v1")
	p, code := e.run("task", "--worktree", "--model", "openai/fake", "look around")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	w := rec.Worktree
	if w == nil || w.Disposition != "removed" {
		t.Fatalf("TaskRecord worktree = %+v, want removed", w)
	}
	got := systems()
	if len(got) != 1 {
		t.Fatalf("the fake provider saw %d system prompts, want 1", len(got))
	}
	system := got[0]
	baseline := e.wtGit("rev-parse", "HEAD")
	for _, want := range []string{
		"\n# Worktree\nYou work in your own git worktree at " + w.Path + ", on branch " + w.Branch + ", created from the parent's HEAD (" + baseline[:12] + ").",
		"The parent's uncommitted changes are not there.",
		"Paths you were given refer to the parent checkout " + e.dir + "; translate them to the worktree.",
		"Commit your work on your branch before you finish",
	} {
		if !strings.Contains(system, want) {
			t.Errorf("the child's system prompt lacks %q:\n%s", want, system)
		}
	}
	ctr, err := session.Open(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}
	l := ctr.Header.Launch
	if l == nil || l.Worktree == nil {
		t.Fatalf("launch record without a worktree: %+v", l)
	}
	if l.System.SHA256 != session.SystemFingerprint(system) {
		t.Errorf("launch record fingerprints another system prompt than the model received")
	}
	if l.Worktree.Path != w.Path || l.Worktree.Branch != w.Branch || l.Worktree.Baseline != baseline || l.Worktree.RepoRoot != e.dir ||
		!strings.HasPrefix(l.Worktree.CreationReflog, baseline+" ") || l.Cwd != w.Path {
		t.Errorf("launch record worktree %+v (cwd %s) does not match the worktree %+v at %s", l.Worktree, l.Cwd, w, baseline)
	}
}

// TestWorktreeFromProfile: an agent profile with `worktree: true` gets a
// worktree without the flag; --worktree=false overrides it.
func TestWorktreeFromProfile(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	if err := os.MkdirAll(filepath.Join(e.home, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "agents", "fixer.md"), []byte("---\nname: fixer\ndescription: fixes bugs on its own branch\nworktree: true\n---\nFix the bug and commit.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.wtOutside("s.yaml", wtBashChild("echo fixed >> a.txt && git commit -qam fix"))
	p, code := e.run("task", "--json", "--agent", "fixer", "--model", "script:"+script, "fix it")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	start := ofType(evs, "task.start")
	if len(start) != 1 || !strings.Contains(start[0]["worktree"].(string), "/worktrees/work-") {
		t.Fatalf("task.start = %v, want a worktree", start)
	}
	end := ofType(evs, "task.end")
	wt, _ := end[0]["worktree"].(map[string]any)
	if len(end) != 1 || wt["disposition"] != "kept-work" || wt["path"] != start[0]["worktree"] {
		t.Fatalf("task.end = %v, want the worktree kept with the fix", end)
	}
	if data, _ := os.ReadFile(filepath.Join(e.dir, "a.txt")); string(data) != "hello\n" {
		t.Errorf("the profile's child edited the main checkout: a.txt = %q", data)
	}
	if msg := e.wtGitIn(wt["path"].(string), "log", "-1", "--format=%s"); msg != "fix" {
		t.Errorf("the fix is not committed on the child's branch: %q", msg)
	}

	// --worktree=false wins over the profile: the child edits the checkout
	// (and commits there, which --allow-git-writes lets it).
	p, code = e.run("task", "--json", "--agent", "fixer", "--worktree=false", "--allow-git-writes", "--model", "script:"+script, "fix it here")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	if start := ofType(events(t, p.stdout.Bytes()), "task.start"); len(start) != 1 || start[0]["worktree"] != "" {
		t.Fatalf("task.start = %v, want no worktree", start)
	}
	if msg := e.wtGit("log", "-1", "--format=%s"); msg != "fix" {
		t.Errorf("without a worktree the fix should be committed in the main checkout, HEAD is %q", msg)
	}
}

// TestWorktreeChildWithoutTaskRuns: a worktree profile that lists task
// beyond the depth limit is not refused: its child runs in its own
// worktree without task (one warning says so), and the main checkout is
// untouched.
func TestWorktreeChildWithoutTaskRuns(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	if err := os.MkdirAll(filepath.Join(e.home, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Without edit and write its bash would default to read-only; the
	// profile asks for workspace-write so that bash can change the file.
	if err := os.WriteFile(filepath.Join(e.home, "agents", "fixer.md"), []byte("---\nname: fixer\ndescription: fixes bugs\nworktree: true\ntools: read, bash, task\nsandbox: workspace-write\n---\nFix it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := e.wtMainState()
	script := e.wtOutside("s.yaml", wtBashChild("echo changed >> a.txt"))
	p, code := e.run("task", "--agent", "fixer", "--model", "script:"+script, "fix it")
	if code != 0 || !strings.Contains(p.stderr.String(), `agent "fixer" runs without some tools it lists: task (not available at depth 1 with --max-depth 1`) {
		t.Fatalf("exit %d, want 0 with a note on task\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	if strings.Join(rec.Tools, ",") != "bash,read" || rec.Worktree == nil {
		t.Fatalf("TaskRecord tools %v worktree %+v, want bash,read in a worktree", rec.Tools, rec.Worktree)
	}
	if data, err := os.ReadFile(filepath.Join(rec.Worktree.Path, "a.txt")); err != nil || string(data) != "hello\nchanged\n" {
		t.Errorf("the child's edit in its worktree: %q, %v", data, err)
	}
	if after := e.wtMainState(); after != before {
		t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWorktreeResumeAfterSIGKILL: a worktree child killed with SIGKILL after
// a commit keeps its worktree; resumed, it continues in the same worktree
// on the same branch with its commit, the worktree is locked while it runs
// and kept afterwards.
func TestWorktreeResumeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	// The worktree's lock is kept in the user's repository, which the
	// child reads (its own git directory does not hold it).
	script := e.wtOutside("s.yaml", `rules:
  - when: {user: "^start$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo first >> a.txt && git commit -qam first-step && sleep 300"}}]
  - when: {user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "pwd; git rev-parse --abbrev-ref HEAD; git log -1 --format=%s; git -C `+e.dir+` worktree list --porcelain"}}]
  - when: {user: "^go on$", tool: bash, result: "first-step"}
    reply: {text: "resumed in my worktree with my commit"}
  - reply: {text: "lost my work"}
`)
	p := e.start("task", "--json", "--worktree", "--model", "script:"+script, "start")
	start := waitForEvent(t, p, "task.start")
	path, worker, id := start["worktree"].(string), int(start["pid"].(float64)), start["childId"].(string)
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.start" })
	deadline := time.Now().Add(time.Minute)
	for e.wtGitIn(path, "log", "-1", "--format=%s") != "first-step" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 1 {
		t.Fatalf("ink task exited %d, want 1 (crash)\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	if rec.Status != "crash" || rec.Worktree == nil || rec.Worktree.Disposition != "kept-work" || rec.Worktree.Path != path {
		t.Fatalf("TaskRecord %+v (worktree %+v), want a crash with the worktree kept", rec, rec.Worktree)
	}

	r, code := e.run("task", "--resume", id, "--model", "script:"+script, "go on")
	if code != 0 {
		t.Fatalf("resume exited %d\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), r.stderr.String())
	}
	if !strings.HasPrefix(r.stdout.String(), "resumed in my worktree with my commit\n") {
		t.Fatalf("the resumed child did not find its commit:\n%s", r.stdout.String())
	}
	ctr, err := session.Open(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}
	out := wtToolOutputs(t, ctr.Path)
	if !strings.Contains(out, path+"\nink/"+id+"\nfirst-step\n") {
		t.Errorf("the resumed child did not run in %s on ink/%s:\n%s", path, id, out)
	}
	if !strings.Contains(out, "worktree "+path+"\n") || !strings.Contains(out, "\nlocked ink "+id+" pid ") {
		t.Errorf("the worktree was not locked while the resumed worker ran in it:\n%s", out)
	}
	if !strings.Contains(r.stdout.String(), "[task] changes kept in worktree "+path+" on branch ink/"+id+" (1 commit since baseline ") {
		t.Errorf("the resumed result does not say the worktree was kept with its commit:\n%s", r.stdout.String())
	}
	wtAssertKept(t, e, &session.WorktreeOutcome{Path: path, Branch: "ink/" + id})
	if data, _ := os.ReadFile(filepath.Join(e.dir, "a.txt")); string(data) != "hello\n" {
		t.Errorf("the main checkout's a.txt = %q", data)
	}
}

// TestWorktreeTimeoutKeptForResume: a worktree child that times out before
// changing anything keeps its clean worktree so that it can be resumed; the
// resumed child runs there and the worktree is kept again (a resumed
// worktree is never removed) until `ink worktrees prune` removes it.
func TestWorktreeTimeoutKeptForResume(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	script := e.wtOutside("s.yaml", `rules:
  - when: {user: "^slow$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "sleep 300"}}]
  - when: {user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "pwd"}}]
  - reply: {text: "finished"}
`)
	p, code := e.run("task", "--worktree", "--timeout", "4s", "--model", "script:"+script, "slow")
	if code != 124 {
		t.Fatalf("exit %d, want 124\nstderr:\n%s", code, p.stderr.String())
	}
	rec := wtLatestRecord(t, e)
	w := rec.Worktree
	if rec.Status != "timeout" || w == nil || w.Disposition != "kept-resumable" {
		t.Fatalf("TaskRecord %+v (worktree %+v), want a timeout with the clean worktree kept for a resume", rec, w)
	}
	if want := "[task] no changes since baseline " + e.wtGit("rev-parse", "HEAD")[:12] + "; worktree " + w.Path + " and branch " + w.Branch + " kept so that the child can be resumed in it"; !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("the result does not say why the clean worktree was kept (want %q):\n%s", want, p.stderr.String())
	}
	wtAssertKept(t, e, w)

	// prune keeps it, saying why: the child can still be resumed there.
	if p, code := e.run("worktrees", "prune"); code != 0 || p.stdout.String() != fmt.Sprintf("kept %s: child %s can still be resumed (its last attempt ended timeout): resume it with `ink task --resume %s \"…\"`, or remove it with `ink worktrees prune --include-resumable`\n", w.Path, rec.ChildID, rec.ChildID) {
		t.Fatalf("prune of a resumable child's worktree: exit %d, %q %s", code, p.stdout.String(), p.stderr.String())
	}
	wtAssertKept(t, e, w)

	// While another live process holds the worktree's lock, the resume is
	// refused and the lock left alone.
	reason := fmt.Sprintf("ink %s pid %d", rec.ChildID, os.Getpid())
	e.wtGit("worktree", "lock", "--reason", reason, w.Path)
	r, code := e.run("task", "--resume", rec.ChildID, "--model", "script:"+script, "go on")
	if want := fmt.Sprintf("the worktree %s is in use by process %d (%s); resume it once that process has ended. Start a new task instead.", w.Path, os.Getpid(), reason); code != 3 || !strings.Contains(r.stderr.String(), want) {
		t.Fatalf("resume of a worktree in use: exit %d, want 3 saying %q\nstderr:\n%s", code, want, r.stderr.String())
	}
	if got := e.wtGit("worktree", "list", "--porcelain"); !strings.Contains(got+"\n", "\nlocked "+reason+"\n") {
		t.Fatalf("the refused resume changed the lock:\n%s", got)
	}
	e.wtGit("worktree", "unlock", w.Path)

	r, code = e.run("task", "--resume", rec.ChildID, "--model", "script:"+script, "go on")
	if code != 0 {
		t.Fatalf("resume exited %d\nstderr:\n%s", code, r.stderr.String())
	}
	if out := wtToolOutputs(t, rec.Transcript.Path); !strings.Contains(out, w.Path+"\n") {
		t.Errorf("the resumed child did not run in %s:\n%s", w.Path, out)
	}
	if want := "[task] no changes since baseline " + e.wtGit("rev-parse", "HEAD")[:12] + "; worktree " + w.Path + " and branch " + w.Branch + " kept (a resumed child's worktree is never removed; remove it with `ink worktrees rm " + rec.ChildID + "`)"; !strings.Contains(r.stdout.String(), want) {
		t.Errorf("the resumed result does not say the worktree was kept (want %q):\n%s", want, r.stdout.String())
	}
	wtAssertKept(t, e, w)

	// Its last attempt completed: nothing needs the worktree any more.
	if p, code := e.run("worktrees", "prune"); code != 0 || p.stdout.String() != "removed "+w.Path+": clean (no changes since baseline "+e.wtGit("rev-parse", "HEAD")[:12]+"); its child's last attempt ended completed, no process holds it\n" {
		t.Fatalf("prune: exit %d, %q %s", code, p.stdout.String(), p.stderr.String())
	}
	wtAssertGone(t, e, w.Path, w.Branch)
}

// TestWorktreeResumeAfterHostLoss: when the supervisor itself is killed,
// the child's worktree is left as it was, locked by a dead process; `ink
// worktrees ls` says so, and a resume takes it over, continues there with
// the child's commit, and leaves it kept and unlocked.
func TestWorktreeResumeAfterHostLoss(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	script := e.wtOutside("s.yaml", `rules:
  - when: {user: "^start$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo first >> a.txt && git commit -qam first-step && sleep 300"}}]
  - when: {user: "^go on$", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "git log -1 --format=%s"}}]
  - when: {user: "^go on$", tool: bash, result: "first-step"}
    reply: {text: "resumed with my commit"}
  - reply: {text: "lost my work"}
`)
	p := e.start("task", "--json", "--worktree", "--model", "script:"+script, "start")
	start := waitForEvent(t, p, "task.start")
	path, worker, id := start["worktree"].(string), int(start["pid"].(float64)), start["childId"].(string)
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.start" })
	deadline := time.Now().Add(time.Minute)
	// git commit moves the branch before it writes the index: wait for both.
	for (e.wtGitIn(path, "log", "-1", "--format=%s") != "first-step" || e.wtGitIn(path, "--no-optional-locks", "status", "--porcelain") != "") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	host := p.cmd.Process.Pid
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)
	deadline = time.Now().Add(30 * time.Second)
	for alive(worker) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(worker) {
		t.Fatalf("worker %d outlived its supervisor", worker)
	}
	ls, _ := e.run("worktrees", "ls", "--status")
	if row := fmt.Sprintf("%s %s work-present ink/%s 1/0 false pid %d (dead) interrupted (resumable) %s", id, e.dir, id, host, path); !strings.Contains(strings.Join(strings.Fields(ls.stdout.String()), " "), row) {
		t.Fatalf("ls does not show the worktree locked by the dead supervisor (want %q):\n%s", row, ls.stdout.String())
	}

	r, code := e.run("task", "--resume", id, "--model", "script:"+script, "go on")
	if code != 0 || !strings.HasPrefix(r.stdout.String(), "resumed with my commit\n") {
		t.Fatalf("resume exited %d\nstdout:\n%s\nstderr:\n%s", code, r.stdout.String(), r.stderr.String())
	}
	wtAssertKept(t, e, &session.WorktreeOutcome{Path: path, Branch: "ink/" + id})
}

// TestWorktreeOutsideGit: a worktree asked for outside a git repository,
// by --worktree or by the agent's profile, is bad input found before
// anything is written: exit 2, a message naming what asked and how to
// fix it, and no session.
func TestWorktreeOutsideGit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	putProfileFile(t, filepath.Join(e.home, "agents", "fixer.md"), "---\nname: fixer\ndescription: fixes\nworktree: true\n---\n")
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"ran\"}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--worktree"}, "--worktree: " + e.dir + " is not inside a git repository; run ink from a git repository (or pass --cwd), or pass --worktree=false"},
		{[]string{"--agent", "fixer"}, `agent "fixer" asks for a worktree (worktree: true in ` + filepath.Join(e.home, "agents", "fixer.md") + "): " + e.dir + " is not inside a git repository"},
	} {
		p, code := e.run(append(append([]string{"task"}, c.args...), "--model", "script:"+script, "go")...)
		if code != 2 || !strings.Contains(p.stderr.String(), c.want) {
			t.Errorf("%v: exit %d, want 2 and %q; stderr:\n%s", c.args, code, c.want, p.stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, "sessions")); err == nil {
		t.Fatalf("a refused task left a session behind")
	}
}

// TestWorktreesCrashLeftovers: what a crash leaves in ink's worktrees is
// said and cleaned by the commands a user runs. An empty record with no
// worktree (a creation killed under an earlier version of ink) is not
// listed; `worktrees rm` and `prune` delete it and say so. An ink/<id>
// branch a crash of the machine left as an empty ref file breaks `git
// gc`; `prune` (which keeps the worktree holding work) and `rm --force`
// delete that ref and say so, and git gc works again.
func TestWorktreesCrashLeftovers(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	_, a := e.wtTask("feature", "echo feature > feature.txt && git add feature.txt && git commit -qm feature")
	_, b := e.wtTask("draft", "echo draft > notes.txt")
	slugDir := filepath.Dir(a.Worktree.Path)
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	empty := filepath.Join(slugDir, session.NewID()+".json")
	id := strings.TrimSuffix(filepath.Base(empty), ".json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if p, code := e.run("worktrees", "ls"); code != 0 || strings.Contains(p.stdout.String(), id) || strings.Count(p.stdout.String(), "\n") != 3 {
		t.Fatalf("ls shows the empty record: exit %d\n%s", code, p.stdout.String())
	}
	said := "deleted " + empty + ": an empty worktree record that a process killed while creating it left"
	if p, code := e.run("worktrees", "rm", id); code != 0 || !strings.Contains(p.stdout.String(), said) || exists(empty) {
		t.Fatalf("rm of the empty record: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// Both ink branches' refs left empty, as a crash of the machine
	// leaves a ref git wrote without syncing it.
	for _, rec := range []session.TaskRecord{a, b} {
		if err := os.Truncate(filepath.Join(e.dir, ".git", "refs", "heads", "ink", rec.ChildID), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.gitTry(e.dir, "gc", "--quiet"); err == nil {
		t.Fatal("git gc passed with empty refs; the test does not reproduce the crash")
	}
	note := func(rec session.TaskRecord) string {
		return "deleted the broken ref refs/heads/ink/" + rec.ChildID + ": a crash of the machine had left it empty"
	}
	p, code := e.run("worktrees", "rm", "--force", b.ChildID)
	if code != 0 || !strings.Contains(p.stdout.String(), note(b)) {
		t.Fatalf("rm --force: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	p, code = e.run("worktrees", "prune")
	out := p.stdout.String()
	if code != 0 || !strings.Contains(out, said) || !strings.Contains(out, "kept "+a.Worktree.Path+": ") || !strings.Contains(out, note(a)) {
		t.Fatalf("prune: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, p.stderr.String())
	}
	if exists(empty) {
		t.Error("prune left the empty record")
	}
	if out, err := e.gitTry(e.dir, "gc", "--quiet"); err != nil {
		t.Errorf("git gc after rm and prune: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(a.Worktree.Path, "feature.txt")); err != nil {
		t.Errorf("the kept worktree lost its work: %v", err)
	}
}
