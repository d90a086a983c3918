package worktree

import (
	"github.com/inkdev/ink/durable"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Record is what ink remembers about a worktree it created: enough to
// assess it, validate it before a resume, and remove it safely. It is part
// of the child's launch record, and is kept in
// $INK_HOME/worktrees/<repo-slug>/<childId>.json beside the worktree for the
// `ink worktrees` commands.
type Record struct {
	// RepoRoot is the main checkout (Repo.Root).
	RepoRoot string `json:"repoRoot"`
	// Baseline is the commit the branch was created at.
	Baseline string `json:"baseline"`
	// Path is the worktree directory (symlinks resolved).
	Path string `json:"path"`
	// Branch is the short branch name, ink/<childId>.
	Branch string `json:"branch"`
	// CreationReflog is the branch's reflog ("%H %gs" lines, newest first)
	// right after creation.
	CreationReflog string `json:"creationReflog"`
	// Cwd is the child's working directory: Path plus the parent's prefix.
	Cwd string `json:"cwd"`
	// Origin is the task call the worktree was made for, when known.
	Origin *Origin `json:"origin,omitempty"`
}

// ChildID returns the child id the worktree was created for (the last
// element of its path).
func (r Record) ChildID() string { return filepath.Base(r.Path) }

// recordPath is the record file kept beside a worktree directory.
func recordPath(worktreePath string) string { return filepath.Clean(worktreePath) + ".json" }

// recordTempPath is the one temporary name a record is ever written under
// before it replaces the record: a fixed name per child, so that a crash
// can leave at most one, which the next Create or Prune in the repository
// deletes.
func recordTempPath(worktreePath string) string {
	dir, id := filepath.Split(filepath.Clean(worktreePath))
	return filepath.Join(dir, "."+id+".json.tmp")
}

// creationReflog is the reflog git writes for a branch made with
// `git worktree add -b <branch> <path> <head>`.
func creationReflog(head string) string {
	return head + " branch: Created from " + head
}

// encodeRecord renders rec as the record file's content.
func encodeRecord(rec Record) ([]byte, error) {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// createRecord writes rec's record file, which must not exist yet: whole
// from its first instant (written aside, then linked into place) and
// synced with its directory, so that neither a killed process nor a crash
// of the machine leaves an empty one. It is written before git is asked
// for anything, so a worktree ink made always has one.
func createRecord(rec Record) error {
	data, err := encodeRecord(rec)
	if err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	dst := recordPath(rec.Path)
	f, err := durable.CreateExclusive(durable.OS, dst, data, 0o600)
	if err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.OS.SyncDir(filepath.Dir(dst))
	}
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("write worktree record: %w", err)
	}
	return nil
}

// replaceRecord replaces rec's record file atomically (temporary file,
// sync, rename), so a reader sees the old record or the new one.
func replaceRecord(rec Record) error {
	data, err := encodeRecord(rec)
	if err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	tmp := recordTempPath(rec.Path)
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write worktree record: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, recordPath(rec.Path))
	}
	if err == nil {
		err = durable.OS.SyncDir(filepath.Dir(tmp))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write worktree record: %w", err)
	}
	return nil
}

// readRecord loads the record file of the worktree at path. An empty
// file (an earlier version of ink wrote records in place, and a crash of
// the machine could leave one cut at zero bytes) is read as no record: the
// error wraps os.ErrNotExist, so every caller treats it as a missing one.
func readRecord(path string) (Record, error) {
	data, err := os.ReadFile(recordPath(path))
	if err != nil {
		return Record{}, err
	}
	if len(data) == 0 {
		return Record{}, fmt.Errorf("worktree record %s is empty: %w", recordPath(path), os.ErrNotExist)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, fmt.Errorf("worktree record %s: %w", recordPath(path), err)
	}
	return rec, nil
}

// removeRecord deletes the record file of the worktree at path; a missing
// one is not an error.
func removeRecord(path string) error {
	if err := os.Remove(recordPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove worktree record: %w", err)
	}
	_ = os.Remove(recordTempPath(path))
	return nil
}

// isRecordTemp reports whether name (a file in a repository's directory
// under $INK_HOME/worktrees) is a temporary record file: the fixed
// ".<id>.json.tmp" of a replaced record, the ".<id>.json.tmp-<random>" a
// new record is written to before it is linked into place (left behind
// when its process is killed in between), or ".record-*" of earlier
// versions of ink.
func isRecordTemp(name string) bool {
	return strings.HasPrefix(name, ".record-") ||
		strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".json.tmp") || strings.Contains(name, ".json.tmp-"))
}

// loneEmptyRecord reports whether name, a file in the repository's
// directory dir under $INK_HOME/worktrees, is an empty record file with
// nothing else of its worktree beside it (no worktree directory, no git
// directory): what a process killed while an earlier version of ink
// created the record (it opened the file, then wrote it) leaves. ink
// writes a record whole from its first instant, so an empty one holds
// nothing: listings skip it, and Create and Prune delete it with the
// temporary record files.
// names holds the names of dir's entries (dirNames).
func loneEmptyRecord(dir string, names map[string]bool, name string) bool {
	id, ok := strings.CutSuffix(name, ".json")
	if !ok || strings.HasPrefix(name, ".") || checkChildID(id) != nil || names[id] || names[id+".git"] {
		return false
	}
	return emptyFile(filepath.Join(dir, name))
}

