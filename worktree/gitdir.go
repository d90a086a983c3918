package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// makeGitDir gives the worktree of rec, as `git worktree add` left it (its
// .git link naming its metadata in the repository), a git directory of its
// own (see layout.go): config written by ink, alternates naming the
// repository's object store, the branch at the repository's tip with the
// branch's reflog, and the worktree's HEAD, index and reflog; then it
// points the worktree's .git link there. The directory is built under a
// temporary name and renamed into place, so <path>.git either is whole or
// does not exist; the link moves last. Callers hold the repository lock
// and no process works in the worktree.
func makeGitDir(ctx context.Context, rec Record) error {
	old, err := openLegacy(ctx, rec)
	if err != nil {
		return fmt.Errorf("set up the worktree's git directory: %w", err)
	}
	if err := buildGitDir(ctx, rec, old); err != nil {
		return fmt.Errorf("set up the worktree's git directory: %w", err)
	}
	return nil
}

func buildGitDir(ctx context.Context, rec Record, old *layout) error {
	g := rec.GitDir()
	tmp := g + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	config, err := gitDirConfig(ctx, rec.RepoRoot)
	if err != nil {
		return err
	}
	objects, err := repoObjects(ctx, rec.RepoRoot)
	if err != nil {
		return err
	}
	tip, err := read(ctx, rec.RepoRoot, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Branch+"^{commit}")
	if err != nil {
		return fmt.Errorf("branch %s: %w", rec.Branch, err)
	}
	branchLog := filepath.Join("logs", "refs", "heads", filepath.FromSlash(rec.Branch))
	private := filepath.Join("worktrees", rec.ChildID())
	dirs := []string{
		filepath.Join("objects", "info"), filepath.Join("objects", "pack"),
		filepath.Join("refs", "heads", filepath.FromSlash(filepath.Dir(rec.Branch))), filepath.Join("refs", "tags"),
		filepath.Dir(branchLog), "hooks", "info", filepath.Join(private, "logs"), "packed",
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return err
		}
	}
	// git rewrites packed-refs (when a ref is deleted: git branch -D, the
	// last git stash drop) through its lock file, which it creates beside
	// the file a symlink resolves to: the child may write packed/, never
	// the directory itself.
	if err := os.Symlink(filepath.Join("packed", "packed-refs"), filepath.Join(tmp, "packed-refs")); err != nil {
		return err
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/" + rec.Branch + "\n",
		"config": config,
		filepath.Join("objects", "info", "alternates"):                 objects + "\n",
		filepath.Join("refs", "heads", filepath.FromSlash(rec.Branch)): strings.TrimSpace(tip) + "\n",
		filepath.Join(private, "HEAD"):                                 "ref: refs/heads/" + rec.Branch + "\n",
		filepath.Join(private, "commondir"):                            "../..\n",
		filepath.Join(private, "gitdir"):                               filepath.Join(filepath.Clean(rec.Path), ".git") + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	// What git keeps as data (excludes, attributes, the reflogs and the
	// index) is copied; nothing that names a program (config, hooks).
	copies := [][2]string{
		{filepath.Join(old.commonDir, "info", "exclude"), filepath.Join("info", "exclude")},
		{filepath.Join(old.commonDir, "info", "attributes"), filepath.Join("info", "attributes")},
		{filepath.Join(old.commonDir, branchLog), branchLog},
		{filepath.Join(old.gitDir, "index"), filepath.Join(private, "index")},
		{filepath.Join(old.gitDir, "logs", "HEAD"), filepath.Join(private, "logs", "HEAD")},
	}
	for _, c := range copies {
		if err := copyRegular(c[0], filepath.Join(tmp, c[1])); err != nil {
			return err
		}
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, g); err != nil {
		return err
	}
	return writeLink(rec.Path, linkContent(rec.PrivateGitDir()))
}

// maxCopied bounds a file buildGitDir copies (an index, a reflog).
const maxCopied = 1 << 30

// copyRegular copies the regular file src to dst; a missing src is not an
// error, anything else than a regular file is.
func copyRegular(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxCopied {
		return fmt.Errorf("%s is not a regular file of at most %d bytes", src, maxCopied)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir flushes a directory's entries to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeLink replaces the worktree's .git file with content, atomically.
func writeLink(path, content string) error {
	tmp := filepath.Join(path, ".git.ink-new")
	_ = os.Remove(tmp)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(path, ".git")); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// removeGitDir deletes the worktree's own git directory and what a
// creation that died may have left of one.
func removeGitDir(path string) error {
	g := gitDirOf(path)
	_ = os.RemoveAll(g + ".new")
	return os.RemoveAll(g)
}

// configKeys are the settings of the user's repository that the
// worktree's git directory copies: data that changes how files are read
// and written and who commits, never a program. Each value must be one of
// the listed ones, or (for an empty list) a single line.
var configKeys = []struct {
	key    string
	values []string
}{
	{"core.repositoryformatversion", []string{"0", "1"}},
	{"extensions.objectformat", []string{"sha1", "sha256"}},
	{"core.filemode", []string{"true", "false"}},
	{"core.symlinks", []string{"true", "false"}},
	{"core.ignorecase", []string{"true", "false"}},
	{"core.precomposeunicode", []string{"true", "false"}},
	{"core.autocrlf", []string{"true", "false", "input"}},
	{"core.eol", []string{"lf", "crlf", "native"}},
	{"core.safecrlf", []string{"true", "false", "warn"}},
	{"user.name", nil},
	{"user.email", nil},
}

// gitDirConfig is the config of a worktree's git directory: a bare
// repository (its worktree comes from the environment or the link) that
// logs ref updates, never collects garbage by itself, plus configKeys as
// the repository at root has them.
func gitDirConfig(ctx context.Context, root string) (string, error) {
	var names []string
	for _, k := range configKeys {
		names = append(names, strings.ReplaceAll(k.key, ".", `\.`))
	}
	out, err := read(ctx, root, "config", "-z", "--get-regexp", "^("+strings.Join(names, "|")+")$")
	if err != nil && exitCode(err) != 1 {
		return "", fmt.Errorf("read the configuration of %s: %w", root, err)
	}
	got := map[string]string{}
	for _, entry := range strings.Split(out, "\x00") {
		k, v, _ := strings.Cut(entry, "\n")
		got[strings.ToLower(k)] = v
	}
	sections := map[string][]string{}
	var order []string
	add := func(key, value string) {
		section, name, _ := strings.Cut(key, ".")
		if _, ok := sections[section]; !ok {
			order = append(order, section)
		}
		sections[section] = append(sections[section], fmt.Sprintf("\t%s = %s\n", name, value))
	}
	add("core.bare", "true")
	add("core.logallrefupdates", "true")
	for _, k := range configKeys {
		v, ok := got[k.key]
		if !ok {
			continue
		}
		if k.values == nil {
			if v == "" || len(v) > 256 || strings.ContainsAny(v, "\n\x00") {
				continue
			}
			v = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		} else if v = strings.ToLower(v); !slices.Contains(k.values, v) {
			continue
		}
		add(k.key, v)
	}
	add("gc.auto", "0")
	add("maintenance.auto", "false")
	var b strings.Builder
	for _, s := range order {
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, l := range sections[s] {
			b.WriteString(l)
		}
	}
	return b.String(), nil
}
