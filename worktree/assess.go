package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// State is the verdict of an assessment. The zero value is Unknown, so a
// forgotten assignment can never read as Clean.
type State int

const (
	// Unknown: ink cannot prove the worktree holds nothing; keep it.
	Unknown State = iota
	// WorkPresent: the worktree holds commits or file changes; keep it.
	WorkPresent
	// Clean: provably identical to the baseline; safe to remove.
	Clean
)

// String returns "unknown", "work-present" or "clean".
func (s State) String() string {
	switch s {
	case Clean:
		return "clean"
	case WorkPresent:
		return "work-present"
	default:
		return "unknown"
	}
}

// MarshalText renders the state as its String.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state written by MarshalText; anything else is
// Unknown.
func (s *State) UnmarshalText(b []byte) error {
	switch string(b) {
	case "clean":
		*s = Clean
	case "work-present":
		*s = WorkPresent
	default:
		*s = Unknown
	}
	return nil
}

// Assessment says what a worktree holds after an attempt.
type Assessment struct {
	State State `json:"state"`
	// Detail says why the state was chosen (for Unknown: what failed).
	Detail string `json:"detail,omitempty"`
	// Shortstat is `git diff --shortstat <baseline>` of the work tree.
	Shortstat string `json:"shortstat,omitempty"`
	// Untracked lists up to 5 untracked files; UntrackedMore counts the rest.
	Untracked     []string `json:"untracked,omitempty"`
	UntrackedMore int      `json:"untrackedMore,omitempty"`
	// Uncommitted is true when some of the work is not committed (staged,
	// modified or untracked files), so merging it needs `merge --commit`.
	Uncommitted bool `json:"uncommitted,omitempty"`
}

// maxUntrackedShown bounds Assessment.Untracked.
const maxUntrackedShown = 5

func unknown(format string, args ...any) Assessment {
	return Assessment{State: Unknown, Detail: fmt.Sprintf(format, args...)}
}

// Assess decides whether the worktree of rec is Clean, holds work, or is in
// a state ink cannot judge, checking in this order: the path resolves and
// is registered on refs/heads/<branch> and links back to the repository;
// HEAD is that branch; HEAD is the baseline; the branch's reflog still ends
// with the creation snapshot and no entry left the baseline; no index entry
// carries assume-unchanged or skip-worktree; `git status` (all untracked
// files, submodules included, config cannot hide any) is empty; and
// `git diff --quiet <baseline>` is 0. Any git failure is Unknown with the
// reason, never Clean. It only reads; safe for concurrent use.
func Assess(ctx context.Context, rec Record) Assessment {
	a := assessState(ctx, rec)
	if a.State == WorkPresent {
		fillWorkSummary(ctx, rec, &a)
	}
	return a
}

