package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/worktree"
)

// benchRepo builds a repository of about 5,000 files in 50 directories.
func benchRepo(b *testing.B) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "big")
	for d := range 50 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			body := fmt.Sprintf("package pkg%02d\n\n// File %d of directory %d.\nvar X%d = %d\n", d, f, d, f, f)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=bench", "-c", "user.email=bench@ink.invalid", "commit", "-q", "-m", "5000 files"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		b.Fatal(err)
	}
	return real
}

// gitCommand is one git invocation as ink made it.
type gitCommand struct {
	code    string // its exit status
	ceiling string // GIT_CEILING_DIRECTORIES, when set
	args    []string
}

// recordGit runs f with a git on PATH that logs each invocation before it
// runs the real git, and returns the invocations.
func recordGit(b *testing.B, f func()) []gitCommand {
	b.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	log := filepath.Join(dir, "git.log")
	// One line per invocation: the exit status, the ceiling, then every
	// argument, each field ended by a unit separator.
	wrapper := fmt.Sprintf("#!/bin/sh\n%q \"$@\"\nrc=$?\n{ printf '%%s\\037' \"$rc\" \"$GIT_CEILING_DIRECTORIES\"; printf '%%s\\037' \"$@\"; printf '\\n'; } >> %q\nexit $rc\n", real, log)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(wrapper), 0o755); err != nil {
		b.Fatal(err)
	}
	path := os.Getenv("PATH")
	os.Setenv("PATH", dir+string(os.PathListSeparator)+path)
	f()
	os.Setenv("PATH", path)
	data, err := os.ReadFile(log)
	if err != nil {
		b.Fatal(err)
	}
	var out []gitCommand
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		fields := strings.Split(strings.TrimSuffix(line, "\x1f"), "\x1f")
		out = append(out, gitCommand{code: fields[0], ceiling: fields[1], args: fields[2:]})
	}
	return out
}

// replay runs cmds with the real git, one after the other, as ink ran
// them, with from replaced by to in every argument; each must end as it
// did for ink.
func replay(b *testing.B, cmds []gitCommand, from, to string) {
	for _, c := range cmds {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.ReplaceAll(a, from, to)
		}
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
		if c.ceiling != "" {
			cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+strings.ReplaceAll(c.ceiling, from, to))
		}
		out, _ := cmd.CombinedOutput()
		if code := fmt.Sprint(cmd.ProcessState.ExitCode()); code != c.code {
			b.Fatalf("replay git %v exited %s, ink's exited %s:\n%s", args, code, c.code, out)
		}
	}
}

// BenchmarkWorktree measures ink's worktree cycle for a child — create
// (repository lock, `worktree add -b`, reflog snapshot, the worktree's own
// git directory, lock reason, record file) and settle, as the orchestrator
// does after the attempt (bring the commits back, assess clean, remove) —
// and its assessment alone, on a repository of about 5,000 files, each
// iteration beside the floor "git": the same git commands ink ran,
// recorded once and replayed for a fresh child id without ink around them
// (git then finds the worktree through its .git link), plus deleting the
// worktree's files, which ink does itself.
func BenchmarkWorktree(b *testing.B) {
	ctx := context.Background()
	root := benchRepo(b)
	home := filepath.Join(b.TempDir(), "inkhome")
	repo, err := worktree.Detect(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	cycle := func(b *testing.B, id string) {
		rec, err := worktree.Create(ctx, repo, home, id, os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		if out := worktree.Settle(ctx, rec); out.Disposition != worktree.DispositionRemoved {
			b.Fatalf("settle: %+v", out)
		}
	}

	b.Run("create-settle", func(b *testing.B) {
		const model = "recordedcycle"
		cmds := recordGit(b, func() { cycle(b, model) })
		n := 0
		paired(b, func(b *testing.B) {
			n++
			cycle(b, fmt.Sprintf("inkcycle%d", n))
		}, floor{name: "git", run: func(b *testing.B) {
			n++
			id := fmt.Sprintf("gitcycle%d", n)
			replay(b, cmds, model, id)
			// ink deletes a clean worktree's files itself (git worktree
			// remove refuses a worktree whose link names its own git
			// directory); the floor deletes the replayed one likewise.
			paths, _ := filepath.Glob(filepath.Join(home, "worktrees", "*", id))
			for _, p := range paths {
				if err := os.RemoveAll(p); err != nil {
					b.Fatal(err)
				}
			}
		}})
		b.ReportMetric(float64(len(cmds)), "git-commands")
	})
	b.Run("assess", func(b *testing.B) {
		recs := map[string]worktree.Record{}
		for _, id := range []string{"assessink", "assessgit"} {
			rec, err := worktree.Create(ctx, repo, home, id, os.Getpid())
			if err != nil {
				b.Fatal(err)
			}
			recs[id] = rec
		}
		// Files checked out in the second their index was written are
		// "racily clean": every status re-reads them until the index is
		// rewritten. Rewrite both indexes a second later, so that neither
		// side pays for that.
		time.Sleep(1100 * time.Millisecond)
		for _, rec := range recs {
			if out, err := exec.Command("git", "-C", rec.Path, "update-index", "-q", "--refresh").CombinedOutput(); err != nil {
				b.Fatalf("refresh %s: %v\n%s", rec.Path, err, out)
			}
		}
		cmds := recordGit(b, func() { worktree.Assess(ctx, recs["assessink"]) })
		paired(b, func(b *testing.B) {
			if a := worktree.Assess(ctx, recs["assessink"]); a.State != worktree.Clean {
				b.Fatalf("assess: %+v", a)
			}
		}, floor{name: "git", run: func(b *testing.B) { replay(b, cmds, "assessink", "assessgit") }})
		b.ReportMetric(float64(len(cmds)), "git-commands")
	})
}
