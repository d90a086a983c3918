package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNotFound marks a Find for a child id with no worktree under $INK_HOME.
var ErrNotFound = errors.New("no such worktree")

// ListOptions says what List, Find and Prune look at and how much they read.
type ListOptions struct {
	// Repos are repositories (any directory inside one) whose ink
	// worktrees are listed as well, whatever INK_HOME made them: a worktree
	// registered there on branch ink/<id> at <home>/worktrees/<slug>/<id>.
	Repos []string
	// Status assesses every worktree (Assess, ahead/behind, dirty: several
	// git commands each). Without it only `git worktree list` runs, once per
	// repository, and Info.Assessment is nil.
	Status bool
	// Child, when set, says what became of the child that owns a worktree;
	// its answer is Info.Child.
	Child func(Info) ChildStatus
}

// ChildStatus is what the caller (who can read transcripts) knows about
// the child a worktree was made for.
type ChildStatus struct {
	// Transcript is the child's transcript ("" when none was found).
	Transcript string `json:"transcript,omitempty"`
	// LastStatus is how its last attempt ended (completed, aborted,
	// timeout, crash, interrupted, or unfinished when it never recorded an
	// end; "" when no attempt started).
	LastStatus string `json:"lastStatus,omitempty"`
	// Resumable is true when the child can still be resumed, and so still
	// needs its worktree.
	Resumable bool `json:"resumable"`
	// Problem says why the transcript could not be read or used.
	Problem string `json:"problem,omitempty"`
}

// Info describes one ink worktree for the admin commands.
type Info struct {
	// ChildID is the worktree's directory name.
	ChildID string `json:"childId"`
	// InkHome is the INK_HOME the worktree was made under ("" when its path
	// does not say).
	InkHome string `json:"inkHome,omitempty"`
	// Record is the creation record; when RecordMissing it holds what could
	// be read from git (path, branch, repository, and the baseline when the
	// branch's creation entry is still in its reflog).
	Record        Record `json:"record"`
	RecordMissing bool   `json:"recordMissing,omitempty"`
	// Registered is true when git lists the worktree; DirMissing when its
	// directory is gone.
	Registered bool `json:"registered"`
	DirMissing bool `json:"dirMissing,omitempty"`
	// Incomplete is true when the worktree's creation never finished: its
	// lock still says "creating".
	Incomplete bool `json:"incomplete,omitempty"`
	// Head is the branch tip git lists for the worktree ("" when unknown).
	Head string `json:"head,omitempty"`
	// Locked, LockReason, LockPID and LockPIDAlive describe git's worktree
	// lock; LockPID is parsed from ink's reason "ink <id> pid <pid>".
	Locked       bool   `json:"locked"`
	LockReason   string `json:"lockReason,omitempty"`
	LockPID      int    `json:"lockPid,omitempty"`
	LockPIDAlive bool   `json:"lockPidAlive,omitempty"`
	// Untrusted says why ink runs no git in the worktree: its .git link or
	// its git directory is not the one ink made ("" when they are). Such a
	// worktree is "unknown" in every listing, and diff, merge, rm and prune
	// refuse or skip it.
	Untrusted string `json:"untrusted,omitempty"`
	// Child is ListOptions.Child's answer (nil without it).
	Child *ChildStatus `json:"child,omitempty"`
	// Problem says what could not be read, if anything.
	Problem string `json:"problem,omitempty"`

	// The fields below are filled only with ListOptions.Status.

	// Assessment is Assess of Record.
	Assessment *Assessment `json:"assessment,omitempty"`
	// Merged is true when the branch holds commits, all of them already in
	// the main checkout's HEAD, and the worktree has no uncommitted files.
	Merged bool `json:"merged,omitempty"`
	// Commits counts commits on the branch since the baseline.
	Commits int `json:"commits"`
	// Ahead and Behind compare the branch with the main checkout's HEAD.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Dirty is true when the worktree has uncommitted changes or untracked
	// files.
	Dirty bool `json:"dirty"`
}

// MarshalJSON leaves out the status fields when they were not read.
func (in Info) MarshalJSON() ([]byte, error) {
	type plain Info
	if in.Assessment != nil {
		return json.Marshal(plain(in))
	}
	return json.Marshal(struct {
		plain
		Commits *int  `json:"commits,omitempty"`
		Ahead   *int  `json:"ahead,omitempty"`
		Behind  *int  `json:"behind,omitempty"`
		Dirty   *bool `json:"dirty,omitempty"`
	}{plain: plain(in)})
}

