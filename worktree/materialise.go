package worktree

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Workspace is a remote worker's repository, as Materialise made it.
type Workspace struct {
	// Dir is the worktree: the same absolute path as the supervisor's.
	Dir string
	// GitDir is its git directory, <Dir>.git (Dir/.git is a link to it,
	// as in the supervisor's worktree).
	GitDir string
	// Branch is the short branch name, ink/<childId>; HEAD names it.
	Branch string
	// Baseline is the commit the repository is shallow at; Head the
	// branch's tip; Snapshot the working tree as shipped, which the first
	// Snapshot takes as since.
	Baseline, Head, Snapshot string
	// Includes are the .worktreeinclude files written (slash paths).
	Includes []string
}

// ExistsError is Materialise refusing a path that already exists on the
// worker's machine: the worker runs where the supervisor's worktree is
// (the same machine, or a shared disk, without a mount namespace of its
// own), or an earlier run left it.
type ExistsError struct {
	Path string
}

var _ error = (*ExistsError)(nil)

// Error says which path and what to do.
func (e *ExistsError) Error() string {
	return fmt.Sprintf("the remote worker will not make the workspace at %s: that path already exists on this machine, so the worker runs where the supervisor's worktree is (or an earlier run left it); run the worker on another machine, in a container or in a mount namespace of its own, or remove %s there", e.Path, e.Path)
}

// Materialise runs on a remote worker, before the attempt: it makes, at the
// absolute path dir (the supervisor's worktree path), a repository of its
// own from a bundle Pack wrote, read from r. The repository's git
// directory is <dir>.git (dir/.git is a link to it), shallow at the
// baseline, with HEAD on the branch ink/<childId> at the child's commits,
// the working tree as the supervisor's worktree was (uncommitted and
// untracked files included) and the index at the branch, so `git status`
// shows what the child had not committed. Shipped .worktreeinclude files
// are written where nothing is in the way.
//
// dir must not exist or be an empty directory (a mount point), and
// <dir>.git must not exist: anything else is an *ExistsError and nothing
// is touched. On any other failure what Materialise made is removed.
// Every git call is ink's hardened git. Not safe for concurrent use on one
// dir.
func Materialise(ctx context.Context, dir string, r io.Reader) (Workspace, error) {
	if !filepath.IsAbs(dir) {
		return Workspace{}, fmt.Errorf("materialise the workspace %q: the path must be absolute", dir)
	}
	dir = filepath.Clean(dir)
	g := gitDirOf(dir)
	made, err := claimDir(dir, g)
	if err != nil {
		return Workspace{}, err
	}
	ws, err := materialise(ctx, dir, g, r)
	if err != nil {
		_ = os.RemoveAll(g)
		if made {
			_ = os.RemoveAll(dir)
		} else if entries, rerr := os.ReadDir(dir); rerr == nil {
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		return Workspace{}, fmt.Errorf("materialise the workspace %s: %w", dir, err)
	}
	return ws, nil
}

// claimDir checks that dir is absent or an empty directory and that g is
// absent, and makes dir; made says whether it made it.
func claimDir(dir, g string) (made bool, err error) {
	if _, err := os.Lstat(g); err == nil {
		return false, &ExistsError{Path: g}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("materialise the workspace %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("materialise the workspace %s: %w", dir, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("materialise the workspace %s: %w", dir, err)
	case !fi.IsDir():
		return false, &ExistsError{Path: dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("materialise the workspace %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return false, &ExistsError{Path: dir}
	}
	return false, nil
}

func materialise(ctx context.Context, dir, g string, r io.Reader) (Workspace, error) {
	branchRef := "refs/heads/" + BranchPrefix + filepath.Base(dir)
	if err := checkChildID(filepath.Base(dir)); err != nil {
		return Workspace{}, fmt.Errorf("the workspace's last path element must be the child id: %w", err)
	}
	br := bufio.NewReaderSize(r, maxBundleHeader)
	h, err := readBundleHeader(br, func(ref string) bool {
		return ref == refBaseline || ref == refSnapshot || ref == refIncludes || ref == branchRef
	})
	if err != nil {
		return Workspace{}, err
	}
	for _, ref := range []string{refBaseline, refSnapshot, branchRef} {
		if h.refs[ref] == "" {
			return Workspace{}, fmt.Errorf("%w: it carries no %s (was it written by Pack for this worktree?)", errHeader, ref)
		}
	}
	ws := Workspace{Dir: dir, GitDir: g, Branch: strings.TrimPrefix(branchRef, "refs/heads/"),
		Baseline: h.refs[refBaseline], Head: h.refs[branchRef], Snapshot: h.refs[refSnapshot]}
	// The configuration git init writes, without templates (no hooks).
	initc := gitCall{dir: filepath.Dir(dir), ceiling: filepath.Dir(dir),
		args: []string{"init", "--quiet", "--template=", "--separate-git-dir=" + g, "--initial-branch=" + ws.Branch, dir}}
	if _, err := initc.exec(ctx); err != nil {
		return ws, err
	}
	if err := os.WriteFile(filepath.Join(g, "shallow"), []byte(ws.Baseline+"\n"), 0o644); err != nil {
		return ws, err
	}
	l := &layout{gitDir: g, commonDir: g, workTree: dir}
	idx := l.call("index-pack", "--stdin")
	idx.stdin = br
	if _, err := idx.exec(ctx); err != nil {
		return ws, fmt.Errorf("store the shipped objects: %w", err)
	}
	// The index is what was staged: the snapshot's index commit, when it
	// has one (snapshotCommit), else HEAD.
	index := ws.Head
	if staged, err := l.read(ctx, "rev-parse", "--verify", "-q", ws.Snapshot+"^2"); err == nil {
		index = strings.TrimSpace(staged)
	}
	steps := [][]string{
		{"update-ref", refBaseline, ws.Baseline},
		{"update-ref", branchRef, ws.Head},
		{"read-tree", "--reset", "-u", ws.Snapshot},
		{"read-tree", "-m", index},
	}
	for _, s := range steps {
		if _, err := l.call(s...).exec(ctx); err != nil {
			return ws, err
		}
	}
	if inc := h.refs[refIncludes]; inc != "" {
		if ws.Includes, err = writeIncludes(ctx, l, inc); err != nil {
			return ws, err
		}
	}
	return ws, nil
}

// writeIncludes writes the files of the commit inc (the .worktreeinclude
// files Pack shipped) into the worktree l, each where nothing is in the
// way, through an index of its own; it returns the paths written.
func writeIncludes(ctx context.Context, l *layout, inc string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "ink-includes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	c := l.call("read-tree", inc)
	c.env = env
	if _, err := c.exec(ctx); err != nil {
		return nil, fmt.Errorf("write the include files: %w", err)
	}
	out, err := l.read(ctx, "ls-tree", "-r", "-z", "--name-only", "--full-tree", inc)
	if err != nil {
		return nil, fmt.Errorf("write the include files: %w", err)
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(l.workTree, filepath.FromSlash(p))); err == nil {
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return nil, nil
	}
	c = l.call("checkout-index", "-z", "--stdin")
	c.env, c.stdin = env, strings.NewReader(strings.Join(paths, "\x00")+"\x00")
	if _, err := c.exec(ctx); err != nil {
		return nil, fmt.Errorf("write the include files: %w", err)
	}
	return paths, nil
}
