package worktree

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestListAndFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := newInkHome(t)
	root := newRepo(t)
	other := newRepo(t)
	clean := newWorktree(t, root, home, "clean")
	work := newWorktree(t, root, home, "work")
	dead := newWorktree(t, other, home, "dead")
	commitIn(t, work.Path, "x.txt", "x", "x")
	writeFile(t, work.Path, "y.txt", "y")
	commitIn(t, root, "main.txt", "m", "main moves on")
	deadPid := deadPID(t)
	if err := Lock(ctx, dead, lockReason("dead", deadPid)); err != nil {
		t.Fatal(err)
	}
	if err := Unlock(ctx, clean); err != nil {
		t.Fatal(err)
	}
	if err := Unlock(ctx, clean); err != nil {
		t.Fatalf("second Unlock = %v, want nil", err)
	}

	infos, err := List(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Info{}
	for _, i := range infos {
		byID[i.ChildID] = i
	}
	if len(infos) != 3 {
		t.Fatalf("List = %d entries, want 3: %+v", len(infos), infos)
	}
	c, w, d := byID["clean"], byID["work"], byID["dead"]
	if c.Assessment.State != Clean || c.Locked || c.Dirty || c.Commits != 0 || c.Behind != 1 || c.Ahead != 0 {
		t.Errorf("clean = %+v", c)
	}
	if w.Assessment.State != WorkPresent || !w.Locked || !w.LockPIDAlive || w.LockPID != os.Getpid() || !w.Dirty || w.Commits != 1 || w.Ahead != 1 || w.Behind != 1 {
		t.Errorf("work = %+v", w)
	}
	if w.Record.RepoRoot != root || w.Record.Branch != "ink/work" || w.Head == "" {
		t.Errorf("work record = %+v", w.Record)
	}
	if !d.Locked || d.LockPID != deadPid || d.LockPIDAlive || d.LockReason != "ink dead pid "+itoa(deadPid) || d.Record.RepoRoot != other {
		t.Errorf("dead = %+v", d)
	}

	if _, err := Find(ctx, home, "nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "ink worktrees ls") {
		t.Errorf("Find(nope) = %v, want ErrNotFound with a hint", err)
	}
	if _, err := Find(ctx, home, "../clean"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Find(../clean) = %v, want an invalid-id error", err)
	}
	if got, err := Find(ctx, home, "work"); err != nil || got.Record.Path != work.Path {
		t.Errorf("Find(work) = %+v, %v", got, err)
	}
	if empty, err := List(ctx, newInkHome(t)); err != nil || len(empty) != 0 {
		t.Errorf("List of an empty INK_HOME = %v, %v", empty, err)
	}
}