func assessState(ctx context.Context, rec Record) Assessment {
	if rec.Path == "" || rec.Branch == "" || rec.Baseline == "" || rec.RepoRoot == "" {
		return unknown("the worktree record is incomplete")
	}
	ref := "refs/heads/" + rec.Branch
	path, err := realpath(rec.Path)
	if err != nil {
		return unknown("worktree path %s cannot be resolved: %v", rec.Path, err)
	}
	all, err := listRegistered(ctx, rec.RepoRoot)
	if err != nil {
		return unknown("cannot list the worktrees of %s: %v", rec.RepoRoot, err)
	}
	reg, ok := findRegistered(all, path)
	if !ok {
		return unknown("%s is not a registered worktree of %s", path, rec.RepoRoot)
	}
	if reg.branch == "" {
		return unknown("%s has a detached HEAD, not on %s (the branch was switched away)", path, rec.Branch)
	}
	if reg.branch != ref {
		return unknown("%s is registered on %q, not on %s (the branch was switched)", path, strings.TrimPrefix(reg.branch, "refs/heads/"), rec.Branch)
	}
	if strings.Trim(reg.head, "0") == "" {
		return unknown("branch %s no longer exists (HEAD of %s points at nothing)", rec.Branch, path)
	}
	view, err := viewWorktree(ctx, rec.RepoRoot, path)
	if err != nil {
		return unknown("%v", err)
	}
	if view.headRef != ref {
		return unknown("HEAD of %s is %s, not %s", path, view.headRef, ref)
	}
	tip := reg.head
	if tip != rec.Baseline {
		return Assessment{State: WorkPresent, Detail: commitsDetail(ctx, path, rec.Baseline, tip)}
	}

	if a, done := assessReflog(ctx, rec, path, ref); done {
		return a
	}

	flags, err := readIn(ctx, path, "ls-files", "-v")
	if err != nil {
		return unknown("cannot read the index of %s: %v", path, err)
	}
	for _, l := range lines(flags) {
		if !strings.HasPrefix(l, "H ") {
			return unknown("index entry %q carries a flag (assume-unchanged or skip-worktree) that can hide changes", l)
		}
	}

	status, err := gitCall{dir: path, read: true, ceiling: parentDir(path),
		config: []string{"status.showUntrackedFiles=all"},
		args:   []string{"status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none"}}.exec(ctx)
	if err != nil {
		return unknown("git status failed in %s: %v", path, err)
	}
	if strings.TrimSpace(status) != "" {
		return Assessment{State: WorkPresent, Detail: uncommittedDetail(status), Uncommitted: true}
	}

	_, err = readIn(ctx, path, "diff", "--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none", rec.Baseline)
	switch exitCode(err) {
	case 0:
		return Assessment{State: Clean, Detail: "no changes since baseline " + ShortSHA(rec.Baseline)}
	case 1:
		return Assessment{State: WorkPresent, Detail: "files differ from baseline " + ShortSHA(rec.Baseline)}
	default:
		return unknown("git diff against baseline %s failed: %v", ShortSHA(rec.Baseline), err)
	}
}

// assessReflog checks the branch's reflog against the creation snapshot;
// done is false when it found nothing to report.
func assessReflog(ctx context.Context, rec Record, path, ref string) (Assessment, bool) {
	snap := lines(rec.CreationReflog)
	if len(snap) == 0 {
		return unknown("the record has no creation reflog snapshot"), true
	}
	out, err := readIn(ctx, path, "reflog", "show", "--format=%H %gs", ref)
	if err != nil {
		return unknown("cannot read the reflog of %s: %v", rec.Branch, err), true
	}
	log := lines(out)
	if len(log) == 0 {
		return unknown("the reflog of %s is empty (expired or deleted)", rec.Branch), true
	}
	if !endsWith(log, snap) {
		return unknown("the reflog of %s no longer ends with its creation entry (history was rewritten or expired)", rec.Branch), true
	}
	for _, l := range log {
		sha, _, _ := strings.Cut(l, " ")
		if sha != rec.Baseline {
			return Assessment{State: WorkPresent, Detail: fmt.Sprintf("branch %s moved off baseline %s and back (reflog: %s)", rec.Branch, ShortSHA(rec.Baseline), l)}, true
		}
	}
	return Assessment{}, false
}

// endsWith reports whether log's last entries equal snap.
func endsWith(log, snap []string) bool {
	if len(log) < len(snap) {
		return false
	}
	tail := log[len(log)-len(snap):]
	for i := range snap {
		if tail[i] != snap[i] {
			return false
		}
	}
	return true
}

// worktreeSide is what a worktree says about itself.
type worktreeSide struct {
	// headRef is the full ref HEAD points at, or "HEAD" when detached.
	headRef string
}

