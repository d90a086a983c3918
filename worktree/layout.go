package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A worktree ink makes is registered in the user's repository as git's own
// `git worktree add` registers it (metadata under
// <git-common-dir>/worktrees/, a lock with ink's reason, the branch
// ink/<childId>), but its .git link names a git directory of its own,
// <path>.git beside it, that ink writes:
//
//	<id>.git/config, HEAD, hooks/, info/   written by ink; read-only to the child
//	<id>.git/objects/                       the child's own objects; info/alternates
//	                                        names the user's object store, which
//	                                        the child reads but never writes
//	<id>.git/refs/, logs/                   the child's branch ink/<id> (and any
//	                                        ref it makes: tags, stash)
//	<id>.git/worktrees/<id>/                the worktree's HEAD, index and reflog
//	<id>.git/packed/packed-refs             the child's packed refs (<id>.git/packed-refs
//	                                        is a symlink there, so that git can delete refs)
//
// The child's sandbox may write objects/, refs/, logs/, packed/ and
// worktrees/<id>/ of it, and nothing of the user's repository, so git
// commit, add, status, log, diff and stash work in the worktree while the
// user's store stays untouched. ink brings the child's commits into the
// user's repository itself (sync.go), so refs/heads/ink/<id> there holds
// them after every attempt. ink's own git runs in the worktree with
// GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE set to what it verified
// (openLayout), never through the .git link the child can rewrite, and so
// reads only the config ink wrote.

// UntrustedError says why ink runs no git in a worktree: its .git link or
// its git directory is not what ink made.
type UntrustedError struct {
	Path string
	Why  string
}

var _ error = (*UntrustedError)(nil)

// Error says which worktree and why.
func (e *UntrustedError) Error() string {
	return fmt.Sprintf("ink runs no git in the worktree %s: %s", e.Path, e.Why)
}

func untrusted(path, format string, args ...any) error {
	return &UntrustedError{Path: path, Why: fmt.Sprintf(format, args...)}
}

// GitDir is the worktree's own git directory, <path>.git beside it.
func (r Record) GitDir() string { return gitDirOf(r.Path) }

// PrivateGitDir is the worktree's directory inside GitDir (its HEAD,
// index and reflog), the one its .git link names. A worktree child's
// sandbox may write it and GitDir's objects, refs and logs.
func (r Record) PrivateGitDir() string {
	return filepath.Join(r.GitDir(), "worktrees", r.ChildID())
}

// gitDirOf is the git directory ink makes for the worktree at path.
func gitDirOf(path string) string { return filepath.Clean(path) + ".git" }

// layout is where git finds one of ink's worktrees, as ink verified it.
type layout struct {
	// gitDir is the worktree's private git directory, commonDir the git
	// directory it belongs to, workTree the worktree.
	gitDir, commonDir, workTree string
	// sealed is true when commonDir is the worktree's own git directory,
	// whose config ink wrote; false for a worktree made by an earlier ink,
	// whose git directory is the repository's.
	sealed bool
}

// env points git at the layout, whatever the worktree's .git link says.
func (l *layout) env() []string {
	env := []string{"GIT_DIR=" + l.gitDir, "GIT_COMMON_DIR=" + l.commonDir}
	if l.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+l.workTree)
	}
	return env
}

// call is a git call in the worktree (in its git directory when the
// worktree's directory is gone).
func (l *layout) call(args ...string) gitCall {
	dir := l.workTree
	if dir == "" {
		dir = l.commonDir
	}
	return gitCall{dir: dir, in: l, args: args}
}

// read runs a read-only git command in the worktree.
func (l *layout) read(ctx context.Context, args ...string) (string, error) {
	c := l.call(args...)
	c.read = true
	return c.exec(ctx)
}

// indexFile is the worktree's index.
func (l *layout) indexFile() string { return filepath.Join(l.gitDir, "index") }

// maxPointer bounds the small files openLayout reads.
const maxPointer = 4096

// readSmall reads a regular file of at most limit bytes; a symlink, a
// FIFO or a device is refused, so a planted file can never make ink wait.
func readSmall(p string, limit int64) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > limit {
		return "", fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	b, err := os.ReadFile(p)
	return string(b), err
}

// realDir checks that p is a directory and not a symlink.
func realDir(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", p)
	}
	return nil
}

// openLayout verifies, without running git in it, that the worktree of rec
// is the one ink made, and returns how to run git there: its .git link
// names its own git directory <path>.git, whose per-worktree files
// (commondir, gitdir) and alternates are the ones ink wrote. A worktree
// made by an earlier ink, which has no git directory of its own, is
// accepted when its link and its metadata in the repository are the ones
// `git worktree add` wrote. When the worktree's directory is gone but its
// git directory is not, the layout has no work tree: enough to bring the
// branch's commits back. Anything else is an *UntrustedError.
func openLayout(ctx context.Context, rec Record) (*layout, error) {
	g := rec.GitDir()
	fi, err := os.Lstat(g)
	switch {
	case err == nil && !fi.IsDir():
		return nil, untrusted(rec.Path, "its git directory %s is not a directory", g)
	case err == nil:
		if _, werr := os.Lstat(rec.Path); errors.Is(werr, fs.ErrNotExist) {
			return openSealed(ctx, rec, false)
		}
		return openSealed(ctx, rec, true)
	case errors.Is(err, fs.ErrNotExist):
		return openLegacy(ctx, rec)
	default:
		return nil, fmt.Errorf("worktree %s: %w", rec.Path, err)
	}
}

