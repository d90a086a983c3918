package worktree

import (
	"context"
	"fmt"
	"os"
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
// is registered on refs/heads/<branch>; its .git link and git directory are
// the ones ink made (else ink runs no git in it); HEAD is that branch; the
// branch's tip is the baseline; the branch's reflog still ends with the
// creation snapshot and no entry left the baseline; no index entry carries
// assume-unchanged or skip-worktree; no submodule is checked out in it;
// `git status` (all untracked files, config cannot hide any) is empty; and
// `git diff --quiet <baseline>` is 0. Any git failure is Unknown with the
// reason, never Clean. It only reads; safe for concurrent use.
func Assess(ctx context.Context, rec Record) Assessment {
	a, _ := assessRegistered(ctx, rec)
	return a
}

// assessRegistered is Assess that also returns, for a Clean worktree, its
// registration as the assessment read it (nil otherwise), so a removal
// that follows under the same repository lock need not list the worktrees
// again.
func assessRegistered(ctx context.Context, rec Record) (Assessment, *registered) {
	a, l, reg := assessState(ctx, rec)
	if a.State == WorkPresent && l != nil {
		fillWorkSummary(ctx, l, rec, &a)
	}
	if a.State != Clean {
		reg = nil
	}
	return a, reg
}

// assessState runs the checks of Assess in order; reg is the worktree's
// registration once found.
func assessState(ctx context.Context, rec Record) (a Assessment, l *layout, reg *registered) {
	if rec.Path == "" || rec.Branch == "" || rec.Baseline == "" || rec.RepoRoot == "" {
		return unknown("the worktree record is incomplete"), nil, reg
	}
	ref := "refs/heads/" + rec.Branch
	path, err := realpath(rec.Path)
	if err != nil {
		return unknown("worktree path %s cannot be resolved: %v", rec.Path, err), nil, reg
	}
	all, err := listRegistered(ctx, rec.RepoRoot)
	if err != nil {
		return unknown("cannot list the worktrees of %s: %v", rec.RepoRoot, err), nil, reg
	}
	found, ok := findRegistered(all, path)
	if !ok {
		return unknown("%s is not a registered worktree of %s", path, rec.RepoRoot), nil, reg
	}
	reg = &found
	if reg.branch == "" {
		return unknown("%s has a detached HEAD, not on %s (the branch was switched away)", path, rec.Branch), nil, reg
	}
	if reg.branch != ref {
		return unknown("%s is registered on %q, not on %s (the branch was switched)", path, strings.TrimPrefix(reg.branch, "refs/heads/"), rec.Branch), nil, reg
	}
	if strings.Trim(reg.head, "0") == "" {
		return unknown("branch %s no longer exists in %s (HEAD of %s points at nothing)", rec.Branch, rec.RepoRoot, path), nil, reg
	}
	rec.Path = path
	l, err = openLayout(ctx, rec)
	if err != nil {
		return unknown("%v", err), nil, reg
	}
	// One git reads the branch's tip and where HEAD points.
	out, err := l.read(ctx, "rev-parse", ref+"^{commit}", "--symbolic-full-name", "HEAD", "--")
	if err != nil {
		if strings.Contains(err.Error(), "unknown revision") {
			return unknown("branch %s no longer exists in the worktree's git directory %s", rec.Branch, l.commonDir), nil, reg
		}
		return unknown("HEAD of %s is unreadable: %v", path, err), nil, reg
	}
	ls := lines(out)
	if len(ls) < 2 {
		return unknown("HEAD of %s is unreadable (git said %q)", path, out), nil, reg
	}
	tip, head := ls[0], ls[1]
	if head == "HEAD" {
		return unknown("%s has a detached HEAD, not on %s (the branch was switched away)", path, rec.Branch), nil, reg
	}
	if head != ref {
		return unknown("%s is on %q, not on %s (the branch was switched)", path, strings.TrimPrefix(head, "refs/heads/"), rec.Branch), nil, reg
	}
	if tip != rec.Baseline {
		return Assessment{State: WorkPresent, Detail: commitsDetail(ctx, l, rec.Baseline, tip)}, l, reg
	}

	if a, done := assessReflog(ctx, l, rec, ref); done {
		return a, l, reg
	}

	index, err := l.read(ctx, "ls-files", "-v", "-s", "-z")
	if err != nil {
		return unknown("cannot read the index of %s: %v", path, err), nil, reg
	}
	for _, entry := range strings.Split(index, "\x00") {
		if entry == "" {
			continue
		}
		meta, name, _ := strings.Cut(entry, "\t")
		if !strings.HasPrefix(meta, "H ") {
			return unknown("index entry %q carries a flag (assume-unchanged or skip-worktree) that can hide changes", strings.Fields(meta)[0]+" "+name), nil, reg
		}
		// git would run git inside a repository checked out at a
		// submodule path, with its configuration, to tell whether it is
		// dirty: ink's git never looks inside (--ignore-submodules=dirty),
		// and such a worktree is Unknown instead.
		if strings.HasPrefix(meta, "H 160000 ") {
			if _, err := os.Lstat(filepath.Join(l.workTree, filepath.FromSlash(name), ".git")); err == nil {
				return unknown("a repository is checked out at the submodule path %s, and ink runs no git in it; look at it yourself", name), nil, reg
			}
		}
	}

	status, err := uncommitted(ctx, l)
	if err != nil {
		return unknown("%v", err), nil, reg
	}
	if len(status) > 0 {
		return Assessment{State: WorkPresent, Detail: uncommittedDetail(strings.Join(status, "\n")), Uncommitted: true}, l, reg
	}

	_, err = l.read(ctx, "diff", "--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", rec.Baseline)
	switch exitCode(err) {
	case 0:
		return Assessment{State: Clean, Detail: "no changes since baseline " + ShortSHA(rec.Baseline)}, l, reg
	case 1:
		return Assessment{State: WorkPresent, Detail: "files differ from baseline " + ShortSHA(rec.Baseline)}, l, reg
	default:
		return unknown("git diff against baseline %s failed: %v", ShortSHA(rec.Baseline), err), nil, reg
	}
}

// assessReflog checks the branch's reflogs against the creation snapshot:
// the repository's (which records what ink brought back) and, for a
// worktree with its own git directory, the worktree's (which records every
// move the child made); done is false when it found nothing to report.
func assessReflog(ctx context.Context, l *layout, rec Record, ref string) (Assessment, bool) {
	if a, done := checkReflog(ctx, gitCall{dir: rec.RepoRoot, read: true}, rec, ref); done || !l.sealed {
		return a, done
	}
	c := l.call()
	c.read = true
	return checkReflog(ctx, c, rec, ref)
}

// checkReflog checks the reflog of ref as the call at reads it.
func checkReflog(ctx context.Context, at gitCall, rec Record, ref string) (Assessment, bool) {
	snap := lines(rec.CreationReflog)
	if len(snap) == 0 {
		return unknown("the record has no creation reflog snapshot"), true
	}
	at.args = []string{"reflog", "show", "--format=%H %gs", ref}
	out, err := at.exec(ctx)
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
	for _, e := range log {
		sha, _, _ := strings.Cut(e, " ")
		if sha != rec.Baseline {
			return Assessment{State: WorkPresent, Detail: fmt.Sprintf("branch %s moved off baseline %s and back (reflog: %s)", rec.Branch, ShortSHA(rec.Baseline), e)}, true
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
func commitsDetail(ctx context.Context, l *layout, baseline, tip string) string {
	n, err := l.read(ctx, "rev-list", "--count", baseline+".."+tip)
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
func fillWorkSummary(ctx context.Context, l *layout, rec Record, a *Assessment) {
	if st, err := uncommitted(ctx, l); err == nil && len(st) > 0 {
		a.Uncommitted = true
	}
	if st, err := l.read(ctx, "diff", "--shortstat", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", rec.Baseline); err == nil {
		a.Shortstat = strings.TrimSpace(st)
	}
	out, err := l.read(ctx, "ls-files", "-z", "--others", "--exclude-standard")
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
