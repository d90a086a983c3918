package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// snapshotIdentity is who makes a snapshot commit, and when: fixed, so
// that the same work on the same commit is always the same snapshot (an
// unchanged worktree sends a snapshot the supervisor already has).
var snapshotIdentity = []string{
	"GIT_AUTHOR_NAME=ink", "GIT_AUTHOR_EMAIL=ink@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=ink", "GIT_COMMITTER_EMAIL=ink@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// snapshotMessage is the message of every snapshot commit.
const snapshotMessage = "ink: the worktree as it was (committed work, uncommitted and untracked files)"

// indexMessage is the message of every index commit (snapshotCommit).
const indexMessage = "ink: the worktree's index (what was staged)"

// snapshotCommit makes a snapshot commit of the worktree l: its tree is
// the working tree as `git add -A` sees it (uncommitted changes, untracked
// files, deletions, the exec bit and symlinks; ignored files left out),
// its first parent is HEAD. When the worktree's index holds something
// other than HEAD's tree (a staged change), a second parent carries it:
// an index commit, whose tree is the index and whose one parent is HEAD,
// as `git stash` records one. It uses indexes of its own, so the
// worktree's index and files are left as they are; the objects go into
// the worktree's git directory. lk, when set, is the repository lock the
// calls run under. It returns the snapshot and HEAD.
func snapshotCommit(ctx context.Context, l *layout, lk *repoLock) (snap, head string, err error) {
	out, err := l.read(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		if exitCode(err) == 1 {
			return "", "", fmt.Errorf("snapshot %s: HEAD names no commit; check out a branch or a commit there", l.workTree)
		}
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	head = strings.TrimSpace(out)
	tmp, err := os.MkdirTemp("", "ink-snapshot-")
	if err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	defer os.RemoveAll(tmp)
	run := func(env []string, args ...string) (string, error) {
		c := l.call(args...)
		c.env = append([]string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}, env...)
		if lk != nil {
			c = lk.call(c)
		}
		out, err := c.exec(ctx)
		return strings.TrimSpace(out), err
	}
	if _, err := run(nil, "read-tree", head); err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	if _, err := run(nil, "add", "-A", "--", "."); err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	parents := []string{"-p", head}
	staged, err := indexCommit(ctx, l, lk, tmp, head)
	if err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	if staged != "" {
		parents = append(parents, "-p", staged)
	}
	snap, err = run(snapshotIdentity, append(append([]string{"commit-tree", tree}, parents...), "-m", snapshotMessage)...)
	if err != nil {
		return "", "", fmt.Errorf("snapshot %s: %w", l.workTree, err)
	}
	return snap, head, nil
}

// indexCommit makes the index commit of the worktree l (snapshotCommit)
// from a copy of its index in tmp, so the index itself is never written.
// It returns "" when the index holds HEAD's tree (nothing staged), when
// there is no index, and when git cannot write the index as a tree
// (unmerged entries, a split index): then what was staged does not travel
// and the other side's index is HEAD's, as it was before index commits.
func indexCommit(ctx context.Context, l *layout, lk *repoLock, tmp, head string) (string, error) {
	data, err := os.ReadFile(l.indexFile())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	staged := filepath.Join(tmp, "staged")
	if err := os.WriteFile(staged, data, 0o600); err != nil {
		return "", err
	}
	run := func(env []string, args ...string) (string, error) {
		c := l.call(args...)
		c.env = append([]string{"GIT_INDEX_FILE=" + staged}, env...)
		if lk != nil {
			c = lk.call(c)
		}
		out, err := c.exec(ctx)
		return strings.TrimSpace(out), err
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return "", nil
	}
	headTree, err := l.read(ctx, "rev-parse", "--verify", "-q", head+"^{tree}")
	if err != nil {
		return "", err
	}
	if tree == strings.TrimSpace(headTree) {
		return "", nil
	}
	return run(snapshotIdentity, "commit-tree", tree, "-p", head, "-m", indexMessage)
}

// SnapshotInfo describes a snapshot Snapshot sent.
type SnapshotInfo struct {
	// Commit is the snapshot commit: its tree is the working tree, its
	// one parent Head.
	Commit string
	// Head is the commit the worker's HEAD named: what becomes the
	// branch ink/<childId> on the supervisor's side.
	Head string
	// Bytes is the size of the bundle written.
	Bytes int64
}

// Snapshot runs on a remote worker, in a workspace Materialise made at the
// absolute path dir. It makes a snapshot commit of the worktree —
// committed work (HEAD), uncommitted changes, untracked files (ignored
// ones left out, as .gitignore, info/exclude and core.excludesFile say),
// deletions and modes (the exec bit, symlinks) — and writes to w a git
// bundle of it carrying the one ref refs/ink/snapshot, for the supervisor's
// ApplySnapshot. The bundle holds only what the supervisor lacks: its
// prerequisites are the baseline and since, the last snapshot the
// supervisor acknowledged (Workspace.Snapshot after Materialise, "" for
// the baseline alone). The worktree's index and files are left as they
// are; what was staged travels as the snapshot's index commit, and
// ApplySnapshot and Materialise set the other side's index to it. The same
// work on the same HEAD and index is always the same snapshot commit.
//
// Every git call is ink's hardened git (harden.go), pointed at the
// workspace's git directory <dir>.git: the configuration, hooks and
// fsmonitor of a repository the model may have rewritten run nothing.
// Safe for concurrent use with a model's own git commands in dir as far as
// git is (the snapshot uses an index of its own); not with another
// Snapshot of the same dir.
func Snapshot(ctx context.Context, dir, since string, w io.Writer) (SnapshotInfo, error) {
	l, err := workerLayout(dir)
	if err != nil {
		return SnapshotInfo{}, err
	}
	base, err := l.read(ctx, "rev-parse", "--verify", "-q", refBaseline+"^{commit}")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: the workspace has no %s (was it made by Materialise?): %w", dir, refBaseline, err)
	}
	base = strings.TrimSpace(base)
	prereqs := []string{base}
	if since != "" && since != base {
		got, err := l.read(ctx, "rev-parse", "--verify", "-q", since+"^{commit}")
		if err != nil || strings.TrimSpace(got) != since {
			return SnapshotInfo{}, fmt.Errorf("snapshot %s: the previous snapshot %s is not a commit of this workspace", dir, ShortSHA(since))
		}
		prereqs = append(prereqs, since)
	}
	snap, head, err := snapshotCommit(ctx, l, nil)
	if err != nil {
		return SnapshotInfo{}, err
	}
	info := SnapshotInfo{Commit: snap, Head: head}
	cw := &countingWriter{w: w}
	if err := writeBundleHeader(cw, prereqs, []string{refSnapshot}, map[string]string{refSnapshot: snap}); err != nil {
		return info, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	feed := func(pw io.Writer) error {
		var b strings.Builder
		b.WriteString(snap + "\n")
		for _, p := range prereqs {
			b.WriteString("^" + p + "\n")
		}
		_, err := io.WriteString(pw, b.String())
		return err
	}
	if _, err := packObjects(ctx, l.call(), []string{"--revs", "--thin"}, feed, cw); err != nil {
		info.Bytes = cw.n
		return info, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	info.Bytes = cw.n
	return info, nil
}

// workerLayout is how git runs in a workspace Materialise made at dir:
// against its git directory <dir>.git, with the work tree dir, whatever
// the .git link in dir says. The model may have written that git
// directory's configuration, so the repository's own drivers are pinned
// (sealed is false).
func workerLayout(dir string) (*layout, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("workspace %q: the path must be absolute", dir)
	}
	dir = filepath.Clean(dir)
	g := gitDirOf(dir)
	for _, d := range []string{dir, g} {
		if err := realDir(d); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("workspace %s: %s does not exist; make the workspace with Materialise first", dir, d)
			}
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
	}
	return &layout{gitDir: g, commonDir: g, workTree: dir}, nil
}
