package worktree

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// Diff writes the worktree's changes against its baseline to w as a git
// patch: commits, uncommitted changes and untracked (not ignored) files
// alike, as stored (no textconv, no external diff). Untracked files are
// shown by marking them intent-to-add in a temporary copy of the index;
// the worktree's real index is never touched. A worktree ink cannot trust
// is refused (*UntrustedError) without running git in it.
func Diff(ctx context.Context, info Info, w io.Writer) error {
	return diffWith(ctx, info, func(l *layout, env []string) error {
		diff := l.call(diffArgs(info.Record.Baseline)...)
		diff.read, diff.env, diff.stdout = true, env, w
		_, err := diff.exec(ctx)
		return err
	})
}

// diffArgs is the diff Diff and DiffFiles show: the bytes as stored, the
// commits a submodule path moved to but never a look inside a submodule.
func diffArgs(baseline string, extra ...string) []string {
	return append(append([]string{"diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}, extra...), baseline)
}

// ChangedFile is one file a worktree changes against its baseline.
type ChangedFile struct {
	// Status is git's letter: A added, M modified, D deleted, T type
	// changed.
	Status string `json:"status"`
	Path   string `json:"path"`
}

// DiffResult is Diff for scripts: the files and the patch.
type DiffResult struct {
	ChildID  string        `json:"childId"`
	Path     string        `json:"path"`
	Branch   string        `json:"branch"`
	Baseline string        `json:"baseline"`
	Files    []ChangedFile `json:"files"`
	Patch    string        `json:"patch"`
}

// DiffFiles is Diff returning the changed files beside the patch.
func DiffFiles(ctx context.Context, info Info) (DiffResult, error) {
	rec := info.Record
	res := DiffResult{ChildID: info.ChildID, Path: rec.Path, Branch: rec.Branch, Baseline: rec.Baseline, Files: []ChangedFile{}}
	err := diffWith(ctx, info, func(l *layout, env []string) error {
		c := l.call(diffArgs(rec.Baseline, "--no-renames", "--name-status", "-z")...)
		c.read, c.env = true, env
		names, err := c.exec(ctx)
		if err != nil {
			return err
		}
		f := strings.Split(strings.TrimSuffix(names, "\x00"), "\x00")
		for i := 0; i+1 < len(f); i += 2 {
			res.Files = append(res.Files, ChangedFile{Status: f[i], Path: f[i+1]})
		}
		c.args = diffArgs(rec.Baseline)
		res.Patch, err = c.exec(ctx)
		return err
	})
	return res, err
}

// diffWith checks that info can be diffed and runs fn with the worktree's
// layout and the environment of a temporary index in which the worktree's
// untracked files are intent-to-add.
func diffWith(ctx context.Context, info Info, fn func(l *layout, env []string) error) error {
	rec := info.Record
	if rec.Baseline == "" {
		return fmt.Errorf("diff %s: its baseline is unknown (no ink record, and its branch's reflog no longer says where it started); inspect it with git in %s", info.ChildID, rec.Path)
	}
	if !dirExists(rec.Path) {
		return fmt.Errorf("diff %s: the worktree directory %s is missing; see its branch with `git -C %s log -p %s..%s`", info.ChildID, rec.Path, rec.RepoRoot, ShortSHA(rec.Baseline), rec.Branch)
	}
	l, err := openLayout(ctx, rec)
	if err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	err = withIndexCopy(l, func(env []string) error {
		add := l.call("add", "--intent-to-add", "--", ".")
		add.env = env
		if _, err := add.exec(ctx); err != nil {
			return err
		}
		return fn(l, env)
	})
	if err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	return nil
}

// withIndexCopy runs fn with GIT_INDEX_FILE pointing at a temporary copy of
// the worktree's index, deleted afterwards; the worktree's own index is
// never written. An index that is not a regular file is refused.
func withIndexCopy(l *layout, fn func(env []string) error) error {
	tmp, err := os.CreateTemp("", "ink-index-*")
	if err != nil {
		return err
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	defer os.Remove(tmpPath + ".lock")
	tmp.Close()
	os.Remove(tmpPath)
	if err := copyRegular(l.indexFile(), tmpPath); err != nil {
		return fmt.Errorf("copy index: %w", err)
	}
	return fn([]string{"GIT_INDEX_FILE=" + tmpPath})
}
