package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BranchPrefix starts the name of every branch ink creates for a worktree.
const BranchPrefix = "ink/"

// Record is what ink remembers about a worktree it created: enough to
// assess it, validate it before a resume, and remove it safely. It is part
// of the child's launch record.
type Record struct {
	// RepoRoot is the main checkout (Repo.Root).
	RepoRoot string `json:"repoRoot"`
	// Baseline is the commit the branch was created at.
	Baseline string `json:"baseline"`
	// Path is the worktree directory (symlinks resolved).
	Path string `json:"path"`
	// Branch is the short branch name, ink/<childId>.
	Branch string `json:"branch"`
	// CreationReflog is the branch's reflog ("%H %gs" lines, newest first)
	// right after creation.
	CreationReflog string `json:"creationReflog"`
	// Cwd is the child's working directory: Path plus the parent's prefix.
	Cwd string `json:"cwd"`
}

// ChildID returns the child id the worktree was created for (the last
// element of its path).
func (r Record) ChildID() string { return filepath.Base(r.Path) }

// inkHomeOf recovers $INK_HOME from a worktree path
// ($INK_HOME/worktrees/<slug>/<childId>).
func (r Record) inkHomeOf() string {
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Clean(r.Path))))
}

// Create makes a worktree for childID on a new branch ink/<childID> at
// repo.Head, under $INK_HOME/worktrees/<repo-slug>/<childID>, copies the
// gitignored files listed in the repository's .worktreeinclude, writes the
// record file beside it, and locks it with the reason "ink <childID> pid
// <pid>". Creations in one repository are serialised by a file lock, so it
// is safe for concurrent use across goroutines and processes. On any
// failure everything it made is rolled back and the error says why. The
// caller later removes the worktree with Remove (only when Clean).
func Create(ctx context.Context, repo Repo, inkHome, childID string, pid int) (Record, error) {
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
	if err := os.MkdirAll(worktreesDir(inkHome), 0o700); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	home, err := realpath(inkHome)
	if err != nil {
		return Record{}, fmt.Errorf("create worktree: resolve INK_HOME: %w", err)
	}
	slugDir := filepath.Join(worktreesDir(home), RepoSlug(repo.Root))
	path := filepath.Join(slugDir, childID)
	branch := BranchPrefix + childID

	lk, err := lockRepo(ctx, home, repo.Root)
	if err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	defer lk.unlock()
	if err := os.MkdirAll(slugDir, 0o700); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}

	if _, err := run(ctx, repo.Root, "worktree", "prune"); err != nil {
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return Record{}, fmt.Errorf("create worktree: %s already exists; pick another child id or remove it with `ink worktrees rm %s`", path, childID)
	}
	if _, err := read(ctx, repo.Root, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		return Record{}, fmt.Errorf("create worktree: branch %s already exists in %s; ink never reuses or deletes it — pick another child id", branch, repo.Root)
	}
	c := gitCall{dir: repo.Root, noHooks: true, config: []string{"core.logAllRefUpdates=true"},
		args: []string{"worktree", "add", "--quiet", "--lock", "--reason", lockReason(childID, pid), "-b", branch, path, repo.Head}}
	if _, err := c.exec(ctx); err != nil {
		rollback(context.WithoutCancel(ctx), repo.Root, path, branch, repo.Head)
		return Record{}, fmt.Errorf("create worktree: %w", err)
	}
	rec, err := finishCreate(ctx, repo, path, branch, includes)
	if err != nil {
		rollback(context.WithoutCancel(ctx), repo.Root, path, branch, repo.Head)
		return Record{}, fmt.Errorf("create worktree: %w (rolled back: nothing was left behind)", err)
	}
	return rec, nil
}

// finishCreate does everything after `git worktree add`.
func finishCreate(ctx context.Context, repo Repo, path, branch string, includes []string) (Record, error) {
	real, err := realpath(path)
	if err != nil {
		return Record{}, err
	}
	snap, err := readIn(ctx, real, "reflog", "show", "--format=%H %gs", "refs/heads/"+branch)
	if err != nil {
		return Record{}, fmt.Errorf("snapshot reflog: %w", err)
	}
	snap = strings.TrimSpace(snap)
	if snap == "" {
		return Record{}, fmt.Errorf("snapshot reflog: branch %s has no reflog", branch)
	}
	rec := Record{
		RepoRoot:       repo.Root,
		Baseline:       repo.Head,
		Path:           real,
		Branch:         branch,
		CreationReflog: snap,
		Cwd:            filepath.Join(real, filepath.FromSlash(repo.Prefix)),
	}
	if err := os.MkdirAll(rec.Cwd, 0o755); err != nil {
		return Record{}, fmt.Errorf("make child cwd: %w", err)
	}
	if err := copyIncludes(repo.Root, real, includes); err != nil {
		return Record{}, err
	}
	if err := writeRecord(rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// rollback undoes a partial Create: the worktree, its directory, the
// branch (only while it still points at baseline) and the record file.
func rollback(ctx context.Context, root, path, branch, baseline string) {
	_, _ = run(ctx, root, "worktree", "unlock", path)
	_, _ = run(ctx, root, "worktree", "remove", "--force", "--force", path)
	_ = os.RemoveAll(path)
	_ = os.Remove(recordPath(path))
	_, _ = run(ctx, root, "update-ref", "-d", "refs/heads/"+branch, baseline)
	_, _ = run(ctx, root, "worktree", "prune")
	removeEmptySlugDir(path)
}

// removeEmptySlugDir deletes the repository's directory under
// $INK_HOME/worktrees once its last worktree is gone. Callers hold the
// repository lock, so no Create can be about to use it.
func removeEmptySlugDir(worktreePath string) {
	_ = os.Remove(filepath.Dir(filepath.Clean(worktreePath)))
}

// lockReason is the reason Create and the orchestrator put on a worktree.
func lockReason(childID string, pid int) string {
	return fmt.Sprintf("ink %s pid %d", childID, pid)
}

// Lock marks the worktree locked with reason (e.g. "ink <childId> pid
// <pid>"), replacing an existing lock, so `git worktree prune` and other
// tools leave it alone while a worker runs in it.
func Lock(ctx context.Context, rec Record, reason string) error {
	if err := Unlock(ctx, rec); err != nil {
		return err
	}
	return lockWorktree(ctx, rec, reason)
}

func lockWorktree(ctx context.Context, rec Record, reason string) error {
	if _, err := run(ctx, rec.RepoRoot, "worktree", "lock", "--reason", reason, rec.Path); err != nil {
		return fmt.Errorf("lock worktree %s: %w", rec.Path, err)
	}
	return nil
}

// Unlock removes the worktree's lock; an unlocked worktree is not an error.
func Unlock(ctx context.Context, rec Record) error {
	_, err := run(ctx, rec.RepoRoot, "worktree", "unlock", rec.Path)
	if err != nil && !strings.Contains(err.Error(), "is not locked") {
		return fmt.Errorf("unlock worktree %s: %w", rec.Path, err)
	}
	return nil
}

// writeRecord stores rec beside its worktree, atomically.
func writeRecord(rec Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	dst := recordPath(rec.Path)
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".record-*")
	if err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write worktree record: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write worktree record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	return nil
}

// readRecord loads the record file of the worktree at path.
func readRecord(path string) (Record, error) {
	data, err := os.ReadFile(recordPath(path))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, fmt.Errorf("worktree record %s: %w", recordPath(path), err)
	}
	return rec, nil
}
