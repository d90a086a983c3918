package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWorktreeIncludeCopiesIgnoredFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	writeFile(t, root, ".worktreeinclude", "# secrets for local runs\n.env\n\nbuild/*.cfg\nREADME.md\nnotes.txt\nmissing.txt\n")
	writeFile(t, root, ".env", "TOKEN=local\n")
	if err := os.Chmod(filepath.Join(root, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "build/app.cfg", "debug=true\n")
	writeFile(t, root, "build/other.bin", "x")
	writeFile(t, root, "README.md", "# uncommitted edit in the main checkout\n")
	writeFile(t, root, "notes.txt", "untracked, not ignored\n")

	rec := newWorktree(t, root, newInkHome(t), "inc")
	data, err := os.ReadFile(filepath.Join(rec.Path, ".env"))
	if err != nil || string(data) != "TOKEN=local\n" {
		t.Fatalf(".env in worktree = %q, %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(rec.Path, ".env")); fi.Mode().Perm() != 0o600 {
		t.Errorf(".env mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(rec.Path, "build/app.cfg")); err != nil {
		t.Errorf("build/app.cfg not copied: %v", err)
	}
	if exists(filepath.Join(rec.Path, "build/other.bin")) {
		t.Error("build/other.bin copied though no pattern names it")
	}
	if exists(filepath.Join(rec.Path, "notes.txt")) {
		t.Error("an untracked, not ignored file was copied (it would look like the child's work)")
	}
	if data, _ := os.ReadFile(filepath.Join(rec.Path, "README.md")); string(data) != "# project\n" {
		t.Errorf("tracked README.md was overwritten with the main checkout's edit: %q", data)
	}
	if a := Assess(ctx, rec); a.State != Clean {
		t.Fatalf("a fresh worktree with included files is %+v, want clean", a)
	}
	if err := Remove(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if exists(rec.Path) {
		t.Error("worktree directory left behind")
	}
}

// TestWorktreeIncludeMatchesAsGitDoes: a .worktreeinclude with negations,
// directory patterns and "**" copies exactly the files git itself says
// the patterns match (asked by git status of a scratch repository whose
// info/exclude holds them), less those the main checkout does not ignore.
func TestWorktreeIncludeMatchesAsGitDoes(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	writeFile(t, root, ".gitignore", "*.log\n.env*\nbuild/\nsecrets/\ncache/\n")
	git(t, root, "commit", "-qam", "ignore more")
	include := `# env files, not the example
.env*
!.env.example
# a directory pattern: everything under it
secrets/
# any depth, then taken back for one directory
build/**/*.cfg
!build/keep/*.cfg
# logs, but not the debug log
*.log
!debug.log
notes.txt
`
	writeFile(t, root, includeFile, include)
	files := []string{".env", ".env.local", ".env.example", "app.log", "debug.log", "logs/deep/trace.log",
		"build/a.cfg", "build/b.bin", "build/keep/x.cfg", "build/sub/y.cfg", "secrets/k1", "secrets/deep/k2",
		"cache/big.bin", "notes.txt"}
	scratch := filepath.Join(t.TempDir(), "scratch")
	git(t, filepath.Dir(scratch), "init", "-q", scratch)
	for _, dir := range []string{root, scratch} {
		for _, f := range files {
			writeFile(t, dir, f, "content of "+f+"\n")
		}
		if err := os.Symlink("k1", filepath.Join(dir, "secrets", "link")); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, scratch, ".git/info/exclude", include)

	// git's answer: what the patterns match, and what the main checkout
	// ignores; the files to copy are in both.
	matched, ignored := ignoredByStatus(t, scratch), ignoredByStatus(t, root)
	var want []string
	for _, f := range matched {
		if slices.Contains(ignored, f) {
			want = append(want, f)
		}
	}
	for _, f := range []string{".env", "secrets/deep/k2", "secrets/link", "build/sub/y.cfg", "logs/deep/trace.log"} {
		if !slices.Contains(want, f) {
			t.Fatalf("git does not match %s; the fixture is wrong (git says %v)", f, want)
		}
	}

	rec := newWorktree(t, root, newInkHome(t), "inc-git")
	var got []string
	tracked := strings.Split(git(t, rec.Path, "ls-files"), "\n")
	err := filepath.WalkDir(rec.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rec.Path, p)
		if rel == ".git" { // the worktree's link to its repository
			return nil
		}
		if !d.IsDir() && !slices.Contains(tracked, filepath.ToSlash(rel)) {
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("copied into the worktree:\n  %v\ngit matches (and the checkout ignores):\n  %v", got, want)
	}
	for _, f := range []string{".env.example", "debug.log", "build/keep/x.cfg", "build/b.bin", "cache/big.bin", "notes.txt"} {
		if slices.Contains(got, f) {
			t.Errorf("%s was copied", f)
		}
	}
	if target, err := os.Readlink(filepath.Join(rec.Path, "secrets", "link")); err != nil || target != "k1" {
		t.Errorf("secrets/link in the worktree: %q, %v; want the symlink to k1", target, err)
	}
}

// ignoredByStatus lists the files git status says are ignored in the
// checkout at dir, one slash path per file.
func ignoredByStatus(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, e := range strings.Split(git(t, dir, "status", "--porcelain", "-z", "--ignored", "--untracked-files=all"), "\x00") {
		if rel, ok := strings.CutPrefix(e, "!! "); ok {
			out = append(out, rel)
		}
	}
	return out
}

func TestWorktreeIncludeRefusesEscapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		setup   func(t *testing.T, root string)
		include string
		message string
	}{
		{"parent path", nil, "../x\n", `.worktreeinclude line 1 ("../x") leads outside the repository`},
		{"absolute path", nil, "# c\n/etc/hosts\n", `line 2 ("/etc/hosts") is an absolute path`},
		{"git directory", nil, ".git/config\n", "names git's own directory"},
		{"symlink outside", func(t *testing.T, root string) {
			outside := filepath.Join(t.TempDir(), "secret")
			writeFile(t, filepath.Dir(outside), "secret", "s")
			if err := os.Symlink(outside, filepath.Join(root, ".env")); err != nil {
				t.Fatal(err)
			}
		}, ".env\n", "symlink .env leads outside the repository"},
		{"symlink inside a directory", func(t *testing.T, root string) {
			writeFile(t, root, "build/ok.txt", "ok")
			if err := os.Symlink("/etc", filepath.Join(root, "build", "etc")); err != nil {
				t.Fatal(err)
			}
		}, "build\n", "symlink build/etc leads outside the repository"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := newRepo(t)
			home := newInkHome(t)
			if tc.setup != nil {
				tc.setup(t, root)
			}
			writeFile(t, root, ".worktreeinclude", tc.include)
			repo, err := Detect(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Create(ctx, repo, home, "esc", os.Getpid())
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Create = %v, want an error containing %q", err, tc.message)
			}
			if branchExists(t, root, "ink/esc") {
				t.Error("branch left behind")
			}
			if n := len(registeredPaths(t, root)); n != 1 {
				t.Errorf("%d worktrees registered, want only the main checkout", n)
			}
			slugDir := filepath.Join(home, "worktrees", RepoSlug(root))
			if entries, _ := os.ReadDir(slugDir); len(entries) != 0 {
				t.Errorf("left behind in %s: %v", slugDir, entries)
			}
		})
	}
}