// dirNames is the set of the names of entries.
func dirNames(entries []os.DirEntry) map[string]bool {
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// emptyFile reports whether path is a regular file of zero bytes.
func emptyFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// removeTemps deletes the temporary record files and lone empty records
// (loneEmptyRecord) in dir that are at least minAge old (0: all of them;
// callers then hold the lock of the repository the directory belongs to,
// so no Create is writing one), and returns the paths it removed of each.
func removeTemps(dir string, minAge time.Duration) (temps, empty []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	names := dirNames(entries)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		temp := isRecordTemp(e.Name())
		if !temp && !loneEmptyRecord(dir, names, e.Name()) {
			continue
		}
		if minAge > 0 {
			fi, err := e.Info()
			if err != nil || time.Since(fi.ModTime()) < minAge {
				continue
			}
		}
		p := filepath.Join(dir, e.Name())
		if os.Remove(p) != nil {
			continue
		}
		if temp {
			temps = append(temps, p)
		} else {
			empty = append(empty, p)
		}
	}
	return temps, empty
}

// recordFromGit rebuilds the record of an ink worktree from the user's
// repository alone, for a worktree whose record file is missing or cannot
// be trusted, or that another INK_HOME made: the repository (root when
// known, else the one its .git link or its git directory names, accepted
// only when the worktree's directory is that repository's slug and the
// repository registers it), its branch as the repository registers it,
// and — when the branch's oldest reflog entry is the creation entry `git
// worktree add -b` writes — its baseline and creation reflog. It never
// runs git in the worktree. Fields it cannot establish stay empty, which
// Assess reports as Unknown.
func recordFromGit(ctx context.Context, path, root string) Record {
	rec := Record{Path: path, Cwd: path, RepoRoot: root}
	if rec.RepoRoot == "" {
		rec.RepoRoot = guessRoot(ctx, path)
	}
	if rec.RepoRoot == "" {
		return rec
	}
	rec.Branch = BranchPrefix + filepath.Base(path)
	if all, err := listRegistered(ctx, rec.RepoRoot); err == nil {
		if reg, ok := findRegistered(all, path); ok && reg.branch != "" {
			rec.Branch = strings.TrimPrefix(reg.branch, "refs/heads/")
		}
	}
	if rec.Branch != BranchPrefix+filepath.Base(path) {
		return rec
	}
	out, err := read(ctx, rec.RepoRoot, "reflog", "show", "--format=%H %gs", "refs/heads/"+rec.Branch)
	if err != nil {
		return rec
	}
	log := lines(out)
	if len(log) == 0 {
		return rec
	}
	oldest := log[len(log)-1]
	sha, msg, _ := strings.Cut(oldest, " ")
	if msg == "branch: Created from "+sha {
		rec.Baseline = sha
		rec.CreationReflog = oldest
	}
	return rec
}

// guessRoot finds the main checkout of the repository a worktree without a
// record belongs to, from what its .git link (as `git worktree add` wrote
// it) or its git directory's alternates (as ink wrote them) name; a
// candidate counts only when the worktree lies in that checkout's slug
// directory and the checkout registers it, so git runs only in a
// repository ink made the worktree for. "" when none does.
func guessRoot(ctx context.Context, path string) string {
	slug := filepath.Base(filepath.Dir(filepath.Clean(path)))
	var commons []string
	if link, err := readSmall(filepath.Join(path, ".git"), maxPointer); err == nil {
		if d, ok := strings.CutPrefix(strings.TrimSpace(link), "gitdir: "); ok && filepath.IsAbs(d) {
			commons = append(commons, filepath.Dir(filepath.Dir(d)))
		}
	}
	if alt, err := readSmall(filepath.Join(gitDirOf(path), "objects", "info", "alternates"), maxPointer); err == nil {
		if d := strings.TrimSpace(alt); filepath.IsAbs(d) {
			commons = append(commons, filepath.Dir(d))
		}
	}
	for _, c := range commons {
		root := filepath.Dir(filepath.Clean(c))
		if filepath.Base(c) != ".git" || RepoSlug(root) != slug || !dirExists(c) {
			continue
		}
		if all, err := listRegistered(ctx, root); err == nil {
			if _, ok := findRegistered(all, path); ok {
				return root
			}
		}
	}
	return ""
}

// RemoveEmptyRecord deletes the lone empty record of childID under
// $INK_HOME/worktrees (loneEmptyRecord), which no listing shows, and
// returns its path; "" when there is none. It is how `ink worktrees rm`
// answers for a child whose record was all that a killed creation left.
func RemoveEmptyRecord(inkHome, childID string) (string, error) {
	if err := checkChildID(childID); err != nil {
		return "", err
	}
	base := worktreesDir(homeReal(inkHome))
	slugs, err := os.ReadDir(base)
	if err != nil {
		return "", nil
	}
	for _, s := range slugs {
		if !s.IsDir() {
			continue
		}
		dir := filepath.Join(base, s.Name())
		entries, err := os.ReadDir(dir)
		if err != nil || !loneEmptyRecord(dir, dirNames(entries), childID+".json") {
			continue
		}
		p := filepath.Join(dir, childID+".json")
		if err := os.Remove(p); err != nil {
			return "", fmt.Errorf("remove the empty worktree record %s: %w", p, err)
		}
		_ = durable.OS.SyncDir(dir)
		return p, nil
	}
	return "", nil
}