// State names the worktree's state in one word for listings: "creating"
// or "incomplete" (a creation in progress, or one that died), "missing"
// (the directory is gone), "unknown" when ink runs no git in it
// (Untrusted), and with status "merged", "clean", "work-present" or
// "unknown"; "" when the status was not read.
func (in Info) State() string {
	switch {
	case in.Incomplete && in.Locked && in.LockPIDAlive:
		return "creating"
	case in.Incomplete:
		return "incomplete"
	case in.DirMissing:
		return "missing"
	case in.Untrusted != "":
		return "unknown"
	case in.Assessment == nil:
		return ""
	case in.Merged:
		return "merged"
	default:
		return in.Assessment.State.String()
	}
}

// List describes every worktree under $INK_HOME/worktrees with its status,
// sorted by repository then child id. It is ListWith with Status.
func List(ctx context.Context, inkHome string) ([]Info, error) {
	return ListWith(ctx, inkHome, ListOptions{Status: true})
}

// ListWith describes every worktree under $INK_HOME/worktrees (directories,
// and record files whose worktree is gone or never came to be) and every
// ink worktree registered in opts.Repos, sorted by repository then child
// id. It only reads; an unreadable entry is listed with a Problem rather
// than failing the list. It runs `git worktree list` once per repository,
// and more git only with opts.Status.
func ListWith(ctx context.Context, inkHome string, opts ListOptions) ([]Info, error) {
	return scan(ctx, inkHome, "", opts)
}

// Find describes the worktree of childID, with its status, or fails with
// ErrNotFound.
func Find(ctx context.Context, inkHome, childID string) (Info, error) {
	return FindWith(ctx, inkHome, childID, ListOptions{Status: true})
}

// FindWith is Find looking where opts says (see ListWith).
func FindWith(ctx context.Context, inkHome, childID string, opts ListOptions) (Info, error) {
	if err := checkChildID(childID); err != nil {
		return Info{}, err
	}
	infos, err := scan(ctx, inkHome, childID, opts)
	if err != nil {
		return Info{}, err
	}
	if len(infos) == 0 {
		return Info{}, fmt.Errorf("%w: no worktree for child %s under %s; list them with `ink worktrees ls`", ErrNotFound, childID, worktreesDir(inkHome))
	}
	// The INK_HOME's own worktree comes before another home's.
	for _, in := range infos {
		if in.InkHome == homeReal(inkHome) {
			return in, nil
		}
	}
	return infos[0], nil
}

// homeReal resolves INK_HOME when it exists.
func homeReal(inkHome string) string {
	if r, err := realpath(inkHome); err == nil {
		return r
	}
	return filepath.Clean(inkHome)
}

// scan builds the Info of every worktree (only childID's when it is not
// empty).
func scan(ctx context.Context, inkHome, childID string, opts ListOptions) ([]Info, error) {
	paths, err := worktreePaths(inkHome)
	if err != nil {
		return nil, err
	}
	regs := registry{}
	seen := map[string]bool{}
	var infos []Info
	for _, p := range paths {
		if childID != "" && filepath.Base(p) != childID {
			continue
		}
		seen[p] = true
		infos = append(infos, homeEntry(ctx, p, homeReal(inkHome)))
	}
	for _, dir := range opts.Repos {
		root, err := repoRootOf(ctx, dir)
		if err != nil {
			continue
		}
		all, err := regs.get(ctx, root)
		if err != nil {
			continue
		}
		for _, r := range all {
			id := filepath.Base(r.path)
			if seen[r.path] || (childID != "" && id != childID) || !isInkWorktree(r, root) {
				continue
			}
			seen[r.path] = true
			infos = append(infos, foreignEntry(ctx, r, root))
		}
	}
	for i := range infos {
		regs.describe(ctx, &infos[i])
		if opts.Status {
			readStatus(ctx, &infos[i])
		}
		if opts.Child != nil {
			cs := opts.Child(infos[i])
			infos[i].Child = &cs
		}
	}
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].Record.RepoRoot != infos[j].Record.RepoRoot {
			return infos[i].Record.RepoRoot < infos[j].Record.RepoRoot
		}
		if infos[i].ChildID != infos[j].ChildID {
			return infos[i].ChildID < infos[j].ChildID
		}
		return infos[i].Record.Path < infos[j].Record.Path
	})
	return infos, nil
}

