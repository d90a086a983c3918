package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// MergeOptions changes what Merge does.
type MergeOptions struct {
	// Commit commits the worktree's uncommitted work (untracked files
	// included, ignored files not) on its branch before merging, with a
	// generated message, the repository's identity (else "ink
	// <ink@localhost>") and no hooks. Without it such work is a refusal.
	Commit bool
	// Child says whether the worktree's child can still be resumed; a
	// merged worktree is then kept for it rather than removed. Nil: no
	// child is resumable.
	Child func(Info) ChildStatus
}

// MergeResult tells what Merge did.
type MergeResult struct {
	ChildID string `json:"childId"`
	// Branch is the worktree's branch; Into the main checkout's branch.
	Branch string `json:"branch"`
	Into   string `json:"into"`
	// Committed is the commit MergeOptions.Commit made of the worktree's
	// uncommitted work ("" when none was needed), and CommittedFiles what
	// it holds ("M\tpath" lines as `git diff --name-status` prints them).
	Committed      string   `json:"committed,omitempty"`
	CommittedFiles []string `json:"committedFiles,omitempty"`
	// Commit is the merge commit ("" when AlreadyMerged).
	Commit string `json:"commit,omitempty"`
	// AlreadyMerged is true when the branch had nothing the current branch
	// lacks; nothing was merged.
	AlreadyMerged bool `json:"alreadyMerged,omitempty"`
	// Shortstat summarises what the merge brought in.
	Shortstat string `json:"shortstat,omitempty"`
	// Removed is true when the worktree and its branch were removed after
	// the merge, everything in them being merged; Kept says why they were
	// kept otherwise.
	Removed bool   `json:"removed"`
	Kept    string `json:"kept,omitempty"`
}

