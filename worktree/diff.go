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
	return diffWith(ctx, info, func(env []string) error {
		diff := gitCall{dir: info.Record.Path, read: true, ceiling: parentDir(info.Record.Path), env: env, stdout: w,
			args: []string{"diff", "--no-ext-diff", info.Record.Baseline}}
		_, err := diff.exec(ctx)
		return err
	})
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
	err := diffWith(ctx, info, func(env []string) error {
		c := gitCall{dir: rec.Path, read: true, ceiling: parentDir(rec.Path), env: env}
		c.args = []string{"diff", "--no-ext-diff", "--no-renames", "--name-status", "-z", rec.Baseline}
		names, err := c.exec(ctx)
		if err != nil {
			return err
		}
		f := strings.Split(strings.TrimSuffix(names, "\x00"), "\x00")
		for i := 0; i+1 < len(f); i += 2 {
			res.Files = append(res.Files, ChangedFile{Status: f[i], Path: f[i+1]})
		}
		c.args = []string{"diff", "--no-ext-diff", rec.Baseline}
		res.Patch, err = c.exec(ctx)
		return err
	})
	return res, err
}

// diffWith checks that info can be diffed and runs fn with the environment
// of a temporary index in which the worktree's untracked files are
// intent-to-add.
func diffWith(ctx context.Context, info Info, fn func(env []string) error) error {
	rec := info.Record
	if rec.Baseline == "" {
		return fmt.Errorf("diff %s: its baseline is unknown (no ink record, and its branch's reflog no longer says where it started); inspect it with git in %s", info.ChildID, rec.Path)
	}
	if !dirExists(rec.Path) {
		return fmt.Errorf("diff %s: the worktree directory %s is missing; see its branch with `git -C %s log -p %s..%s`", info.ChildID, rec.Path, rec.RepoRoot, ShortSHA(rec.Baseline), rec.Branch)
	}
	err := withIndexCopy(ctx, rec.Path, func(env []string) error {
		add := gitCall{dir: rec.Path, noHooks: true, ceiling: parentDir(rec.Path), env: env,
			args: []string{"add", "--intent-to-add", "--", "."}}
		if _, err := add.exec(ctx); err != nil {
			return err
		}
		return fn(env)
	})
	if err != nil {
		return fmt.Errorf("diff %s: %w", info.ChildID, err)
	}
	return nil
}

// withIndexCopy runs fn with GIT_INDEX_FILE pointing at a temporary copy of
// the index of the worktree at path, deleted afterwards; the worktree's own
// index is never written.
func withIndexCopy(ctx context.Context, path string, fn func(env []string) error) error {
	idx, err := readIn(ctx, path, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "ink-index-*")
	if err != nil {
		return err
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
			return fmt.Errorf("copy index: %w", err)
		}
	case errors.Is(err, os.ErrNotExist):
		tmp.Close()
		os.Remove(tmpPath)
	default:
		tmp.Close()
		return err
	}
	return fn([]string{"GIT_INDEX_FILE=" + tmpPath})
}
