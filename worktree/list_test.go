package worktree

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperList prints ListWith of envHome (with envRepo as a repository to
// look in, without status) as JSON.
func helperList() int {
	infos, err := ListWith(context.Background(), os.Getenv(envHome), ListOptions{Repos: []string{os.Getenv(envRepo)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(infos); err != nil {
		return 1
	}
	return 0
}

// TestListRunsOneGitPerRepository: without --status, listing worktrees of
// two repositories runs `git worktree list` once per repository and no
// other git, however many worktrees there are; with status it describes
// each from git and its lock.
func TestListRunsOneGitPerRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := newInkHome(t)
	a, b := newRepo(t), newRepo(t)
	var recs []Record
	for i := range 6 {
		root := a
		if i%2 == 1 {
			root = b
		}
		recs = append(recs, newWorktree(t, root, home, fmt.Sprintf("w%d", i)))
	}
	commitIn(t, recs[0].Path, "x.txt", "x", "x")
	Unlock(ctx, recs[1])

	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	fakeDir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(fakeDir, "git")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "git.log")
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=list", envHome+"="+home, envRepo+"="+a, envRealGit+"="+realGit, envGitLog+"="+log,
		"PATH="+fakeDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("list helper: %v", err)
	}
	var infos []Info
	if err := json.Unmarshal(out, &infos); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(log)
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	listCalls := 0
	for _, c := range calls {
		if strings.HasSuffix(c, "worktree list --porcelain") {
			listCalls++
		}
	}
	// One rev-parse finds the repository of envRepo; then one worktree
	// list per repository.
	if len(infos) != 6 || listCalls != 2 || len(calls) != 3 {
		t.Fatalf("listed %d worktrees with %d git calls:\n%s", len(infos), len(calls), data)
	}
	for _, in := range infos {
		if in.Assessment != nil || !in.Registered || in.Head == "" || in.Record.RepoRoot == "" {
			t.Errorf("%s: %+v", in.ChildID, in)
		}
		wantLocked := in.ChildID != "w1"
		if in.Locked != wantLocked || wantLocked && (in.LockPID != os.Getpid() || !in.LockPIDAlive) {
			t.Errorf("%s: locked %v pid %d alive %v", in.ChildID, in.Locked, in.LockPID, in.LockPIDAlive)
		}
		if moved := in.Head != in.Record.Baseline; moved != (in.ChildID == "w0") {
			t.Errorf("%s: head %s, baseline %s", in.ChildID, in.Head, in.Record.Baseline)
		}
	}
}
