package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// benchRepo builds a repository of about 5,000 files in 50 directories.
func benchRepo(b *testing.B) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "big")
	for d := range 50 {
		for f := range 100 {
			writeFile(b, root, fmt.Sprintf("pkg%02d/file%03d.go", d, f), fmt.Sprintf("package pkg%02d\n\n// File %d of directory %d.\nvar X%d = %d\n", d, f, d, f, f))
		}
	}
	git(b, root, "init", "-q")
	git(b, root, "add", ".")
	git(b, root, "commit", "-q", "-m", "5000 files")
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		b.Fatal(err)
	}
	return real
}

// BenchmarkWorktree compares ink's full create + assess + remove cycle,
// and its assessment alone, with the bare git commands they wrap, on one
// repository of about 5,000 files.
func BenchmarkWorktree(b *testing.B) {
	ctx := context.Background()
	root := benchRepo(b)
	home := filepath.Join(b.TempDir(), "inkhome")
	repo, err := Detect(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	plainDir := filepath.Join(b.TempDir(), "plain")

	b.Run("ink-create-assess-remove", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			rec, err := Create(ctx, repo, home, fmt.Sprintf("bench-%d", n), os.Getpid())
			if err != nil {
				b.Fatal(err)
			}
			if a := Assess(ctx, rec); a.State != Clean {
				b.Fatalf("assess: %+v", a)
			}
			if err := Remove(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-add-remove", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			path := filepath.Join(plainDir, fmt.Sprint(n))
			branch := fmt.Sprintf("plain-%d", n)
			gitBench(b, root, "worktree", "add", "-q", "-b", branch, path, repo.Head)
			gitBench(b, root, "worktree", "remove", path)
		}
	})
	b.Run("ink-assess", func(b *testing.B) {
		rec, err := Create(ctx, repo, home, "bench-assess", os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if a := Assess(ctx, rec); a.State != Clean {
				b.Fatalf("assess: %+v", a)
			}
		}
	})
	b.Run("git-status", func(b *testing.B) {
		path := filepath.Join(plainDir, "status")
		gitBench(b, root, "worktree", "add", "-q", "--detach", path, repo.Head)
		for b.Loop() {
			gitBench(b, path, "status", "--porcelain")
		}
	})
}

func gitBench(b *testing.B, dir string, args ...string) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// BenchmarkList lists 150 worktrees (the load run that found `ink worktrees
// ls` slow had 144) without and with status, beside the floor: one bare
// `git worktree list --porcelain` of the repository.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	root := newRepo(b)
	home := filepath.Join(b.TempDir(), "inkhome")
	repo, err := Detect(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	const n = 150
	for i := range n {
		if _, err := Create(ctx, repo, home, fmt.Sprintf("list-%d", i), os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ink-ls", func(b *testing.B) {
		for b.Loop() {
			infos, err := ListWith(ctx, home, ListOptions{Repos: []string{root}})
			if err != nil || len(infos) != n {
				b.Fatalf("ListWith = %d, %v", len(infos), err)
			}
		}
	})
	b.Run("git-worktree-list", func(b *testing.B) {
		for b.Loop() {
			gitBench(b, root, "worktree", "list", "--porcelain")
		}
	})
	b.Run("ink-ls-status", func(b *testing.B) {
		for b.Loop() {
			infos, err := ListWith(ctx, home, ListOptions{Status: true})
			if err != nil || len(infos) != n {
				b.Fatalf("ListWith = %d, %v", len(infos), err)
			}
		}
	})
}

// BenchmarkWorkspace measures a remote child's workspace out and back on
// one repository of about 5,000 files: "out" ships the worktree (Pack)
// and makes the worker's repository (Materialise); "back" is one durable
// point of the worker — an edited file and a new one, its Snapshot, and
// the supervisor's ApplySnapshot. Beside them, the floors: `git bundle
// create` of the baseline with `git clone` from it, and `git status` in a
// worktree of the same size.
func BenchmarkWorkspace(b *testing.B) {
	ctx := context.Background()
	root := benchRepo(b)
	home := filepath.Join(b.TempDir(), "inkhome")
	repo, err := Detect(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	rec, err := Create(ctx, repo, home, "bench-remote", os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	remote := b.TempDir()
	b.Run("out", func(b *testing.B) {
		n := 0
		var size int64
		for b.Loop() {
			n++
			var buf bytes.Buffer
			sh, err := Pack(ctx, rec, &buf, PackOptions{})
			if err != nil {
				b.Fatal(err)
			}
			size = sh.Bytes
			if _, err := Materialise(ctx, filepath.Join(remote, fmt.Sprint("out", n), rec.ChildID()), &buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(size), "bundle-bytes")
	})
	b.Run("git-bundle-clone", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			file := filepath.Join(remote, fmt.Sprint("bundle", n))
			gitBench(b, root, "bundle", "create", "-q", file, "HEAD")
			gitBench(b, remote, "clone", "-q", file, filepath.Join(remote, fmt.Sprint("clone", n)))
		}
	})
	b.Run("back", func(b *testing.B) {
		var buf bytes.Buffer
		sh, err := Pack(ctx, rec, &buf, PackOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wdir := filepath.Join(remote, "back", rec.ChildID())
		if _, err := Materialise(ctx, wdir, &buf); err != nil {
			b.Fatal(err)
		}
		since := sh.Snapshot
		// Files checked out in the second their index was written are
		// "racily clean", and every checkout re-reads them until the index
		// is rewritten later: let a second pass, as between a worktree's
		// creation and a worker's first durable point.
		time.Sleep(1100 * time.Millisecond)
		for _, c := range []gitCall{{dir: wdir, in: &layout{gitDir: wdir + ".git", commonDir: wdir + ".git", workTree: wdir}}, {dir: rec.Path, in: &layout{gitDir: rec.PrivateGitDir(), commonDir: rec.GitDir(), workTree: rec.Path, sealed: true}}} {
			c.args = []string{"update-index", "-q", "--refresh"}
			if _, err := c.exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		n := 0
		var size int64
		for b.Loop() {
			n++
			writeFile(b, wdir, "pkg07/file042.go", fmt.Sprintf("package pkg07\n\nvar Edited = %d\n", n))
			writeFile(b, wdir, fmt.Sprintf("new/file%d.txt", n), "new\n")
			var snap bytes.Buffer
			info, err := Snapshot(ctx, wdir, since, &snap)
			if err != nil {
				b.Fatal(err)
			}
			size = info.Bytes
			if _, err := ApplySnapshot(ctx, rec, &snap, ApplyOptions{}); err != nil {
				b.Fatal(err)
			}
			since = info.Commit
		}
		b.ReportMetric(float64(size), "bundle-bytes")
	})
	b.Run("git-status", func(b *testing.B) {
		path := filepath.Join(remote, "status")
		gitBench(b, root, "worktree", "add", "-q", "--detach", path, repo.Head)
		for b.Loop() {
			gitBench(b, path, "status", "--porcelain")
		}
	})
}
