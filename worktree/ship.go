package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PackOptions tunes Pack.
type PackOptions struct {
	// ShipIncludes ships the .worktreeinclude files the worktree holds
	// (gitignored files such as .env that Create copied in). They are
	// often secrets, so they are left out unless asked; Shipped.LeftOut
	// names what was left out.
	ShipIncludes bool
}

// Shipped describes a workspace Pack wrote.
type Shipped struct {
	// Baseline is the commit the worktree was created at: the worker's
	// repository is shallow there.
	Baseline string
	// Head is the tip of the branch ink/<childId>: the worker's HEAD.
	Head string
	// Snapshot is the worktree as it is (Head plus uncommitted and
	// untracked files): the worker's working tree. Pass it to the
	// worker's first Snapshot as since.
	Snapshot string
	// Includes are the .worktreeinclude files shipped (slash paths
	// relative to the worktree); LeftOut those the worktree holds that
	// were not (PackOptions.ShipIncludes unset).
	Includes, LeftOut []string
	// Bytes is the size of the bundle written.
	Bytes int64
}

// Pack runs on the supervisor, before a remote worker's attempt, for a
// worktree Create made (its directory and its own git directory in
// place). It writes to w a git bundle of the workspace the worker
// materialises (Materialise): the baseline commit and its whole tree, the
// child's commits since (the branch ink/<childId>), and a snapshot commit
// of the worktree as it is, uncommitted and untracked files included (so
// a resumed child finds what its transcript recorded). Nothing older than
// the baseline is shipped. .worktreeinclude files travel only with
// PackOptions.ShipIncludes.
//
// It runs under the repository lock with ink's hardened git, and records
// the snapshot as what the worktree holds (refs/ink/applied in the
// worktree's git directory), which ApplySnapshot starts from. The
// worktree's files, index and branch are left as they are. No process
// may work in the worktree meanwhile (the worker is remote). Safe for
// concurrent use.
func Pack(ctx context.Context, rec Record, w io.Writer, opts PackOptions) (Shipped, error) {
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return Shipped{}, fmt.Errorf("ship the worktree %s: %w", rec.Path, err)
	}
	defer lk.unlock()
	l, err := openShipped(ctx, rec)
	if err != nil {
		return Shipped{}, fmt.Errorf("ship the worktree %s: %w", rec.Path, err)
	}
	fail := func(err error) (Shipped, error) {
		return Shipped{}, fmt.Errorf("ship the worktree %s: %w", rec.Path, err)
	}
	baseline, err := l.read(ctx, "rev-parse", "--verify", "-q", rec.Baseline+"^{commit}")
	if err != nil || strings.TrimSpace(baseline) != rec.Baseline {
		return fail(fmt.Errorf("its baseline %q is not a commit of %s", rec.Baseline, rec.RepoRoot))
	}
	snap, head, err := snapshotCommit(ctx, l, lk)
	if err != nil {
		return fail(err)
	}
	if _, err := l.read(ctx, "merge-base", "--is-ancestor", rec.Baseline, head); err != nil {
		return fail(fmt.Errorf("its HEAD %s does not descend from its baseline %s; check out %s there", ShortSHA(head), ShortSHA(rec.Baseline), rec.Branch))
	}
	parents, err := l.read(ctx, "rev-parse", rec.Baseline+"^@")
	if err != nil {
		return fail(err)
	}
	sh := Shipped{Baseline: rec.Baseline, Head: head, Snapshot: snap}

	present, err := presentIncludes(ctx, rec)
	if err != nil {
		return fail(err)
	}
	var env []string
	inc := ""
	if opts.ShipIncludes && len(present) > 0 {
		tmp, err := os.MkdirTemp("", "ink-ship-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(tmp)
		// The include files' objects go to a directory of their own, read
		// by pack-objects and deleted after: they never enter a git
		// directory.
		env = []string{"GIT_OBJECT_DIRECTORY=" + tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(l.commonDir, "objects")}
		if inc, err = includesCommit(ctx, l, env, tmp, present); err != nil {
			return fail(err)
		}
		sh.Includes = present
	} else {
		sh.LeftOut = present
	}

	if err := l.checkInkRefs(); err != nil {
		return fail(err)
	}
	c := lk.call(l.call("update-ref", "-m", "ink: the worktree as shipped to a remote worker", refApplied, snap))
	if _, err := c.exec(ctx); err != nil {
		return fail(err)
	}

	cw := &countingWriter{w: w}
	names := []string{refBaseline, "refs/heads/" + rec.Branch, refSnapshot}
	refs := map[string]string{refBaseline: rec.Baseline, "refs/heads/" + rec.Branch: head, refSnapshot: snap}
	if inc != "" {
		names = append(names, refIncludes)
		refs[refIncludes] = inc
	}
	if err := writeBundleHeader(cw, lines(parents), names, refs); err != nil {
		return fail(err)
	}
	feed := func(pw io.Writer) error {
		// The baseline and its whole tree, then everything since.
		lists := [][]string{{"rev-list", "--objects", "--no-walk", rec.Baseline}, {"rev-list", "--objects", snap}}
		if inc != "" {
			lists[1] = append(lists[1], inc)
		}
		lists[1] = append(lists[1], "--not", rec.Baseline)
		for _, args := range lists {
			c := l.call(args...)
			c.env, c.stdout = env, pw
			if _, err := c.exec(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	pc := l.call()
	pc.env = env
	if _, err := packObjects(ctx, pc, nil, feed, cw); err != nil {
		return fail(err)
	}
	sh.Bytes = cw.n
	return sh, nil
}

// openShipped opens the worktree of a remote child: one with its own git
// directory and its directory in place.
func openShipped(ctx context.Context, rec Record) (*layout, error) {
	l, err := openLayout(ctx, rec)
	if err != nil {
		return nil, err
	}
	if !l.sealed {
		return nil, fmt.Errorf("it was made by an earlier ink and has no git directory of its own; a remote child needs a new worktree")
	}
	if l.workTree == "" {
		return nil, fmt.Errorf("its directory is gone")
	}
	return l, nil
}

// presentIncludes lists the .worktreeinclude files of the repository that
// the worktree holds (regular files and symlinks), as slash paths.
func presentIncludes(ctx context.Context, rec Record) ([]string, error) {
	planned, err := planIncludes(ctx, rec.RepoRoot)
	if err != nil {
		return nil, err
	}
	var present []string
	for _, rel := range planned {
		fi, err := os.Lstat(filepath.Join(rec.Path, filepath.FromSlash(rel)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0 {
			present = append(present, filepath.ToSlash(rel))
		}
	}
	return present, nil
}

// includesCommit makes a root commit whose tree holds the include files
// of the worktree l (paths relative to it), their objects written where
// env points (GIT_OBJECT_DIRECTORY), with an index of its own under tmp.
func includesCommit(ctx context.Context, l *layout, env []string, tmp string, paths []string) (string, error) {
	env = append(append([]string(nil), env...), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
	run := func(extra []string, stdin io.Reader, args ...string) (string, error) {
		c := l.call(args...)
		c.env, c.stdin = append(append([]string(nil), env...), extra...), stdin
		out, err := c.exec(ctx)
		return strings.TrimSpace(out), err
	}
	var info strings.Builder
	for _, rel := range paths {
		p := filepath.Join(l.workTree, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("ship %s: %w", rel, err)
		}
		mode := "100644"
		var sha string
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return "", fmt.Errorf("ship %s: %w", rel, err)
			}
			mode = "120000"
			sha, err = run(nil, strings.NewReader(target), "hash-object", "-w", "--no-filters", "--stdin")
			if err != nil {
				return "", fmt.Errorf("ship %s: %w", rel, err)
			}
		} else {
			if fi.Mode()&0o111 != 0 {
				mode = "100755"
			}
			sha, err = run(nil, nil, "hash-object", "-w", "--no-filters", "--", p)
			if err != nil {
				return "", fmt.Errorf("ship %s: %w", rel, err)
			}
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", mode, sha, rel)
	}
	if _, err := run(nil, strings.NewReader(info.String()), "update-index", "--add", "--index-info"); err != nil {
		return "", fmt.Errorf("ship the include files: %w", err)
	}
	tree, err := run(nil, nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("ship the include files: %w", err)
	}
	commit, err := run(snapshotIdentity, nil, "commit-tree", tree, "-m", "ink: the worktree's .worktreeinclude files")
	if err != nil {
		return "", fmt.Errorf("ship the include files: %w", err)
	}
	return commit, nil
}
