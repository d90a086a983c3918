package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Diff writes the worktree's changes against its baseline to w as a git
// patch: commits, uncommitted changes and untracked (not ignored) files
// alike. Untracked files are shown by marking them intent-to-add in a
// temporary copy of the index; the worktree's real index is never touched.
func Diff(ctx context.Context, info Info, w io.Writer) error {
	rec := info.Record
	if info.RecordMissing || rec.Baseline == "" {
		return fmt.Errorf("diff %s: the baseline is unknown (no ink record); inspect it with git in %s", info.ChildID, rec.Path)
	}
	if !dirExists(rec.Path) {
		return fmt.Errorf("diff %s: the worktree directory %s is missing", info.ChildID, rec.Path)
	}
	idx, err := readIn(ctx, rec.Path, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	tmp, err := os.CreateTemp("", "ink-diff-index-*")
	if err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	defer os.Remove(tmpPath + ".lock")
	src, err := os.Open(strings.TrimSpace(idx))
	switch {
	case err == nil:
		_, err = io.Copy(tmp, src)
		src.Close()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("diff %s: copy index: %w", info.ChildID, err)
		}
	case errors.Is(err, os.ErrNotExist):
		tmp.Close()
		os.Remove(tmpPath)
	default:
		tmp.Close()
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	env := []string{"GIT_INDEX_FILE=" + tmpPath}
	add := gitCall{dir: rec.Path, noHooks: true, ceiling: parentDir(rec.Path), env: env,
		args: []string{"add", "--intent-to-add", "--", "."}}
	if _, err := add.exec(ctx); err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	diff := gitCall{dir: rec.Path, read: true, ceiling: parentDir(rec.Path), env: env, stdout: w,
		args: []string{"diff", "--no-ext-diff", rec.Baseline}}
	if _, err := diff.exec(ctx); err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	return nil
}