// Merge merges the worktree's branch into the branch checked out in the
// main checkout with `git merge --no-ff -m "ink: merge <branch>"` (hooks
// off), under the repository lock, then removes the worktree and its
// branch when nothing else is in them (unless its child can still be
// resumed). It refuses with *MergeRefusedError, changing nothing, when a
// live process holds the worktree, when ink cannot judge the worktree
// (Unknown), when the main checkout is detached or has uncommitted
// changes, when the worktree has uncommitted work and opts.Commit is not
// set, when `git merge-tree` predicts conflicts, or when a file the merge
// adds would overwrite an untracked or ignored file of the main checkout.
func Merge(ctx context.Context, info Info, opts MergeOptions) (MergeResult, error) {
	rec := info.Record
	id := info.ChildID
	res := MergeResult{ChildID: id, Branch: rec.Branch}
	if rec.RepoRoot == "" || rec.Branch == "" {
		return res, fmt.Errorf("merge %s: its repository or branch is unknown; look at %s with git", id, rec.Path)
	}
	lk, err := lockRepo(ctx, rec.RepoRoot)
	if err != nil {
		return res, fmt.Errorf("merge %s: %w", id, err)
	}
	defer lk.unlock()
	root := rec.RepoRoot

	if all, err := listRegistered(ctx, root); err == nil {
		if reg, ok := findRegistered(all, rec.Path); ok && reg.locked {
			if pid := lockPID(reg.lockReason); pid > 0 && pidAlive(pid) {
				return res, &MergeRefusedError{Why: fmt.Sprintf("the worktree %s is in use by running process %d (%s); merge it once that process has ended", rec.Path, pid, reg.lockReason)}
			}
		}
	}
	var work []string
	var l *layout
	if dirExists(rec.Path) {
		a := unknown("no ink record for %s, and its branch's reflog no longer says where it started", rec.Path)
		if rec.Baseline != "" {
			a = Assess(ctx, rec)
		}
		if a.State == Unknown {
			return res, &MergeRefusedError{Why: fmt.Sprintf("ink cannot tell what the worktree %s holds (%s), so it will not merge it; look at it with %s, merge %s yourself if you want it (`git merge %s` in %s), or drop it with `ink worktrees rm --force %s`",
				rec.Path, a.Detail, inspectHint(info), rec.Branch, rec.Branch, root, id)}
		}
		if l, err = openLayout(ctx, rec); err != nil {
			return res, fmt.Errorf("merge %s: %w", id, err)
		}
		st, err := uncommitted(ctx, l)
		if err != nil {
			return res, fmt.Errorf("merge %s: %w", id, err)
		}
		work = statusFiles(strings.Join(st, "\n"))
	}
	// The child's commits come into the repository before anything is
	// judged there.
	if _, err := syncLocked(ctx, lk, rec); err != nil && dirExists(rec.GitDir()) {
		return res, fmt.Errorf("merge %s: %w", id, err)
	}

	into, err := read(ctx, root, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return res, &MergeRefusedError{Why: fmt.Sprintf("the main checkout %s is not on a branch (detached HEAD); check out the branch to merge into first", root)}
	}
	res.Into = strings.TrimSpace(into)
	// A submodule is never looked into: its configuration is its own
	// (a nested repository bash staged under --allow-git-writes names any
	// filter it likes), and git status would run it to judge the
	// submodule's files. A submodule moved to another commit still shows.
	dirty, err := read(ctx, root, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=dirty")
	if err != nil {
		return res, fmt.Errorf("merge %s: %w", id, err)
	}
	if files := statusFiles(dirty); len(files) > 0 {
		return res, &MergeRefusedError{Why: fmt.Sprintf("the main checkout %s has uncommitted changes; commit or stash them first", root), Files: files}
	}
	if len(work) > 0 && !opts.Commit {
		return res, &MergeRefusedError{Why: fmt.Sprintf("the worktree %s has uncommitted work; merge it with `ink worktrees merge --commit %s` (commits it on %s first), or commit it yourself in %s", rec.Path, id, rec.Branch, rec.Path), Files: work}
	}
	tip := branchTip(ctx, rec)
	if tip == "" {
		return res, fmt.Errorf("merge %s: branch %s not found in %s", id, rec.Branch, root)
	}
	mergeTip := tip
	if len(work) > 0 {
		c, files, err := commitWork(ctx, l, rec, tip)
		if err != nil {
			return res, fmt.Errorf("merge %s: commit the worktree's work: %w", id, err)
		}
		if l.sealed {
			if err := copyObjects(ctx, lk, l, root, []string{c}, []string{tip}); err != nil {
				return res, fmt.Errorf("merge %s: commit the worktree's work: %w", id, err)
			}
		}
		mergeTip = c
		res.Committed, res.CommittedFiles = c, files
	}

	if !inHead(ctx, root, mergeTip) {
		if err := refuseDrivers(ctx, root, rec.Branch, mergeTip); err != nil {
			return res, err
		}
		if err := preflight(ctx, root, res.Into, rec.Branch, mergeTip); err != nil {
			return res, err
		}
	}
	if res.Committed != "" {
		// The commit the preflight passed becomes the branch's tip, in the
		// worktree's git directory first and then in the repository, and
		// the worktree's index follows it (its files already match).
		if err := moveBranch(ctx, lk, l, rec, mergeTip, tip); err != nil {
			return res, fmt.Errorf("merge %s: committed the work on %s as %s, but %w", id, rec.Branch, ShortSHA(mergeTip), err)
		}
	}
	if inHead(ctx, root, mergeTip) {
		res.AlreadyMerged = true
	} else {
		merge := gitCall{dir: root, noRetry: true, env: identityEnv(ctx, root), args: []string{"merge", "--no-ff", "--no-edit", "-m", "ink: merge " + rec.Branch, mergeTip}}
		if _, err := lk.call(merge).exec(ctx); err != nil {
			if _, merr := read(ctx, root, "rev-parse", "-q", "--verify", "MERGE_HEAD"); merr == nil {
				_, _ = lk.run(context.WithoutCancel(ctx), root, "merge", "--abort")
			}
			if res.Committed != "" {
				return res, fmt.Errorf("merge %s: the work left uncommitted is now committed on %s as %s, but the merge failed: %w", id, rec.Branch, ShortSHA(res.Committed), err)
			}
			return res, fmt.Errorf("merge %s: %w", id, err)
		}
		head, err := read(ctx, root, "rev-parse", "HEAD")
		if err != nil {
			return res, fmt.Errorf("merge %s: merged, but HEAD is unreadable: %w", id, err)
		}
		res.Commit = strings.TrimSpace(head)
		if st, err := read(ctx, root, "diff", "--shortstat", "--no-ext-diff", "--no-textconv", "HEAD^1", "HEAD"); err == nil {
			res.Shortstat = strings.TrimSpace(st)
		}
	}
	res.Removed, res.Kept = afterMerge(ctx, lk, info, mergeTip, opts)
	return res, nil
}

// preflight refuses a merge of tip into the main checkout at root that
// would conflict, or whose new files would overwrite untracked or ignored
// files there.
func preflight(ctx context.Context, root, into, branch, tip string) error {
	out, err := read(ctx, root, "merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", tip)
	switch exitCode(err) {
	case 0:
		// git would overwrite an ignored file in the way of a file the
		// merge adds, and stop with its own message at an untracked one:
		// refuse both here, naming them.
		tree, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		added, err := read(ctx, root, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", "HEAD", tree)
		if err != nil {
			return fmt.Errorf("merge preflight: %w", err)
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
			return &MergeRefusedError{Why: fmt.Sprintf("the merge would overwrite untracked or ignored files in the main checkout %s; move them away first", root), Files: inWay}
		}
		return nil
	case 1:
		ls := lines(out)
		var files []string
		if len(ls) > 1 {
			files = ls[1:]
		}
		return &MergeRefusedError{Why: fmt.Sprintf("merging %s into %s would conflict; resolve it by hand (git merge %s in %s) or rebase the branch first", branch, into, branch, root), Files: files}
	default:
		return fmt.Errorf("merge preflight: %w", err)
	}
}

// refuseDrivers refuses a merge of tip into the main checkout at root
// when a file the branch changes is handled, by its attributes, by a filter
// or merge driver that the repository's own configuration defines
// (git-crypt, `git lfs install --local`, a custom merge driver): ink's git
// never runs those programs, so it would write such files unconverted or
// fail half-way; the user merges them with their own git.
func refuseDrivers(ctx context.Context, root, branch, tip string) error {
	ds, err := configDrivers(ctx, gitCall{dir: root})
	if err != nil {
		return fmt.Errorf("merge preflight: %w", err)
	}
	defined := map[string]bool{}
	for _, d := range ds {
		if d.kind == "filter" || d.kind == "merge" {
			defined[d.kind+"\x00"+d.name] = true
		}
	}
	if len(defined) == 0 {
		return nil
	}
	changed, err := read(ctx, root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "HEAD..."+tip)
	if err != nil {
		return fmt.Errorf("merge preflight: %w", err)
	}
	if strings.Trim(changed, "\x00") == "" {
		return nil
	}
	attrs, err := gitCall{dir: root, read: true, stdin: strings.NewReader(changed),
		args: []string{"check-attr", "-z", "--stdin", "filter", "merge"}}.exec(ctx)
	if err != nil {
		return fmt.Errorf("merge preflight: %w", err)
	}
	var files, names []string
	f := strings.Split(attrs, "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		path, attr, value := f[i], f[i+1], f[i+2]
		if !defined[attr+"\x00"+value] {
			continue
		}
		if !slices.Contains(files, path) {
			files = append(files, path)
		}
		if n := attr + " driver " + value; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(files) == 0 {
		return nil
	}
	return &MergeRefusedError{Why: fmt.Sprintf("the repository's own configuration defines the %s, which handles files the merge touches, and ink's git never runs a program that repository configuration names; merge the branch yourself with `git merge %s` in %s",
		strings.Join(names, ", "), branch, root), Files: files}
}

// afterMerge removes the worktree and its branch once everything in them
// is merged (tip is the branch's tip, now in HEAD), unless its child can
// still be resumed or something is left in it.
func afterMerge(ctx context.Context, lk *repoLock, info Info, tip string, opts MergeOptions) (bool, string) {
	rec := info.Record
	if !inkShaped(rec.Path, rec.RepoRoot) || !inkOwned(rec) {
		return false, fmt.Sprintf("%s is not where ink puts worktrees, so it is left alone", rec.Path)
	}
	if opts.Child != nil {
		if cs := opts.Child(info); cs.Resumable && dirExists(rec.Path) {
			return false, fmt.Sprintf("child %s can still be resumed in it (its last attempt ended %s); `ink worktrees rm %s` removes it", info.ChildID, lastStatus(&cs), info.ChildID)
		}
	}
	if dirExists(rec.Path) {
		st, err := uncommittedIn(ctx, rec)
		if err != nil || len(st) > 0 {
			return false, fmt.Sprintf("files appeared in it during the merge; look at them with `ink worktrees diff %s`", info.ChildID)
		}
	}
	if err := dropWorktree(ctx, lk, rec, tip, false); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// commitWork builds, without touching the worktree, its branch or its
// index, a commit on top of tip holding every uncommitted and untracked
// (not ignored) file of the worktree: it stages them into a copy of the
// worktree's index. The commit is written to the worktree's git
// directory. It returns the commit and the files it changes.
func commitWork(ctx context.Context, l *layout, rec Record, tip string) (string, []string, error) {
	var commit string
	var files []string
	err := withIndexCopy(l, func(env []string) error {
		add := l.call("add", "-A", "--", ".")
		add.env = env
		if _, err := add.exec(ctx); err != nil {
			return err
		}
		wt := l.call("write-tree")
		wt.env = env
		tree, err := wt.exec(ctx)
		if err != nil {
			return err
		}
		tree = strings.TrimSpace(tree)
		names, err := l.read(ctx, "diff", "--name-status", "--no-renames", tip, tree)
		if err != nil {
			return err
		}
		files = lines(names)
		ct := l.call("commit-tree", tree, "-p", tip, "-m", commitMessage(rec, files))
		ct.env = identityEnv(ctx, rec.RepoRoot)
		out, err := ct.exec(ctx)
		if err != nil {
			return err
		}
		commit = strings.TrimSpace(out)
		return nil
	})
	return commit, files, err
}

// moveBranch sets the worktree's branch from tip to commit — in the
// worktree's own git directory first, so that a later Sync cannot move it
// back, then in the repository — and resets the worktree's index to it.
func moveBranch(ctx context.Context, lk *repoLock, l *layout, rec Record, commit, tip string) error {
	ref := "refs/heads/" + rec.Branch
	msg := "ink: commit the work left uncommitted"
	if l.sealed {
		if err := l.checkRefDirs(rec.Branch); err != nil {
			return err
		}
		if _, err := l.call("update-ref", "-m", msg, ref, commit, tip).exec(ctx); err != nil {
			return fmt.Errorf("the worktree's branch could not move: %w", err)
		}
	}
	if _, err := lk.run(ctx, rec.RepoRoot, "update-ref", "-m", msg, ref, commit, tip); err != nil {
		return fmt.Errorf("the branch could not move in %s: %w", rec.RepoRoot, err)
	}
	if _, err := lk.call(l.call("reset", "-q")).exec(ctx); err != nil {
		return fmt.Errorf("the worktree's index could not follow: %w", err)
	}
	return nil
}

// maxMessageFiles bounds the files a generated commit message lists.
const maxMessageFiles = 50

// commitMessage is the message of the commit `merge --commit` makes.
func commitMessage(rec Record, files []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ink: commit the work child %s left uncommitted\n\n", rec.ChildID())
	fmt.Fprintf(&b, "`ink worktrees merge --commit %s` committed these files of the\nworktree %s before merging %s:\n\n", rec.ChildID(), rec.Path, rec.Branch)
	for i, f := range files {
		if i == maxMessageFiles {
			fmt.Fprintf(&b, "… and %d more\n", len(files)-maxMessageFiles)
			break
		}
		b.WriteString(f + "\n")
	}
	return b.String()
}

// identityEnv returns the environment that gives a commit made for the
// repository at dir an author and committer: none when the repository
// (its config, or the GIT_AUTHOR_*/GIT_COMMITTER_* variables) has an
// identity, else "ink <ink@localhost>" for whichever is missing.
func identityEnv(ctx context.Context, dir string) []string {
	var env []string
	for _, who := range []string{"AUTHOR", "COMMITTER"} {
		c := gitCall{dir: dir, read: true, ceiling: parentDir(dir), config: []string{"user.useConfigOnly=true"}, args: []string{"var", "GIT_" + who + "_IDENT"}}
		if _, err := c.exec(ctx); err != nil {
			env = append(env, "GIT_"+who+"_NAME=ink", "GIT_"+who+"_EMAIL=ink@localhost")
		}
	}
	return env
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