// repoRootOf is the main checkout of the repository that holds dir (for a
// directory inside one of ink's worktrees, the one it was made for).
func repoRootOf(ctx context.Context, dir string) (string, error) {
	if rec, ok, err := enclosingWorktree(dir); err != nil {
		return "", err
	} else if ok {
		return rec.RepoRoot, nil
	}
	out, err := read(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return mainRoot(ctx, dir, strings.TrimSpace(out))
}

// isInkWorktree reports whether a registered worktree of root is one ink
// made: on branch ink/<id> at <home>/worktrees/<slug of root>/<id>.
func isInkWorktree(r registered, root string) bool {
	id := filepath.Base(r.path)
	return checkChildID(id) == nil && r.branch == "refs/heads/"+BranchPrefix+id && inkShaped(r.path, root)
}

// inkShaped reports whether path has the shape of a worktree ink makes for
// the repository at root: <home>/worktrees/<RepoSlug(root)>/<id>.
func inkShaped(path, root string) bool {
	p := filepath.Clean(path)
	slugDir := filepath.Dir(p)
	return checkChildID(filepath.Base(p)) == nil && filepath.Base(slugDir) == RepoSlug(root) &&
		filepath.Base(filepath.Dir(slugDir)) == "worktrees"
}

// homeOf returns the INK_HOME a worktree path lies under
// (<home>/worktrees/<slug>/<id>).
func homeOf(path string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Clean(path))))
}

