package worktree

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Refusal is why ApplySnapshot refused a worker's snapshot.
type Refusal int

// The refusals of ApplySnapshot.
const (
	// RefusedMalformed: not a snapshot bundle, or objects git refuses
	// (broken, incomplete, or names git never checks out).
	RefusedMalformed Refusal = iota + 1
	// RefusedTooLarge: the bundle, the files it would write, or their
	// number exceed ApplyOptions' bounds.
	RefusedTooLarge
	// RefusedUnknownBase: the bundle needs a commit the worktree does not
	// have (a snapshot the supervisor never applied).
	RefusedUnknownBase
	// RefusedNotDescendant: the worker's HEAD does not descend from the
	// worktree's baseline, or the snapshot commit is not one Snapshot
	// makes (exactly one parent).
	RefusedNotDescendant
	// RefusedPath: a path outside the worktree ("..", absolute), inside
	// .git, or a mode that is no file.
	RefusedPath
	// RefusedSymlink: a symlink that leads outside the worktree.
	RefusedSymlink
)

var refusalNames = map[Refusal]string{
	RefusedMalformed: "malformed", RefusedTooLarge: "too-large", RefusedUnknownBase: "unknown-base",
	RefusedNotDescendant: "not-descendant", RefusedPath: "path", RefusedSymlink: "symlink",
}

// String is the refusal's name.
func (r Refusal) String() string {
	if n, ok := refusalNames[r]; ok {
		return n
	}
	return fmt.Sprintf("refusal(%d)", int(r))
}

// RefusedError is a snapshot ApplySnapshot refused. Nothing of it was
// applied: the worktree, its branch and its git directory are as they
// were.
type RefusedError struct {
	// Worktree is the worktree's path.
	Worktree string
	Refusal  Refusal
	// Path is the file the refusal is about, when there is one.
	Path string
	// Detail says what was wrong.
	Detail string
}

var _ error = (*RefusedError)(nil)

// Error says what was refused and why, and what to do.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("ink refused the remote worker's snapshot of %s (%s): %s; nothing of it was applied — the worker sent what no worker of ink sends, so end its attempt and resume the child from the worktree as it is", e.Worktree, e.Refusal, e.Detail)
}

// Bounds of a snapshot, by default.
const (
	// DefaultMaxSnapshotBytes bounds the bundle.
	DefaultMaxSnapshotBytes = 1 << 30
	// DefaultMaxWriteBytes bounds the bytes of the files a snapshot
	// writes into the worktree (those it adds or changes).
	DefaultMaxWriteBytes = 4 << 30
	// DefaultMaxFiles bounds the files a snapshot adds or changes.
	DefaultMaxFiles = 1_000_000
)

// ApplyOptions bounds what ApplySnapshot accepts; zero fields take the
// defaults.
type ApplyOptions struct {
	MaxBytes      int64
	MaxWriteBytes int64
	MaxFiles      int
}

// Applied describes a snapshot ApplySnapshot applied.
type Applied struct {
	// Snapshot is the snapshot commit; Branch the tip ink/<childId> now
	// has (its parent, the worker's HEAD).
	Snapshot, Branch string
	// Changed is false when the worktree held the snapshot already (a
	// repeated apply), and nothing was done.
	Changed bool
	// Bytes is how much of the bundle was read.
	Bytes int64
}

