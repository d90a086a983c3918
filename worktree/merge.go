package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MergeRefusedError is a merge ink refused before touching anything: Why
// says what to do, Files lists the files concerned (dirty files of the main
// checkout, uncommitted files of the worktree, files the merge would
// overwrite, or conflicting files).
type MergeRefusedError struct {
	Why   string
	Files []string
}

var _ error = (*MergeRefusedError)(nil)

// Error says why the merge was refused and lists the files, one per line.
func (e *MergeRefusedError) Error() string {
	if len(e.Files) == 0 {
		return "merge refused: " + e.Why
	}
	return "merge refused: " + e.Why + ":\n  " + strings.Join(e.Files, "\n  ")
}

// MergeResult tells what Merge did.
type MergeResult struct {
	// Branch is the worktree's branch; Into the main checkout's branch.
	Branch string `json:"branch"`
	Into   string `json:"into"`
	// Commit is the merge commit ("" when AlreadyMerged).
	Commit string `json:"commit,omitempty"`
	// AlreadyMerged is true when the branch had nothing the current branch
	// lacks; nothing was done.
	AlreadyMerged bool `json:"alreadyMerged,omitempty"`
	// Shortstat summarises what the merge brought in.
	Shortstat string `json:"shortstat,omitempty"`
}

// Merge merges the worktree's branch into the branch checked out in the
// main checkout with `git merge --no-ff -m "ink: merge <branch>"` (hooks
// off), under the repository lock. It refuses with *MergeRefusedError,
// changing nothing, when the main checkout is detached or has uncommitted
// changes, when the worktree has uncommitted work (commit it there first),
// when `git merge-tree` predicts conflicts, or when a file the merge adds
// would overwrite an untracked or ignored file of the main checkout.
func Merge(ctx context.Context, info Info) (MergeResult, error) {
	rec := info.Record
	if rec.RepoRoot == "" || rec.Branch == "" {
		return MergeResult{}, fmt.Errorf("merge %s: repository or branch unknown", info.ChildID)
	}
	lk, err := lockRepo(ctx, rec.inkHomeOf(), rec.RepoRoot)
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge %s: %w", info.ChildID, err)
	}
	defer lk.unlock()

	res := MergeResult{Branch: rec.Branch}
	root := rec.RepoRoot
	into, err := read(ctx, root, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return res, &MergeRefusedError{Why: fmt.Sprintf("the main checkout %s is not on a branch (detached HEAD); check out the branch to merge into first", root)}
	}
	res.Into = strings.TrimSpace(into)

	dirty, err := read(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return res, fmt.Errorf("merge %s: %w", info.ChildID, err)
	}
	if files := statusFiles(dirty); len(files) > 0 {
		return res, &MergeRefusedError{Why: fmt.Sprintf("the main checkout %s has uncommitted changes; commit or stash them first", root), Files: files}
	}
	if dirExists(rec.Path) {
		st, err := uncommitted(ctx, rec.Path)
		if err != nil {
			return res, fmt.Errorf("merge %s: %w", info.ChildID, err)
		}
		if files := statusFiles(strings.Join(st, "\n")); len(files) > 0 {
			return res, &MergeRefusedError{Why: fmt.Sprintf("the worktree %s has uncommitted work; commit it in the worktree first (cd %s && git add -A && git commit)", rec.Path, rec.Path), Files: files}
		}
	}
	tip, err := read(ctx, root, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch+"^{commit}")
	if err != nil {
		return res, fmt.Errorf("merge %s: branch %s not found: %w", info.ChildID, rec.Branch, err)
	}
	tip = strings.TrimSpace(tip)
	if _, err := read(ctx, root, "merge-base", "--is-ancestor", tip, "HEAD"); err == nil {
		res.AlreadyMerged = true
		return res, nil
	}

	out, err := read(ctx, root, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", tip)
	switch exitCode(err) {
	case 0:
		// git would overwrite an ignored file in the way of a file the
		// merge adds, and stop with its own message at an untracked one:
		// refuse both here, naming them.
		tree, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		added, err := read(ctx, root, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", "HEAD", tree)
		if err != nil {
			return res, fmt.Errorf("merge %s: preflight: %w", info.ChildID, err)
		}
		var inWay []string
		for _, f := range strings.Split(added, "\x00") {
			if f == "" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
				inWay = append(inWay, f)
			}
		}
		if len(inWay) > 0 {
			return res, &MergeRefusedError{Why: fmt.Sprintf("the merge would overwrite untracked or ignored files in the main checkout %s; move them away first", root), Files: inWay}
		}
	case 1:
		ls := lines(out)
		var files []string
		if len(ls) > 1 {
			files = ls[1:]
		}
		return res, &MergeRefusedError{Why: fmt.Sprintf("merging %s into %s would conflict; resolve it by hand (git merge %s in %s) or rebase the branch first", rec.Branch, res.Into, rec.Branch, root), Files: files}
	default:
		return res, fmt.Errorf("merge %s: preflight: %w", info.ChildID, err)
	}

	if _, err := run(ctx, root, "merge", "--no-ff", "--no-edit", "-m", "ink: merge "+rec.Branch, tip); err != nil {
		if _, merr := read(ctx, root, "rev-parse", "-q", "--verify", "MERGE_HEAD"); merr == nil {
			_, _ = run(context.WithoutCancel(ctx), root, "merge", "--abort")
		}
		return res, fmt.Errorf("merge %s: %w", info.ChildID, err)
	}
	head, err := read(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return res, fmt.Errorf("merge %s: merged, but HEAD is unreadable: %w", info.ChildID, err)
	}
	res.Commit = strings.TrimSpace(head)
	if st, err := read(ctx, root, "diff", "--shortstat", "HEAD^1", "HEAD"); err == nil {
		res.Shortstat = strings.TrimSpace(st)
	}
	return res, nil
}

// statusFiles extracts file names from `git status --porcelain` lines.
func statusFiles(porcelain string) []string {
	var files []string
	for _, l := range lines(porcelain) {
		if len(l) > 3 {
			files = append(files, l[3:])
		}
	}
	return files
}
