package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// refContent matches what a loose ref file holds: an object name (SHA-1
// or SHA-256), or a symbolic ref. Compiled on first use: most ink
// processes never look at a ref file.
var refContent = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64}|ref: \S+)\n?$`)
})

// removeBrokenBranch deletes the loose ref file of rec's ink branch when it
// is broken — empty, or holding something that is not a ref, as a crash
// of the machine can leave a ref git wrote without syncing it — and returns
// the ref's name ("" when it was not broken). A broken ref holds nothing
// git can read, and while it exists `git gc` and every command that walks
// all refs fail with "bad object". Only an ink/<childId> branch of rec is
// ever touched. The caller holds the repository lock.
func removeBrokenBranch(ctx context.Context, lk *repoLock, rec Record) (string, error) {
	if !inkOwned(rec) {
		return "", nil
	}
	common, err := gitCommonDir(ctx, rec.RepoRoot)
	if err != nil {
		return "", err
	}
	ref := "refs/heads/" + rec.Branch
	path := filepath.Join(common, filepath.FromSlash(ref))
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1024 {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil || refContent().Match(data) {
		return "", err
	}
	if err := os.Remove(path); err != nil {
		return "", fmt.Errorf("remove the broken branch %s (%s): %w", rec.Branch, path, err)
	}
	_ = syncDir(filepath.Dir(path))
	return ref, nil
}

// RemoveBrokenBranch is removeBrokenBranch under rec's repository lock, for
// a worktree that is otherwise kept (`ink worktrees prune`).
func RemoveBrokenBranch(ctx context.Context, rec Record) (string, error) {
	if rec.RepoRoot == "" || !inkOwned(rec) || !inkShaped(rec.Path, rec.RepoRoot) {
		return "", nil
	}
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return "", err
	}
	defer lk.unlock()
	return removeBrokenBranch(ctx, lk, rec)
}

// gitSyncs reports whether the git on PATH honours core.fsync (2.36 and
// later). It asks once per process, through the hardened call like every
// other git ink runs.
var gitSyncs = sync.OnceValue(func() bool {
	out, err := gitCall{dir: string(filepath.Separator), args: []string{"version"}}.once(context.Background())
	return err == nil && versionAtLeast(string(out), 2, 36)
})

// versionAtLeast reports whether `git version` output names major.minor
// or later.
func versionAtLeast(out string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimSpace(out), "git version "), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// syncBranch makes the ref of rec's new branch durable where git would not
// (before 2.36): its file, and the directories that hold it. The branch
// points at a commit that already existed, so no object needs it.
func syncBranch(ctx context.Context, rec Record) error {
	if gitSyncs() {
		return nil
	}
	common, err := gitCommonDir(ctx, rec.RepoRoot)
	if err != nil {
		return err
	}
	path := filepath.Join(common, "refs", "heads", filepath.FromSlash(rec.Branch))
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // packed, which git wrote itself
	}
	if err != nil {
		return err
	}
	serr := f.Sync()
	f.Close()
	if serr != nil {
		return serr
	}
	for d := filepath.Dir(path); len(d) > len(common); d = filepath.Dir(d) {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}