// ApplySnapshot runs on the supervisor: it applies a snapshot a remote
// worker sent (a bundle Snapshot wrote, read from r) to the worktree of
// rec, under the repository lock, so that the worktree, its index and its
// branch are what the worker had: the working tree the snapshot's tree
// (files the worker deleted go, modes and symlinks as they were, untracked
// files included), the branch ink/<childId> in the worktree's own git
// directory the worker's HEAD, and the index that branch, so the rest
// shows as uncommitted. Sync then brings the branch's commits into the
// user's repository as after a local attempt, and `ink worktrees
// diff/merge/rm`, the assessment and a resume run on local disk
// unchanged.
//
// The worker is not trusted. The objects are received into a quarantine
// directory and checked (git's strict checks, completeness) and the
// snapshot is refused, as a *RefusedError, when it is not a bundle of one
// snapshot commit, needs a commit the worktree lacks, does not descend
// from the baseline, holds a path outside the worktree or in .git, a
// symlink leading outside, or exceeds opts' bounds; then nothing is
// written. A snapshot the worktree already holds is not applied again
// (Applied.Changed false), so a repeated apply is harmless. Safe for
// concurrent use (the repository lock orders applies).
func ApplySnapshot(ctx context.Context, rec Record, r io.Reader, opts ApplyOptions) (Applied, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxSnapshotBytes
	}
	if opts.MaxWriteBytes <= 0 {
		opts.MaxWriteBytes = DefaultMaxWriteBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return Applied{}, fmt.Errorf("apply a snapshot to %s: %w", rec.Path, err)
	}
	defer lk.unlock()
	l, err := openShipped(ctx, rec)
	if err != nil {
		return Applied{}, fmt.Errorf("apply a snapshot to %s: %w", rec.Path, err)
	}
	a := applier{ctx: ctx, rec: rec, lk: lk, l: l, opts: opts, in: &limitedReader{r: r, left: opts.MaxBytes}}
	res, err := a.apply()
	res.Bytes = opts.MaxBytes - a.in.left
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			re.Worktree = rec.Path
			return res, re
		}
		return res, fmt.Errorf("apply a snapshot to %s: %w", rec.Path, err)
	}
	return res, nil
}

// applier is one ApplySnapshot.
type applier struct {
	ctx  context.Context
	rec  Record
	lk   *repoLock
	l    *layout
	opts ApplyOptions
	in   *limitedReader
	// quarantine is the environment of calls that see the received
	// objects before they are accepted.
	quarantine []string
}

func refuse(r Refusal, path, format string, args ...any) error {
	return &RefusedError{Refusal: r, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// call is a git call in the worktree that sees the quarantined objects.
func (a *applier) call(args ...string) gitCall {
	c := a.l.call(args...)
	c.env = a.quarantine
	return c
}

func (a *applier) commit(rev string) (string, bool) {
	c := a.call("rev-parse", "--verify", "-q", rev+"^{commit}")
	c.read = true
	out, err := c.exec(a.ctx)
	return strings.TrimSpace(out), err == nil
}

func (a *applier) apply() (Applied, error) {
	ctx, l, rec := a.ctx, a.l, a.rec
	applied, ok := a.commit(refApplied)
	if !ok {
		// Nothing was shipped or applied yet: the worktree holds its
		// branch.
		if applied, ok = a.commit("refs/heads/" + rec.Branch); !ok {
			return Applied{}, fmt.Errorf("the branch %s is gone from the worktree's git directory", rec.Branch)
		}
	}
	br := bufio.NewReaderSize(a.in, maxBundleHeader)
	h, err := readBundleHeader(br, func(ref string) bool { return ref == refSnapshot })
	if err != nil {
		if a.in.over {
			return Applied{}, refuse(RefusedTooLarge, "", "the bundle is larger than %d bytes", a.opts.MaxBytes)
		}
		return Applied{}, refuse(RefusedMalformed, "", "%v", err)
	}
	snap := h.refs[refSnapshot]
	if snap == "" {
		return Applied{}, refuse(RefusedMalformed, "", "the bundle carries no %s", refSnapshot)
	}
	for _, p := range h.prereqs {
		if got, ok := a.commit(p); !ok || got != p {
			return Applied{}, refuse(RefusedUnknownBase, "", "it needs the commit %s, which the worktree does not have (send a snapshot since one the supervisor acknowledged)", ShortSHA(p))
		}
	}
	if snap == applied {
		tip, _ := a.commit("refs/heads/" + rec.Branch)
		return Applied{Snapshot: snap, Branch: tip}, nil
	}

	q, err := os.MkdirTemp(l.commonDir, "incoming-")
	if err != nil {
		return Applied{}, err
	}
	defer os.RemoveAll(q)
	if err := os.Mkdir(filepath.Join(q, "pack"), 0o755); err != nil {
		return Applied{}, err
	}
	a.quarantine = []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(l.commonDir, "objects")}
	idx := a.call("index-pack", "--stdin", "--fix-thin", "--strict")
	idx.stdin = br
	if _, err := idx.exec(ctx); err != nil {
		if a.in.over {
			return Applied{}, refuse(RefusedTooLarge, "", "the bundle is larger than %d bytes", a.opts.MaxBytes)
		}
		msg := strings.TrimSpace(gitStderr(err))
		if strings.Contains(msg, "hasDot") || strings.Contains(msg, "fullPathname") || strings.Contains(msg, "emptyName") {
			return Applied{}, refuse(RefusedPath, "", "git refuses its objects: %s", msg)
		}
		return Applied{}, refuse(RefusedMalformed, "", "git refuses its objects: %s", msg)
	}
	tip, staged, err := a.check(snap, applied)
	if err != nil {
		return Applied{}, err
	}
	if err := a.accept(q); err != nil {
		return Applied{}, fmt.Errorf("store the snapshot's objects: %w", err)
	}
	a.quarantine = nil
	if err := a.checkout(applied, snap, tip, staged); err != nil {
		return Applied{}, err
	}
	return Applied{Snapshot: snap, Branch: tip, Changed: true}, nil
}

// gitStderr is what git printed, or the error.
func gitStderr(err error) string {
	var ge *GitError
	if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) != "" {
		return ge.Stderr
	}
	return err.Error()
}