func TestDiffIncludesUntrackedAndLeavesIndexAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := newInkHome(t)
	root := newRepo(t)
	rec := newWorktree(t, root, home, "d")
	commitIn(t, rec.Path, "src/committed.go", "package main // committed\n", "c")
	writeFile(t, rec.Path, "README.md", "# modified\n")
	writeFile(t, rec.Path, "fresh/untracked.txt", "brand new\n")
	writeFile(t, rec.Path, ".env", "IGNORED=1\n")
	index := filepath.Join(root, ".git", "worktrees", "d", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	status := git(t, rec.Path, "status", "--porcelain")

	var out bytes.Buffer
	if err := Diff(ctx, findInfo(t, home, "d"), &out); err != nil {
		t.Fatal(err)
	}
	patch := out.String()
	for _, want := range []string{"+package main // committed", "+# modified", "diff --git a/fresh/untracked.txt b/fresh/untracked.txt", "+brand new"} {
		if !strings.Contains(patch, want) {
			t.Errorf("diff lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, "IGNORED") {
		t.Error("diff shows an ignored file")
	}
	after, _ := os.ReadFile(index)
	if !bytes.Equal(before, after) {
		t.Error("Diff modified the worktree's real index")
	}
	if got := git(t, rec.Path, "status", "--porcelain"); got != status {
		t.Errorf("status changed from %q to %q", status, got)
	}
}

func TestRemoveForce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		setup   func(t *testing.T, root string, rec Record)
		force   bool
		wantErr error
		removed bool
	}{
		{"clean", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
		}, false, nil, true},
		{"locked by a live process, even forced", func(t *testing.T, root string, rec Record) {}, true, ErrInUse, false},
		{"unmerged commit", func(t *testing.T, root string, rec Record) {
			Lock(context.Background(), rec, lockReason("r", deadPID(t)))
			commitIn(t, rec.Path, "f.txt", "f", "f")
		}, false, ErrUnmergedWork, false},
		{"unmerged commit, forced", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "f.txt", "f", "f")
			writeFile(t, rec.Path, "g.txt", "g")
		}, true, nil, true},
		{"merged commit", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "f.txt", "f", "f")
			git(t, root, "merge", "-q", "--no-edit", "ink/r")
		}, false, nil, true},
		{"merged commit plus uncommitted file", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "f.txt", "f", "f")
			git(t, root, "merge", "-q", "--no-edit", "ink/r")
			writeFile(t, rec.Path, "g.txt", "g")
		}, false, ErrUnmergedWork, false},
		{"unknown state", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			os.Remove(filepath.Join(rec.Path, ".git"))
		}, false, ErrUnmergedWork, false},
		{"unknown state, forced", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			os.Remove(filepath.Join(rec.Path, ".git"))
		}, true, nil, true},
		{"interrupted creation", func(t *testing.T, root string, rec Record) {
			Lock(context.Background(), rec, lockReason("r", deadPID(t))+creatingMark)
			os.Remove(filepath.Join(rec.Path, "README.md")) // a checkout cut short
		}, false, nil, true},
		{"directory gone, branch never moved", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			os.RemoveAll(rec.Path)
		}, false, nil, true},
		{"directory gone, branch holds a commit", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "f.txt", "f", "f")
			os.RemoveAll(rec.Path)
		}, false, ErrUnmergedWork, false},
		{"directory gone, branch holds a commit, forced", func(t *testing.T, root string, rec Record) {
			Unlock(context.Background(), rec)
			commitIn(t, rec.Path, "f.txt", "f", "f")
			os.RemoveAll(rec.Path)
		}, true, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			home := newInkHome(t)
			rec := newWorktree(t, root, home, "r")
			tc.setup(t, root, rec)
			_, err := RemoveForce(context.Background(), findInfo(t, home, "r"), tc.force)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("RemoveForce = %v, want %v", err, tc.wantErr)
			}
			gone := !exists(rec.Path) && !branchExists(t, root, "ink/r") && !isRegistered(t, root, rec.Path) && !exists(recordPath(rec.Path))
			kept := branchExists(t, root, "ink/r") && exists(recordPath(rec.Path))
			if !strings.HasPrefix(tc.name, "directory gone") {
				kept = kept && exists(rec.Path) && isRegistered(t, root, rec.Path)
			}
			if err != nil && strings.Contains(err.Error(), "ink worktrees merge") && tc.name == "unknown state" {
				t.Errorf("the refusal of a worktree ink cannot judge suggests a merge: %v", err)
			}
			if tc.removed && !gone {
				t.Error("worktree, branch, registration or record remain")
			}
			if !tc.removed && !kept {
				t.Error("something was deleted although removal was refused")
			}
		})
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(t *testing.T, rec Record)
		want   Disposition
		text   string
	}{
		{"untouched", func(t *testing.T, rec Record) {}, DispositionRemoved, "no changes: worktree "},
		{"work", func(t *testing.T, rec Record) { writeFile(t, rec.Path, "n.txt", "n") }, DispositionKeptWork, "changes kept in worktree "},
		{"unknown", func(t *testing.T, rec Record) { os.Remove(filepath.Join(rec.Path, ".git")) }, DispositionKeptUnknown, "worktree kept for safety: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := newRepo(t)
			rec := newWorktree(t, root, newInkHome(t), "s")
			tc.mutate(t, rec)
			out := Settle(context.Background(), rec)
			if out.Disposition != tc.want || !strings.HasPrefix(out.Text, tc.text) {
				t.Fatalf("Settle = %+v, want %s", out, tc.want)
			}
			if removed := !exists(rec.Path) && !branchExists(t, root, rec.Branch); removed != (tc.want == DispositionRemoved) {
				t.Fatalf("removed = %v for disposition %s", removed, out.Disposition)
			}
		})
	}
}

// TestEmptyRecordIsNone: a record cut at zero bytes by a crash of the
// machine (as an earlier version of ink could leave one) is read as no
// record: listed as missing, not as unreadable.
func TestEmptyRecordIsNone(t *testing.T) {
	t.Parallel()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "e")
	if err := os.Truncate(recordPath(rec.Path), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(rec.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("readRecord of an empty record = %v, want os.ErrNotExist", err)
	}
	info := findInfo(t, home, "e")
	if !info.RecordMissing || info.Problem != "no ink record for this worktree" {
		t.Fatalf("Info = %+v, want the empty record read as none", info)
	}
}

func TestForgedRecordIsNotTrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "f")
	victim := t.TempDir()
	writeFile(t, victim, "precious.txt", "keep me")
	if err := os.WriteFile(recordPath(rec.Path), []byte(`{"repoRoot":"`+root+`","baseline":"`+rec.Baseline+`","path":"`+victim+`","branch":"ink/f","creationReflog":"x","cwd":"`+victim+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	info := findInfo(t, home, "f")
	if !info.RecordMissing || info.Record.Path != rec.Path || info.Record.RepoRoot != root || info.Record.Baseline != rec.Baseline || !strings.Contains(info.Problem, "is ignored") {
		t.Fatalf("Info = %+v, want the forged record ignored and the worktree described from git", info)
	}
	if _, err := RemoveForce(ctx, info, false); !errors.Is(err, ErrInUse) && !errors.Is(err, ErrUnmergedWork) {
		t.Fatalf("RemoveForce = %v, want a refusal", err)
	}
	if !exists(filepath.Join(victim, "precious.txt")) || !exists(rec.Path) {
		t.Fatal("something was deleted")
	}
}

// TestLoneEmptyRecordIsNone: an empty record with no worktree beside it —
// what a process killed while an earlier version of ink created the record
// left — is no worktree: no listing shows it and Find does not find it;
// Prune deletes it and says so (at once where its repository is known and
// its lock held, else once it is stale), as it deletes the temp file of a
// record whose creation was killed before its link; RemoveEmptyRecord,
// behind `ink worktrees rm`, deletes it.
func TestLoneEmptyRecordIsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	rec := newWorktree(t, root, home, "a")
	slugDir := filepath.Dir(rec.Path)
	empty := filepath.Join(slugDir, "b.json")
	temp := filepath.Join(slugDir, ".c.json.tmp-0123456789abcdef")
	for _, p := range []string{empty, temp} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := List(ctx, home)
	if err != nil || len(infos) != 1 || infos[0].ChildID != "a" {
		t.Fatalf("List = %+v, %v; want only worktree a", infos, err)
	}
	if _, err := Find(ctx, home, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find of a lone empty record = %v, want ErrNotFound", err)
	}
	res, err := Prune(ctx, home, PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.EmptyRecords) != 1 || res.EmptyRecords[0] != empty || len(res.Temps) != 1 || res.Temps[0] != temp {
		t.Fatalf("prune deleted empty records %v and temps %v; want [%s] and [%s]", res.EmptyRecords, res.Temps, empty, temp)
	}
	for _, p := range []string{empty, temp} {
		if exists(p) {
			t.Errorf("%s is still there", p)
		}
	}
	if !exists(recordPath(rec.Path)) {
		t.Error("prune deleted worktree a's record")
	}

	// In a directory no record names a repository for, only once stale.
	other := filepath.Join(filepath.Dir(slugDir), "elsewhere-0000")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(other, "d.json")
	if err := os.WriteFile(lone, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := Prune(ctx, home, PruneOptions{}); err != nil || len(res.EmptyRecords) != 0 || !exists(lone) {
		t.Fatalf("prune of a young empty record in an unknown repository's directory: %+v, %v", res, err)
	}
	old := time.Now().Add(-2 * staleTempAge)
	if err := os.Chtimes(lone, old, old); err != nil {
		t.Fatal(err)
	}
	if res, err := Prune(ctx, home, PruneOptions{}); err != nil || len(res.EmptyRecords) != 1 || res.EmptyRecords[0] != lone || exists(lone) {
		t.Fatalf("prune of a stale empty record: %+v, %v", res, err)
	}

	// rm's way: only a lone empty record goes.
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := RemoveEmptyRecord(home, "a"); err != nil || p != "" || !exists(recordPath(rec.Path)) {
		t.Fatalf("RemoveEmptyRecord of a real worktree's record: %q, %v", p, err)
	}
	if p, err := RemoveEmptyRecord(home, "b"); err != nil || p != empty || exists(empty) {
		t.Fatalf("RemoveEmptyRecord = %q, %v; want %s deleted", p, err, empty)
	}
}
