package worktree

import (
	"github.com/inkdev/ink/durable"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BranchPrefix starts the name of every branch ink creates for a worktree.
const BranchPrefix = "ink/"

// testHookCreate, when set by a test before any Create runs, is called at
// each named step of Create (with the repository lock held); an error fails
// Create there.
var testHookCreate func(childID, step string) error

func createStep(childID, step string) error {
	if testHookCreate != nil {
		return testHookCreate(childID, step)
	}
	return nil
}

// Create makes a worktree for childID on a new branch ink/<childID> at
// repo.Head, under $INK_HOME/worktrees/<repo-slug>/<childID>, copies the
// gitignored files listed in the repository's .worktreeinclude, and locks
// it with the reason "ink <childID> pid <pid>". Creations in one repository
// are serialised by the repository's lock (see the package doc), so it is
// safe for concurrent use across goroutines, processes and INK_HOMEs.
//
// It is crash-safe: the record file is written first (before git is asked
// for anything), and the worktree is locked "ink <childID> pid <pid>
// creating" until every step is done. Whatever instant the process dies,
// what is left is nothing, or a record and perhaps its branch and worktree
// that List attributes to childID and Prune removes. On an error everything
// it made is rolled back and the error says why. The caller later removes
// the worktree with Remove (only when Clean).
//
// ink creates worktrees with CreateFor (the origin recorded); Create is
// kept for the tests and benchmarks that need a worktree with no origin.
func Create(ctx context.Context, repo Repo, inkHome, childID string, pid int) (Record, error) {
	return CreateFor(ctx, repo, inkHome, childID, pid, Origin{})
}

// Origin names the task call a worktree is made for: the session whose
// agent made the call and the call's id. It is kept in the record, so that
// a parent whose supervisor died after the worktree was made, and before
// the child's transcript existed, can still name the child.
type Origin struct {
	ParentSession string `json:"parentSession,omitempty"`
	ToolCallID    string `json:"toolCallId,omitempty"`
}

// CreateFor is Create for the task call origin names.
func CreateFor(ctx context.Context, repo Repo, inkHome, childID string, pid int, origin Origin) (Record, error) {
	if err := checkChildID(childID); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	if repo.Root == "" || repo.Head == "" {
		return Record{}, errors.New("create worktree: repository not detected (empty root or head); call Detect first")
	}
	// A bad .worktreeinclude is refused before anything is written.
	includes, err := planIncludes(ctx, repo.Root)
	if err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	if err := durable.MkdirAll(durable.OS, worktreesDir(inkHome), 0o700); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	home, err := realpath(inkHome)
	if err != nil {
		return Record{}, fmt.Errorf("create worktree: resolve INK_HOME: %w", err)
	}
	slugDir := filepath.Join(worktreesDir(home), RepoSlug(repo.Root))
	branch := BranchPrefix + childID

	lk, err := lockRepo(ctx, repo.Root)
	if err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	defer lk.unlock()
	if err := createStep(childID, "locked"); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	if err := durable.MkdirAll(durable.OS, slugDir, 0o700); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	removeTemps(slugDir, 0)
	path := filepath.Join(slugDir, childID)

	if _, err := lk.run(ctx, repo.Root, "worktree", "prune"); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	if repo.from != nil {
		// The parent works in a worktree of its own: its commits, the
		// baseline among them, are brought into the repository first.
		if err := bringBack(ctx, lk, *repo.from, repo.Head); err != nil {
			return Record{}, fmt.Errorf("create worktree: %w", err)
		}
	}
	for _, p := range []string{path, recordPath(path), gitDirOf(path)} {
		if _, err := os.Lstat(p); err == nil {
			return Record{}, fmt.Errorf("create worktree: %s already exists; pick another child id or remove it with `ink worktrees rm %s`", p, childID)
		}
	}
	if _, err := read(ctx, repo.Root, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		return Record{}, fmt.Errorf("create worktree: branch %s already exists in %s; ink never reuses or deletes it — pick another child id", branch, repo.Root)
	}
	rec := Record{
		RepoRoot:       repo.Root,
		Baseline:       repo.Head,
		Path:           path,
		Branch:         branch,
		CreationReflog: creationReflog(repo.Head),
		Cwd:            filepath.Join(path, filepath.FromSlash(repo.Prefix)),
	}
	if origin != (Origin{}) {
		rec.Origin = &origin
	}
	if err := createRecord(rec); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	undo := func(err error) (Record, error) {
		rollback(context.WithoutCancel(ctx), lk, rec)
		return Record{}, fmt.Errorf("create worktree: %w (rolled back: nothing was left behind)", err)
	}
	if err := createStep(childID, "recorded"); err != nil {
		return undo(err)
	}
	if err := addWorktree(ctx, lk, rec, lockReason(childID, pid)+creatingMark); err != nil {
		return undo(err)
	}
	// The worktree's directory and its branch must survive a crash of the
	// machine as its record does.
	if err := durable.OS.SyncDir(slugDir); err != nil {
		return undo(err)
	}
	if err := syncBranch(ctx, rec); err != nil {
		return undo(err)
	}
	if err := createStep(childID, "added"); err != nil {
		return undo(err)
	}
	if err := finishCreate(ctx, rec, includes); err != nil {
		return undo(err)
	}
	if err := createStep(childID, "finished"); err != nil {
		return undo(err)
	}
	if err := unlockWorktree(ctx, lk, rec); err != nil {
		return undo(err)
	}
	if err := createStep(childID, "relocking"); err != nil {
		return undo(err)
	}
	if err := lockWorktree(ctx, lk, rec, lockReason(childID, pid)); err != nil {
		return undo(err)
	}
	return rec, nil
}

// addWorktree runs `git worktree add` for rec, locked with reason. A
// transient git failure (another git process held a lock, or was changing
// another worktree's metadata) is rolled back and tried again a few times.
func addWorktree(ctx context.Context, lk *repoLock, rec Record, reason string) error {
	c := lk.call(gitCall{dir: rec.RepoRoot, noRetry: true, config: []string{"core.logAllRefUpdates=true"},
		args: []string{"worktree", "add", "--quiet", "--lock", "--reason", reason, "-b", rec.Branch, rec.Path, rec.Baseline}})
	for attempt := 0; ; attempt++ {
		_, err := c.exec(ctx)
		if err == nil || attempt >= len(retryDelays) || !transient(err) {
			return err
		}
		undoGit(context.WithoutCancel(ctx), lk, rec)
		if !sleepCtx(ctx, jitter(retryDelays[attempt])) {
			return err
		}
	}
}

// finishCreate does everything after `git worktree add`: it checks that the
// branch's reflog is the one recorded, gives the worktree its own git
// directory, makes the child's cwd and copies the .worktreeinclude files.
func finishCreate(ctx context.Context, rec Record, includes []string) error {
	real, err := realpath(rec.Path)
	if err != nil {
		return err
	}
	if real != rec.Path {
		return fmt.Errorf("the worktree %s resolves to %s: a directory on its path was replaced by a symlink", rec.Path, real)
	}
	snap, err := read(ctx, rec.RepoRoot, "reflog", "show", "--format=%H %gs", "refs/heads/"+rec.Branch)
	if err != nil {
		return fmt.Errorf("snapshot reflog: %w", err)
	}
	snap = strings.TrimSpace(snap)
	if snap == "" {
		return fmt.Errorf("snapshot reflog: branch %s has no reflog", rec.Branch)
	}
	if snap != rec.CreationReflog {
		rec.CreationReflog = snap
		if err := replaceRecord(rec); err != nil {
			return err
		}
	}
	if err := makeGitDir(ctx, rec); err != nil {
		return err
	}
	if err := os.MkdirAll(rec.Cwd, 0o755); err != nil {
		return fmt.Errorf("make child cwd: %w", err)
	}
	return copyIncludes(rec.RepoRoot, rec.Path, includes)
}

// rollback undoes a partial Create: the worktree, its directory, the
// branch (only while it still points at baseline) and the record file.
func rollback(ctx context.Context, lk *repoLock, rec Record) {
	undoGit(ctx, lk, rec)
	_ = removeRecord(rec.Path)
	removeEmptySlugDir(rec.Path)
}

// undoGit removes what `git worktree add` and makeGitDir made for rec: the
// directory, the worktree's git directory, the registration and the branch
// (only while it still points at baseline).
func undoGit(ctx context.Context, lk *repoLock, rec Record) {
	_, _ = lk.run(ctx, rec.RepoRoot, "worktree", "unlock", rec.Path)
	_ = os.RemoveAll(rec.Path)
	_ = removeGitDir(rec.Path)
	_, _ = lk.run(ctx, rec.RepoRoot, "worktree", "prune")
	_, _ = lk.run(ctx, rec.RepoRoot, "update-ref", "-d", "refs/heads/"+rec.Branch, rec.Baseline)
}

// removeEmptySlugDir deletes the repository's directory under
// $INK_HOME/worktrees once its last worktree is gone. Callers hold the
// repository lock, so no Create can be about to use it.
func removeEmptySlugDir(worktreePath string) {
	_ = os.Remove(filepath.Dir(filepath.Clean(worktreePath)))
}