// parents lists the parents of commit rev.
func (a *applier) parents(rev string) ([]string, error) {
	c := a.call("rev-parse", rev+"^@")
	c.read = true
	out, err := c.exec(a.ctx)
	if err != nil {
		return nil, err
	}
	return lines(out), nil
}

// check verifies the quarantined snapshot snap: a commit whose first
// parent (the worker's HEAD, returned as tip) descends from the baseline
// and whose second, if it has one, is an index commit on that HEAD
// (returned as staged); complete; and whose tree, HEAD's tree and the
// index's hold only what may reach disk.
func (a *applier) check(snap, applied string) (tip, staged string, err error) {
	ctx, rec := a.ctx, a.rec
	if got, ok := a.commit(snap); !ok || got != snap {
		return "", "", refuse(RefusedMalformed, "", "its ref names %s, which is not a commit it carries", ShortSHA(snap))
	}
	parents, err := a.parents(snap)
	if err != nil {
		return "", "", err
	}
	if len(parents) != 1 && len(parents) != 2 {
		return "", "", refuse(RefusedNotDescendant, "", "the snapshot commit has %d parents; a snapshot has the worker's HEAD and, when something was staged, its index commit", len(parents))
	}
	tip = parents[0]
	if len(parents) == 2 {
		staged = parents[1]
		if up, err := a.parents(staged); err != nil || len(up) != 1 || up[0] != tip {
			return "", "", refuse(RefusedNotDescendant, "", "the snapshot's second parent %s is not an index commit on the worker's HEAD %s", ShortSHA(staged), ShortSHA(tip))
		}
	}
	c := a.call("rev-list", "--objects", "--quiet", snap, "--not", "--all")
	c.read = true
	if _, err := c.exec(ctx); err != nil {
		return "", "", refuse(RefusedMalformed, "", "it is not complete: %s", strings.TrimSpace(gitStderr(err)))
	}
	c = a.call("merge-base", "--is-ancestor", rec.Baseline, tip)
	c.read = true
	if _, err := c.exec(ctx); err != nil {
		if exitCode(err) == 1 {
			return "", "", refuse(RefusedNotDescendant, "", "the worker's HEAD %s does not descend from the worktree's baseline %s", ShortSHA(tip), ShortSHA(rec.Baseline))
		}
		return "", "", err
	}
	oldTip, ok := a.commit("refs/heads/" + rec.Branch)
	if !ok {
		return "", "", fmt.Errorf("the branch %s is gone from the worktree's git directory", rec.Branch)
	}
	// What the worktree holds (applied) and what its branch holds (oldTip)
	// passed these checks before, or came from the supervisor itself:
	// only what the snapshot and the worker's HEAD change is checked.
	for _, d := range [][2]string{{applied, snap}, {oldTip, tip}} {
		changed, err := diffTree(ctx, a.call(), d[0], d[1])
		if err != nil {
			return "", "", err
		}
		if len(changed) > a.opts.MaxFiles {
			return "", "", refuse(RefusedTooLarge, "", "it adds or changes %d files, more than %d", len(changed), a.opts.MaxFiles)
		}
		if err := checkEntries(changed); err != nil {
			return "", "", err
		}
		if d[1] == snap {
			sizes, err := objectSizes(ctx, a.call(), changed)
			if err != nil {
				return "", "", err
			}
			var write int64
			for _, e := range changed {
				write += sizes[e.sha]
			}
			if write > a.opts.MaxWriteBytes {
				return "", "", refuse(RefusedTooLarge, "", "it would write %d bytes of files, more than %d", write, a.opts.MaxWriteBytes)
			}
		}
		if err := a.checkLinks(changed, d[1]); err != nil {
			return "", "", err
		}
	}
	if staged != "" {
		// The index is never written to disk as files, but a later
		// checkout of it would be: its paths are checked as the tree's.
		changed, err := diffTree(ctx, a.call(), tip, staged)
		if err != nil {
			return "", "", err
		}
		if len(changed) > a.opts.MaxFiles {
			return "", "", refuse(RefusedTooLarge, "", "its index adds or changes %d files, more than %d", len(changed), a.opts.MaxFiles)
		}
		if err := checkEntries(changed); err != nil {
			return "", "", err
		}
	}
	return tip, staged, nil
}