// TestCreateRollsBackOnLateFailure: a failure at any step of Create after
// the record is written rolls everything back: no directory, record,
// temporary file, branch or registration remains.
func TestCreateRollsBackOnLateFailure(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"recorded", "added", "finished", "relocking"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := newRepo(t)
			home := newInkHome(t)
			repo, err := Detect(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			id := "late-" + step
			createHooks.Store(id, func(s string) error {
				if s == step {
					return errors.New("the disk is full")
				}
				return nil
			})
			_, err = Create(ctx, repo, home, id, os.Getpid())
			if err == nil || !strings.Contains(err.Error(), "the disk is full (rolled back: nothing was left behind)") {
				t.Fatalf("Create = %v, want a rolled-back failure", err)
			}
			if branchExists(t, root, "ink/"+id) || len(registeredPaths(t, root)) != 1 {
				t.Fatal("Create left a branch or registration behind")
			}
			if entries, _ := os.ReadDir(filepath.Join(home, "worktrees")); len(entries) != 0 {
				t.Fatalf("Create left %v under INK_HOME/worktrees", entries)
			}
		})
	}
}

func TestCreateRefusesExistingBranchAndBadID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	git(t, root, "branch", "ink/taken")
	tip := git(t, root, "rev-parse", "ink/taken")
	repo, err := Detect(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, repo, home, "taken", os.Getpid()); err == nil || !strings.Contains(err.Error(), "branch ink/taken already exists") {
		t.Fatalf("Create = %v, want a refusal naming the branch", err)
	}
	if got := git(t, root, "rev-parse", "ink/taken"); got != tip {
		t.Fatal("the user's branch was changed")
	}
	for _, id := range []string{"", "../x", "A", "a/b", "-x", "x-"} {
		if _, err := Create(ctx, repo, home, id, os.Getpid()); err == nil || !strings.Contains(err.Error(), "is not valid") {
			t.Errorf("Create(%q) = %v, want an invalid-id error", id, err)
		}
	}
}
