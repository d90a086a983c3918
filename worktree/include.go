package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// includeFile is the name of the file, at the top of the main checkout,
// that lists gitignored paths to copy into every new worktree.
const includeFile = ".worktreeinclude"

// planIncludes reads root/.worktreeinclude, a list of patterns in
// gitignore syntax (globs, "**", a trailing "/" for directories, "!" to
// take back what an earlier line matched, # comments), and returns the
// relative paths of the untracked files and symlinks it matches that git
// ignores in the main checkout. git does the matching (ls-files --others
// --ignored --exclude-from), so the file means what it would mean to git.
// Tracked files are left out because the worktree already has them at the
// baseline, and untracked files that are not ignored are left out because
// copying them would show up as the child's work. A line that is an
// absolute path, climbs out with "..", or names .git is an error naming the
// line; a matched symlink that leads outside the repository is an error
// naming it.
func planIncludes(ctx context.Context, root string) ([]string, error) {
	path := filepath.Join(root, includeFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", includeFile, err)
	}
	if err := checkIncludeLines(data); err != nil {
		return nil, err
	}
	rootReal, err := realpath(root)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	c := gitCall{dir: rootReal, read: true, args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + path}}
	out, err := c.exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the files %s names: %w", includeFile, err)
	}
	var candidates []string
	for _, rel := range strings.Split(out, "\x00") {
		if rel == "" {
			continue
		}
		rel = filepath.FromSlash(rel)
		ok, err := includable(rootReal, rel)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", includeFile, err)
		}
		if ok {
			candidates = append(candidates, rel)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	return ignoredOnly(ctx, rootReal, candidates)
}

// checkIncludeLines refuses a line of .worktreeinclude that could only be
// meant to reach outside the repository or into git's own directory: an
// absolute path, a path with "..", a path under .git.
func checkIncludeLines(data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		entry := strings.TrimSpace(sc.Text())
		if entry == "" || strings.HasPrefix(entry, "#") {
			continue
		}
		where := fmt.Sprintf("%s line %d (%q)", includeFile, n, entry)
		pattern := strings.TrimPrefix(entry, "!")
		if filepath.IsAbs(pattern) {
			return fmt.Errorf("%s is an absolute path; list only paths inside the repository, relative to its top", where)
		}
		clean := filepath.Clean(pattern)
		if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s leads outside the repository; list only paths inside it", where)
		}
		if clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
			return fmt.Errorf("%s names git's own directory; remove that line", where)
		}
	}
	return nil
}

// includable reports whether rel, a path git listed under rootReal, is a
// file or symlink to copy (a directory, such as a nested repository git
// does not enter, is not); a symlink that resolves outside rootReal is an
// error.
func includable(rootReal, rel string) (bool, error) {
	p := filepath.Join(rootReal, rel)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // gone since git listed it
	}
	if err != nil {
		return false, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return false, fmt.Errorf("symlink %s cannot be resolved: %w", rel, err)
		}
		if !isInside(target, rootReal) {
			return false, fmt.Errorf("symlink %s leads outside the repository (to %s); refusing to copy it", rel, target)
		}
		return true, nil
	case fi.Mode().IsRegular():
		return true, nil
	}
	return false, nil
}

// ignoredOnly keeps the paths that git ignores in the checkout at root.
func ignoredOnly(ctx context.Context, root string, rels []string) ([]string, error) {
	var in bytes.Buffer
	for _, r := range rels {
		in.WriteString(filepath.ToSlash(r))
		in.WriteByte(0)
	}
	c := gitCall{dir: root, read: true, stdin: &in, args: []string{"check-ignore", "-z", "--stdin"}}
	out, err := c.exec(ctx)
	if err != nil && exitCode(err) != 1 {
		return nil, fmt.Errorf("check which %s entries are ignored: %w", includeFile, err)
	}
	var kept []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			kept = append(kept, filepath.FromSlash(p))
		}
	}
	return kept, nil
}

// copyIncludes copies each planned path from the main checkout into the
// worktree, never overwriting and never writing through a symlink that
// leads out of the worktree. Symlinks are recreated with the same target.
func copyIncludes(root, wt string, rels []string) error {
	wtReal, err := realpath(wt)
	if err != nil {
		return fmt.Errorf("resolve worktree %s: %w", wt, err)
	}
	for _, rel := range rels {
		src := filepath.Join(root, rel)
		dst := filepath.Join(wtReal, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
		dir, err := realpath(filepath.Dir(dst))
		if err != nil || !isInside(dir, wtReal) {
			return fmt.Errorf("copy %s: its directory leads outside the worktree", rel)
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := copyEntry(src, filepath.Join(dir, filepath.Base(dst))); err != nil {
			return fmt.Errorf("copy %s into the worktree: %w", rel, err)
		}
	}
	return nil
}

// copyEntry copies one regular file (keeping its permission bits) or
// recreates one symlink.
func copyEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