// accept moves the quarantined packs into the worktree's git directory,
// each pack before its index (git finds a pack through its index), synced.
func (a *applier) accept(q string) error {
	src := filepath.Join(q, "pack")
	dst := filepath.Join(a.l.commonDir, "objects", "pack")
	if err := realDir(dst); err != nil {
		return untrusted(a.rec.Path, "%v", err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	rank := func(n string) int {
		switch filepath.Ext(n) {
		case ".idx":
			return 2
		case ".pack":
			return 0
		}
		return 1
	}
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	for _, n := range names {
		f, err := os.Open(filepath.Join(src, n))
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(src, n), filepath.Join(dst, n)); err != nil {
			return err
		}
	}
	return syncDir(dst)
}

// checkout makes the worktree hold snap: the index is set to what the
// worktree holds (applied), so that `read-tree --reset -u` removes the
// files the worker deleted; then the branch moves to tip, the index to
// what the worker had staged (staged, else the branch), and
// refs/ink/applied to snap, last, so that an apply cut short is done
// again in full. A failure puts the index back at the branch.
func (a *applier) checkout(applied, snap, tip, staged string) (err error) {
	ctx, l, rec := a.ctx, a.l, a.rec
	old, ok := a.commit("refs/heads/" + rec.Branch)
	if !ok {
		return fmt.Errorf("the branch %s is gone from the worktree's git directory", rec.Branch)
	}
	if err := l.checkRefDirs(rec.Branch); err != nil {
		return err
	}
	if err := l.checkInkRefs(); err != nil {
		return err
	}
	run := func(args ...string) error {
		_, err := a.lk.call(l.call(args...)).exec(ctx)
		return err
	}
	defer func() {
		if err != nil {
			now := old
			if t, ok := a.commit("refs/heads/" + rec.Branch); ok {
				now = t
			}
			_ = run("read-tree", now)
		}
	}()
	// `read-tree -m` keeps the index's stat data of the files that match,
	// so that only the files the worker changed are written and hashed.
	steps := [][]string{
		{"read-tree", "-m", applied},
		{"read-tree", "--reset", "-u", snap},
		{"update-ref", "-m", "ink: the remote worker's work, from its snapshot " + ShortSHA(snap), "refs/heads/" + rec.Branch, tip, old},
		{"read-tree", "-m", cmp.Or(staged, tip)},
		{"update-ref", "-m", "ink: the worktree holds this snapshot", refApplied, snap},
	}
	for _, s := range steps {
		err := run(s...)
		if err != nil && s[0] == "read-tree" && s[1] == "-m" {
			// An index git cannot merge into (unmerged entries) is read
			// afresh.
			err = run("read-tree", s[2])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLinks checks the symlinks that changed adds or changes in the tree
// to: none may lead outside the worktree, following to's other symlinks,
// unless the baseline has it as it is (the user's own).
func (a *applier) checkLinks(changed map[string]treeEntry, to string) error {
	var links []string
	for p, e := range changed {
		if e.mode == "120000" {
			links = append(links, p)
		}
	}
	if len(links) == 0 {
		return nil
	}
	all, err := lsTree(a.ctx, a.call(), to)
	if err != nil {
		return err
	}
	base, err := lsTree(a.ctx, a.call(), a.rec.Baseline)
	if err != nil {
		return err
	}
	return checkLinks(links, all, base, blobReader(a.ctx, a.call()))
}
