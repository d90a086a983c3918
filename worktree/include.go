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

// planIncludes reads root/.worktreeinclude (one path or filepath.Match glob
// per line, relative to the repository top; blank lines and # comments
// ignored) and returns the slash-free relative paths of the files and
// symlinks it names that git ignores in the main checkout. Tracked files are
// left out because the worktree already has them at the baseline, and
// untracked files that are not ignored are left out because copying them
// would show up as the child's work. An entry that is absolute, climbs out
// with "..", names .git, or reaches outside the repository through a symlink
// is an error naming the line.
func planIncludes(ctx context.Context, root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, includeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", includeFile, err)
	}
	rootReal, err := realpath(root)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	seen := map[string]bool{}
	var candidates []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		entry := strings.TrimSpace(sc.Text())
		if entry == "" || strings.HasPrefix(entry, "#") {
			continue
		}
		where := fmt.Sprintf("%s line %d (%q)", includeFile, n, entry)
		if filepath.IsAbs(entry) {
			return nil, fmt.Errorf("%s is an absolute path; list only paths inside the repository", where)
		}
		clean := filepath.Clean(entry)
		if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s leads outside the repository; list only paths inside it", where)
		}
		if clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
			return nil, fmt.Errorf("%s names git's own directory; remove that line", where)
		}
		matches, err := filepath.Glob(filepath.Join(rootReal, clean))
		if err != nil {
			return nil, fmt.Errorf("%s is not a valid pattern: %w", where, err)
		}
		for _, m := range matches {
			files, err := includeWalk(rootReal, m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			for _, f := range files {
				if !seen[f] {
					seen[f] = true
					candidates = append(candidates, f)
				}
			}
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	return ignoredOnly(ctx, rootReal, candidates)
}

// includeWalk lists the files and symlinks at or below match, relative to
// rootReal, refusing any symlink that resolves outside rootReal.
func includeWalk(rootReal, match string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(match, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, rerr := filepath.Rel(rootReal, p)
		if rerr != nil || !isInside(p, rootReal) {
			return fmt.Errorf("%s is outside the repository", p)
		}
		if rel == ".git" {
			return fs.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("symlink %s cannot be resolved: %w", rel, err)
			}
			if !isInside(target, rootReal) {
				return fmt.Errorf("symlink %s leads outside the repository (to %s); refusing to copy it", rel, target)
			}
			out = append(out, rel)
		case d.Type().IsRegular():
			out = append(out, rel)
		}
		return nil
	})
	return out, err
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