// viewWorktree reads, from inside the worktree at path, which repository
// its .git link leads to and what HEAD points at, and checks that the link
// leads to the repository at root.
func viewWorktree(ctx context.Context, root, path string) (worktreeSide, error) {
	out, err := readIn(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir", "--symbolic-full-name", "HEAD")
	ls := lines(out)
	if err != nil || len(ls) < 1 {
		return worktreeSide{}, fmt.Errorf("%s is not a working git checkout (its .git link is missing or broken, or HEAD is unreadable): %v", path, err)
	}
	if err := checkCommonDir(ctx, root, path, ls[0]); err != nil {
		return worktreeSide{}, err
	}
	if len(ls) < 2 {
		return worktreeSide{}, fmt.Errorf("HEAD of %s is unreadable", path)
	}
	return worktreeSide{headRef: ls[1]}, nil
}

// checkCommonDir checks that got, the git directory a worktree links to,
// is the common git directory of the repository at root.
func checkCommonDir(ctx context.Context, root, path, got string) error {
	if samePath(got, filepath.Join(root, ".git")) {
		return nil
	}
	want, err := read(ctx, root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return fmt.Errorf("cannot read the git directory of %s: %w", root, err)
	}
	if !samePath(got, strings.TrimSpace(want)) {
		return fmt.Errorf("%s links to the repository %s, not to %s", path, got, root)
	}
	return nil
}

// checkLinked verifies that the worktree's own .git link leads to the same
// repository as root.
func checkLinked(ctx context.Context, root, path string) error {
	got, err := readIn(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return fmt.Errorf("%s is not a working git checkout (its .git link is missing or broken): %w", path, err)
	}
	return checkCommonDir(ctx, root, path, strings.TrimSpace(got))
}

// uncommittedDetail names the kinds of uncommitted work in a `git status
// --porcelain` listing: staged, modified (not staged) and untracked files.
func uncommittedDetail(status string) string {
	var staged, modified, untracked bool
	for _, l := range lines(status) {
		if len(l) < 2 {
			continue
		}
		if l[:2] == "??" {
			untracked = true
			continue
		}
		staged = staged || l[0] != ' '
		modified = modified || l[1] != ' '
	}
	var kinds []string
	if staged {
		kinds = append(kinds, "staged")
	}
	if modified {
		kinds = append(kinds, "modified")
	}
	if untracked {
		kinds = append(kinds, "untracked")
	}
	if len(kinds) == 0 {
		return "uncommitted changes"
	}
	return "uncommitted changes (" + strings.Join(kinds, ", ") + ")"
}

// commitsDetail describes the commits between baseline and tip.
func commitsDetail(ctx context.Context, path, baseline, tip string) string {
	n, err := readIn(ctx, path, "rev-list", "--count", baseline+".."+tip)
	if err != nil || strings.TrimSpace(n) == "0" {
		return fmt.Sprintf("branch moved from %s to %s", ShortSHA(baseline), ShortSHA(tip))
	}
	if strings.TrimSpace(n) == "1" {
		return "1 commit since baseline " + ShortSHA(baseline)
	}
	return fmt.Sprintf("%s commits since baseline %s", strings.TrimSpace(n), ShortSHA(baseline))
}

// fillWorkSummary adds the shortstat, the untracked files and whether
// anything is uncommitted; failures leave them empty (the state stands).
func fillWorkSummary(ctx context.Context, rec Record, a *Assessment) {
	if st, err := uncommitted(ctx, rec.Path); err == nil && len(st) > 0 {
		a.Uncommitted = true
	}
	if st, err := readIn(ctx, rec.Path, "diff", "--shortstat", "--no-ext-diff", "--no-textconv", rec.Baseline); err == nil {
		a.Shortstat = strings.TrimSpace(st)
	}
	out, err := gitCall{dir: rec.Path, read: true, ceiling: parentDir(rec.Path),
		args: []string{"ls-files", "-z", "--others", "--exclude-standard"}}.exec(ctx)
	if err != nil {
		return
	}
	for _, f := range strings.Split(out, "\x00") {
		if f == "" {
			continue
		}
		if len(a.Untracked) < maxUntrackedShown {
			a.Untracked = append(a.Untracked, f)
		} else {
			a.UntrackedMore++
		}
	}
}

// ShortSHA abbreviates a commit id to 12 characters for messages.
func ShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