// openSealed verifies a worktree with its own git directory (and its .git
// link when withTree).
func openSealed(ctx context.Context, rec Record, withTree bool) (*layout, error) {
	path := filepath.Clean(rec.Path)
	g, private := rec.GitDir(), rec.PrivateGitDir()
	if withTree {
		link, err := readSmall(filepath.Join(path, ".git"), maxPointer)
		if err != nil {
			return nil, untrusted(path, "its .git link is missing or broken (%v)", err)
		}
		if link != linkContent(private) {
			return nil, untrusted(path, "its .git link was changed: it says %q, ink made it name %s", strings.TrimSpace(link), private)
		}
	}
	for _, d := range []string{filepath.Join(g, "worktrees"), private} {
		if err := realDir(d); err != nil {
			return nil, untrusted(path, "its git directory %s is not the one ink made (%v)", g, err)
		}
	}
	want := map[string]string{
		"commondir": "../..\n",
		"gitdir":    filepath.Join(path, ".git") + "\n",
	}
	for name, content := range want {
		got, err := readSmall(filepath.Join(private, name), maxPointer)
		if err != nil || got != content {
			return nil, untrusted(path, "%s was changed (ink wrote %q there)", filepath.Join(private, name), strings.TrimSpace(content))
		}
	}
	objects, err := repoObjects(ctx, rec.RepoRoot)
	if err != nil {
		return nil, err
	}
	alt := filepath.Join(g, "objects", "info", "alternates")
	if got, err := readSmall(alt, maxPointer); err != nil || got != objects+"\n" {
		return nil, untrusted(path, "%s was changed (ink made it name %s)", alt, objects)
	}
	l := &layout{gitDir: private, commonDir: g, sealed: true}
	if withTree {
		l.workTree = path
	}
	return l, nil
}

// openLegacy verifies a worktree made by an earlier ink, whose .git link
// names its metadata in the repository's git directory.
func openLegacy(ctx context.Context, rec Record) (*layout, error) {
	path := filepath.Clean(rec.Path)
	if rec.RepoRoot == "" {
		return nil, untrusted(path, "its repository is unknown")
	}
	common, err := gitCommonDir(ctx, rec.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("worktree %s: %w", path, err)
	}
	link, err := readSmall(filepath.Join(path, ".git"), maxPointer)
	if err != nil {
		return nil, untrusted(path, "its .git link is missing or broken (%v)", err)
	}
	dir, ok := strings.CutPrefix(link, "gitdir: ")
	dir = strings.TrimSuffix(dir, "\n")
	if !ok || !filepath.IsAbs(dir) || strings.ContainsAny(dir, "\n\x00") {
		return nil, untrusted(path, "its .git link says %q, which is not what ink made", strings.TrimSpace(link))
	}
	if !samePath(filepath.Dir(dir), filepath.Join(common, "worktrees")) {
		return nil, untrusted(path, "its .git link names %s, which is neither its own git directory %s nor its metadata in %s", dir, rec.GitDir(), filepath.Join(common, "worktrees"))
	}
	if err := realDir(dir); err != nil {
		return nil, untrusted(path, "its metadata %s is not a directory (%v)", dir, err)
	}
	back, err := readSmall(filepath.Join(dir, "gitdir"), maxPointer)
	if err != nil || !samePath(strings.TrimSpace(back), filepath.Join(path, ".git")) {
		return nil, untrusted(path, "its metadata %s does not name it back", dir)
	}
	return &layout{gitDir: dir, commonDir: common, workTree: path}, nil
}

// linkContent is the .git file ink writes into a worktree.
func linkContent(private string) string { return "gitdir: " + private + "\n" }

// repoObjects is the object store of the repository at root.
func repoObjects(ctx context.Context, root string) (string, error) {
	common, err := gitCommonDir(ctx, root)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", root, err)
	}
	return filepath.Join(common, "objects"), nil
}

// checkRefDirs checks, before ink writes branch in the worktree's git
// directory, that no directory on the way to its ref and its reflog was
// replaced by a symlink or a file (the child may write refs/ and logs/),
// so that the write lands in the worktree's git directory and nowhere
// else.
func (l *layout) checkRefDirs(branch string) error {
	var parents []string
	if dir := filepath.Dir(filepath.FromSlash(branch)); dir != "." {
		parents = strings.Split(dir, string(filepath.Separator))
	}
	logs := filepath.Join(l.commonDir, "logs", "refs")
	check := []string{logs}
	for _, base := range []string{filepath.Join(l.commonDir, "refs", "heads"), filepath.Join(logs, "heads")} {
		d := base
		check = append(check, d)
		for _, p := range parents {
			d = filepath.Join(d, p)
			check = append(check, d)
		}
	}
	for _, d := range check {
		if err := realDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return untrusted(l.workTree, "%v", err)
		}
	}
	for _, p := range []string{filepath.Join(l.commonDir, "refs", "heads", filepath.FromSlash(branch)), filepath.Join(l.commonDir, "packed", "packed-refs")} {
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			return untrusted(l.workTree, "%s is not a regular file", p)
		}
	}
	if err := realDir(filepath.Join(l.commonDir, "packed")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return untrusted(l.workTree, "%v", err)
	}
	return nil
}

// checkInkRefs checks, before ink writes one of its refs/ink/ refs in the
// worktree's git directory, that no directory on the way to it or its
// reflog is a symlink or a file.
func (l *layout) checkInkRefs() error {
	for _, d := range []string{"refs", filepath.Join("refs", "ink"), "logs", filepath.Join("logs", "refs"), filepath.Join("logs", "refs", "ink")} {
		if err := realDir(filepath.Join(l.commonDir, d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return untrusted(l.workTree, "%v", err)
		}
	}
	return nil
}
