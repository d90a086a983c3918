package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// childTable answers ListOptions.Child from a map of child ids; a child
// not in it has no transcript.
func childTable(m map[string]ChildStatus) func(Info) ChildStatus {
	return func(in Info) ChildStatus { return m[in.ChildID] }
}

func entryIDs(es []PruneEntry) map[string]PruneEntry {
	m := map[string]PruneEntry{}
	for _, e := range es {
		m[e.ChildID] = e
	}
	return m
}

// TestPrune: prune removes what nothing needs — clean worktrees of gone or
// completed children, merged ones, interrupted creations, leftovers of
// worktrees removed by hand, another INK_HOME's clean leftovers in the
// repository, stale temporary records — and keeps, saying why, what is in
// use, holds work, cannot be judged, or belongs to a child that can still
// be resumed (until --include-resumable, which says what is lost).
func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := newRepo(t)
	home := newInkHome(t)
	other := newInkHome(t)
	dead := deadPID(t)
	mk := func(home, id string) Record { return newWorktree(t, root, home, id) }

	unlocked := mk(home, "unlocked")
	Unlock(ctx, unlocked)
	deadLock := mk(home, "dead-lock")
	Lock(ctx, deadLock, lockReason("dead-lock", dead))
	live := mk(home, "live")
	work := mk(home, "work")
	Unlock(ctx, work)
	writeFile(t, work.Path, "wip.txt", "wip")
	broken := mk(home, "broken")
	Unlock(ctx, broken)
	os.Remove(filepath.Join(broken.Path, ".git"))
	// The orphan's worktree and branch were removed by hand; only ink's
	// record remains.
	orphan := mk(home, "orphan")
	Unlock(ctx, orphan)
	os.RemoveAll(orphan.Path)
	git(t, root, "worktree", "prune")
	git(t, root, "branch", "-D", "ink/orphan")
	resumable := mk(home, "resumable")
	Unlock(ctx, resumable)
	completed := mk(home, "completed")
	Unlock(ctx, completed)
	merged := mk(home, "merged")
	Unlock(ctx, merged)
	commitIn(t, merged.Path, "merged.txt", "m", "merged work")
	git(t, root, "merge", "-q", "--no-edit", "ink/merged")
	userLocked := mk(home, "user-locked")
	Lock(ctx, userLocked, "my experiment, keep it")
	incomplete := mk(home, "incomplete")
	Lock(ctx, incomplete, lockReason("incomplete", dead)+creatingMark)
	// Another INK_HOME's leftovers in the same repository.
	otherClean := mk(other, "other-clean")
	Lock(ctx, otherClean, lockReason("other-clean", dead))
	otherWork := mk(other, "other-work")
	Lock(ctx, otherWork, lockReason("other-work", dead))
	writeFile(t, otherWork.Path, "theirs.txt", "theirs")
	// Temporary records a crash left.
	slugDir := filepath.Dir(unlocked.Path)
	writeFile(t, slugDir, ".gone.json.tmp", "{")
	writeFile(t, slugDir, ".record-123", "{")

	children := childTable(map[string]ChildStatus{
		"resumable": {Transcript: "/t/resumable.jsonl", LastStatus: "timeout", Resumable: true},
		"completed": {Transcript: "/t/completed.jsonl", LastStatus: "completed"},
		"work":      {Transcript: "/t/work.jsonl", LastStatus: "aborted", Resumable: true},
	})
	res, err := Prune(ctx, home, PruneOptions{Repos: []string{root}, Child: children})
	if err != nil {
		t.Fatal(err)
	}
	removed, kept := entryIDs(res.Removed), entryIDs(res.Kept)
	wantRemoved := map[string]string{
		"unlocked":    "clean (no changes since baseline",
		"dead-lock":   "locked by process " + itoa(dead) + ", which is gone",
		"orphan":      "its worktree directory is gone",
		"completed":   "its child's last attempt ended completed",
		"merged":      "every commit of ink/merged is merged into your HEAD",
		"incomplete":  "its creation was interrupted (process " + itoa(dead) + " died before it finished)",
		"other-clean": "clean (",
	}
	wantKept := map[string]string{
		"live":        "in use by running process " + itoa(os.Getpid()),
		"work":        "holds work (uncommitted changes (untracked); untracked: wip.txt): review it with `ink worktrees diff work`, merge it with `ink worktrees merge --commit work`",
		"broken":      "kept for safety: ",
		"resumable":   "child resumable can still be resumed (its last attempt ended timeout): resume it with `ink task --resume resumable",
		"other-work":  "holds work",
		"user-locked": "locked with the reason \"my experiment, keep it\", which is not ink's; unlock it with `git worktree unlock " + userLocked.Path + "` to let prune judge it",
	}
	for id, why := range wantRemoved {
		if e, ok := removed[id]; !ok || !strings.Contains(e.Why, why) {
			t.Errorf("removed[%s] = %+v, want a reason containing %q", id, e, why)
		}
	}
	for id, why := range wantKept {
		if e, ok := kept[id]; !ok || !strings.Contains(e.Why, why) {
			t.Errorf("kept[%s] = %+v, want a reason containing %q", id, e, why)
		}
	}
	if len(removed) != len(wantRemoved) || len(kept) != len(wantKept) {
		t.Errorf("removed %d and kept %d, want %d and %d:\n%+v\n%+v", len(removed), len(kept), len(wantRemoved), len(wantKept), res.Removed, res.Kept)
	}
	if !kept["resumable"].Resumable || kept["resumable"].Lost != "" {
		t.Errorf("the resumable child's entry = %+v", kept["resumable"])
	}
	if e := removed["other-clean"]; e.InkHome != homeReal(other) {
		t.Errorf("the other home's worktree is not attributed to it: %+v", e)
	}
	for _, rec := range []Record{unlocked, deadLock, completed, merged, incomplete, otherClean, orphan} {
		if exists(rec.Path) || branchExists(t, root, rec.Branch) || exists(recordPath(rec.Path)) || isRegistered(t, root, rec.Path) {
			t.Errorf("%s was not fully removed", rec.Path)
		}
	}
	for _, rec := range []Record{live, work, broken, resumable, otherWork, userLocked} {
		if !exists(rec.Path) || !branchExists(t, root, rec.Branch) {
			t.Errorf("%s was not kept", rec.Path)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(work.Path, "wip.txt")); string(data) != "wip" {
		t.Error("work was lost")
	}
	if len(res.Temps) != 2 || exists(filepath.Join(slugDir, ".gone.json.tmp")) || exists(filepath.Join(slugDir, ".record-123")) {
		t.Errorf("stale temporary records: removed %v", res.Temps)
	}

	// --include-resumable removes the resumable child's clean worktree and
	// says what that costs; work stays.
	res, err = Prune(ctx, home, PruneOptions{Child: children, IncludeResumable: true})
	if err != nil {
		t.Fatal(err)
	}
	removed = entryIDs(res.Removed)
	if len(removed) != 1 || !strings.Contains(removed["resumable"].Lost, "child resumable can no longer be resumed (its last attempt ended timeout; its transcript /t/resumable.jsonl stays)") {
		t.Errorf("prune --include-resumable removed %+v", res.Removed)
	}
	if exists(resumable.Path) || branchExists(t, root, resumable.Branch) {
		t.Error("the resumable child's worktree was not removed")
	}
	if !exists(work.Path) {
		t.Error("--include-resumable removed a worktree with work")
	}
	// Without the repository, another home's worktrees are not looked at.
	if e, ok := entryIDs(res.Kept)["other-work"]; ok {
		t.Errorf("prune without the repository listed another home's worktree: %+v", e)
	}
}
