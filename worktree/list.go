package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ErrNotFound marks a Find for a child id with no worktree under $INK_HOME.
var ErrNotFound = errors.New("no such worktree")

// Info describes one worktree under $INK_HOME/worktrees for the admin
// commands.
type Info struct {
	// ChildID is the worktree's directory name.
	ChildID string `json:"childId"`
	// Record is the creation record; when RecordMissing it holds what could
	// be read from git (path, branch, repository).
	Record        Record `json:"record"`
	RecordMissing bool   `json:"recordMissing,omitempty"`
	// Assessment is Assess of Record (Unknown when RecordMissing).
	Assessment Assessment `json:"assessment"`
	// Head is the branch tip ("" when unreadable).
	Head string `json:"head,omitempty"`
	// Commits counts commits on the branch since the baseline.
	Commits int `json:"commits"`
	// Ahead and Behind compare the branch with the main checkout's HEAD.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Dirty is true when the worktree has uncommitted changes or untracked
	// files.
	Dirty bool `json:"dirty"`
	// Locked, LockReason, LockPID and LockPIDAlive describe git's worktree
	// lock; LockPID is parsed from ink's reason "ink <id> pid <pid>".
	Locked       bool   `json:"locked"`
	LockReason   string `json:"lockReason,omitempty"`
	LockPID      int    `json:"lockPid,omitempty"`
	LockPIDAlive bool   `json:"lockPidAlive,omitempty"`
	// Problem says what could not be read, if anything.
	Problem string `json:"problem,omitempty"`
}

// List describes every worktree under $INK_HOME/worktrees (directories and
// record files whose directory is gone), sorted by repository then child
// id. It only reads; an unreadable entry is listed with a Problem rather
// than failing the list.
func List(ctx context.Context, inkHome string) ([]Info, error) {
	paths, err := worktreePaths(inkHome)
	if err != nil {
		return nil, err
	}
	regs := map[string][]registered{}
	var infos []Info
	for _, p := range paths {
		infos = append(infos, describeWorktree(ctx, p, regs))
	}
	sort.Slice(infos, func(i, j int) bool {
		if infos[i].Record.RepoRoot != infos[j].Record.RepoRoot {
			return infos[i].Record.RepoRoot < infos[j].Record.RepoRoot
		}
		return infos[i].ChildID < infos[j].ChildID
	})
	return infos, nil
}

// Find describes the worktree of childID, or fails with ErrNotFound.
func Find(ctx context.Context, inkHome, childID string) (Info, error) {
	if err := checkChildID(childID); err != nil {
		return Info{}, err
	}
	paths, err := worktreePaths(inkHome)
	if err != nil {
		return Info{}, err
	}
	for _, p := range paths {
		if filepath.Base(p) == childID {
			return describeWorktree(ctx, p, map[string][]registered{}), nil
		}
	}
	return Info{}, fmt.Errorf("%w: no worktree for child %s under %s; list them with `ink worktrees ls`", ErrNotFound, childID, worktreesDir(inkHome))
}

// worktreePaths lists $INK_HOME/worktrees/<slug>/<childId> for every child
// directory or record file.
func worktreePaths(inkHome string) ([]string, error) {
	base := worktreesDir(inkHome)
	if r, err := realpath(base); err == nil {
		base = r
	}
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
		entries, err := os.ReadDir(filepath.Join(base, s.Name()))
		if err != nil {
			return nil, fmt.Errorf("list worktrees: %w", err)
		}
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

// describeWorktree builds the Info of the worktree at path; regs caches
// `git worktree list` per repository.
func describeWorktree(ctx context.Context, path string, regs map[string][]registered) Info {
	info := Info{ChildID: filepath.Base(path)}
	rec, err := readRecord(path)
	if err != nil {
		info.RecordMissing = true
		rec = recordFromGit(ctx, path)
		info.Problem = "no ink record for this worktree"
	}
	if !info.RecordMissing && !samePath(rec.Path, path) {
		info.Problem = fmt.Sprintf("the record names %s, not its own directory", rec.Path)
		info.RecordMissing = true
		rec = recordFromGit(ctx, path)
	}
	info.Record = rec
	if info.RecordMissing {
		info.Assessment = unknown("no ink record for %s, so its baseline is unknown", path)
	} else {
		info.Assessment = Assess(ctx, rec)
	}
	if rec.RepoRoot == "" {
		return info
	}
	all, ok := regs[rec.RepoRoot]
	if !ok {
		all, _ = listRegistered(ctx, rec.RepoRoot)
		regs[rec.RepoRoot] = all
	}
	if reg, found := findRegistered(all, path); found {
		info.Locked = reg.locked
		info.LockReason = reg.lockReason
		info.LockPID = lockPID(reg.lockReason)
		info.LockPIDAlive = info.LockPID > 0 && pidAlive(info.LockPID)
	}
	if !dirExists(path) {
		info.Problem = joinProblem(info.Problem, "the worktree directory is missing")
		return info
	}
	if tip, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch+"^{commit}"); err == nil {
		info.Head = strings.TrimSpace(tip)
	}
	if info.Head != "" && rec.Baseline != "" {
		if n, err := read(ctx, rec.RepoRoot, "rev-list", "--count", rec.Baseline+".."+info.Head); err == nil {
			info.Commits, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	if info.Head != "" {
		if out, err := read(ctx, rec.RepoRoot, "rev-list", "--left-right", "--count", info.Head+"...HEAD"); err == nil {
			f := strings.Fields(out)
			if len(f) == 2 {
				info.Ahead, _ = strconv.Atoi(f[0])
				info.Behind, _ = strconv.Atoi(f[1])
			}
		}
	}
	if st, err := uncommitted(ctx, path); err == nil {
		info.Dirty = len(st) > 0
	} else {
		info.Problem = joinProblem(info.Problem, err.Error())
	}
	return info
}

// recordFromGit rebuilds what it can of a record from the worktree itself.
func recordFromGit(ctx context.Context, path string) Record {
	rec := Record{Path: path, Cwd: path}
	if common, err := readIn(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil {
		if root, err := mainRoot(ctx, path, strings.TrimSpace(common)); err == nil {
			rec.RepoRoot = root
		}
	}
	if head, err := readIn(ctx, path, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		rec.Branch = strings.TrimSpace(head)
	}
	return rec
}

// uncommitted lists `git status --porcelain` lines of the worktree at path
// (all untracked files shown).
func uncommitted(ctx context.Context, path string) ([]string, error) {
	out, err := gitCall{dir: path, read: true, ceiling: parentDir(path),
		config: []string{"status.showUntrackedFiles=all"},
		args:   []string{"status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none"}}.exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %w", path, err)
	}
	return lines(out), nil
}

// lockPID reads the pid from ink's lock reason "ink <id> pid <pid>".
func lockPID(reason string) int {
	f := strings.Fields(reason)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "pid" {
			if n, err := strconv.Atoi(f[i+1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// pidAlive reports whether a process with pid exists on this host.
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func joinProblem(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