// worktreePaths lists $INK_HOME/worktrees/<slug>/<childId> for every child
// directory or record file.
func worktreePaths(inkHome string) ([]string, error) {
	base := worktreesDir(homeReal(inkHome))
	slugs, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range slugs {
		if !s.IsDir() {
			continue
		}
		dir := filepath.Join(base, s.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("list worktrees: %w", err)
		}
		names := dirNames(entries)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			if !e.IsDir() {
				var ok bool
				if name, ok = strings.CutSuffix(name, ".json"); !ok {
					continue
				}
				if loneEmptyRecord(dir, names, e.Name()) {
					continue // a lone empty record is no worktree
				}
			}
			p := filepath.Join(base, s.Name(), name)
			if !seen[p] && checkChildID(name) == nil {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// homeEntry starts the Info of the worktree at path under INK_HOME home.
func homeEntry(ctx context.Context, path, home string) Info {
	info := Info{ChildID: filepath.Base(path), InkHome: home}
	rec, err := readRecord(path)
	switch {
	case err != nil:
		info.RecordMissing = true
		info.Problem = "no ink record for this worktree"
		if !errors.Is(err, os.ErrNotExist) {
			info.Problem = fmt.Sprintf("its ink record is unreadable (%v)", err)
		}
		rec = recordFromGit(ctx, path, "")
	case !samePath(rec.Path, path) || rec.RepoRoot == "" || !inkShaped(path, rec.RepoRoot):
		info.RecordMissing = true
		info.Problem = fmt.Sprintf("its ink record names %s in %s, not this directory; it is ignored", rec.Path, rec.RepoRoot)
		rec = recordFromGit(ctx, path, "")
	}
	info.Record = rec
	return info
}

// foreignEntry starts the Info of an ink worktree found in the repository
// at root, made under another INK_HOME.
func foreignEntry(ctx context.Context, r registered, root string) Info {
	info := Info{ChildID: filepath.Base(r.path), InkHome: homeOf(r.path)}
	rec, err := readRecord(r.path)
	if err != nil || !samePath(rec.Path, r.path) || !samePath(rec.RepoRoot, root) {
		info.RecordMissing = true
		rec = recordFromGit(ctx, r.path, root)
	}
	info.Record = rec
	return info
}

// registry caches `git worktree list` per repository.
type registry map[string]*regResult

type regResult struct {
	all []registered
	err error
	// byPath indexes all by path as git lists it and with symlinks
	// resolved.
	byPath map[string]registered
}

func (g registry) load(ctx context.Context, root string) *regResult {
	if r, ok := g[root]; ok {
		return r
	}
	r := &regResult{byPath: map[string]registered{}}
	r.all, r.err = listRegistered(ctx, root)
	for _, reg := range r.all {
		r.byPath[filepath.Clean(reg.path)] = reg
		if real, err := realpath(reg.path); err == nil {
			r.byPath[real] = reg
		}
	}
	g[root] = r
	return r
}

func (g registry) get(ctx context.Context, root string) ([]registered, error) {
	r := g.load(ctx, root)
	return r.all, r.err
}

// find returns the registration of path in the repository at root.
func (r *regResult) find(path string) (registered, bool) {
	if reg, ok := r.byPath[filepath.Clean(path)]; ok {
		return reg, true
	}
	if real, err := realpath(path); err == nil {
		reg, ok := r.byPath[real]
		return reg, ok
	}
	return registered{}, false
}

// describe fills what git's worktree list says about info.
func (g registry) describe(ctx context.Context, info *Info) {
	rec := info.Record
	path := rec.Path
	info.DirMissing = !dirExists(path)
	if rec.RepoRoot == "" {
		info.Problem = joinProblem(info.Problem, "its repository is unknown")
		return
	}
	r := g.load(ctx, rec.RepoRoot)
	if r.err != nil {
		info.Problem = joinProblem(info.Problem, fmt.Sprintf("cannot list the worktrees of %s: %v", rec.RepoRoot, r.err))
		return
	}
	reg, found := r.find(path)
	if found {
		info.Registered = true
		info.Head = reg.head
		info.Locked = reg.locked
		info.LockReason = reg.lockReason
		info.LockPID = lockPID(reg.lockReason)
		info.LockPIDAlive = info.LockPID > 0 && pidAlive(info.LockPID)
		info.Incomplete = strings.HasSuffix(reg.lockReason, creatingMark)
	}
	if info.DirMissing {
		info.Problem = joinProblem(info.Problem, "the worktree directory is missing")
		return
	}
	if _, err := openLayout(ctx, rec); err != nil {
		var ue *UntrustedError
		if errors.As(err, &ue) {
			info.Untrusted = ue.Why
		}
		info.Problem = joinProblem(info.Problem, err.Error())
	}
}

// readStatus fills the status fields of info.
func readStatus(ctx context.Context, info *Info) {
	rec := info.Record
	var a Assessment
	if info.RecordMissing && rec.Baseline == "" {
		a = unknown("no ink record for %s, and its branch's reflog no longer says where it started", rec.Path)
	} else {
		a = Assess(ctx, rec)
	}
	info.Assessment = &a
	if rec.RepoRoot == "" || info.DirMissing || info.Untrusted != "" {
		return
	}
	l, err := openLayout(ctx, rec)
	if err != nil {
		return
	}
	tip, err := l.branchTip(ctx, rec.Branch)
	if err != nil {
		return
	}
	if rec.Baseline != "" {
		if n, err := l.read(ctx, "rev-list", "--count", rec.Baseline+".."+tip); err == nil {
			info.Commits, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	aheadKnown := false
	if head, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil {
		if out, err := l.read(ctx, "rev-list", "--left-right", "--count", tip+"..."+strings.TrimSpace(head)); err == nil {
			f := strings.Fields(out)
			if len(f) == 2 {
				info.Ahead, _ = strconv.Atoi(f[0])
				info.Behind, _ = strconv.Atoi(f[1])
				aheadKnown = true
			}
		}
	}
	if st, err := uncommitted(ctx, l); err == nil {
		info.Dirty = len(st) > 0
	} else {
		info.Problem = joinProblem(info.Problem, err.Error())
	}
	info.Merged = a.State == WorkPresent && aheadKnown && info.Ahead == 0 && info.Commits > 0 && !info.Dirty
}

// uncommitted lists the `git status --porcelain` lines of the worktree
// (all untracked files shown; submodules are not looked into).
func uncommitted(ctx context.Context, l *layout) ([]string, error) {
	c := l.call("status", "--porcelain", "--untracked-files=all", "--ignore-submodules=dirty")
	c.read = true
	c.config = []string{"status.showUntrackedFiles=all"}
	out, err := c.exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %w", l.workTree, err)
	}
	return lines(out), nil
}

// uncommittedIn is uncommitted for the worktree of rec, once ink has
// verified it.
func uncommittedIn(ctx context.Context, rec Record) ([]string, error) {
	l, err := openLayout(ctx, rec)
	if err != nil {
		return nil, err
	}
	return uncommitted(ctx, l)
}

func joinProblem(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
