package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/inkdev/ink/durable"
)

// Checkout is the git state of a checkout the user works in (not a
// worktree ink made for a child): where its .git is and which git
// directories it leads to.
type Checkout struct {
	// DotGit is the checkout's .git entry: a directory, or the file of a
	// linked worktree or a submodule.
	DotGit string
	// GitDir is the git directory: DotGit itself, or where the .git file
	// points (symlinks resolved).
	GitDir string
	// CommonDir is the repository's common directory (objects, refs,
	// config, hooks): GitDir, unless GitDir names another one in its
	// commondir file, as a linked worktree's does.
	CommonDir string
}

// FindCheckout finds the git state of the checkout that holds dir: the
// nearest .git at dir or above it, as git finds it. false when there is
// none, or when a .git file does not lead to a git directory.
func FindCheckout(dir string) (Checkout, bool) {
	start, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return Checkout{}, false
	}
	for d := start; ; {
		dotGit := filepath.Join(d, ".git")
		if fi, err := os.Lstat(dotGit); err == nil {
			return checkoutAt(dotGit, fi)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Checkout{}, false
		}
		d = parent
	}
}

// checkoutAt reads one .git entry.
func checkoutAt(dotGit string, fi fs.FileInfo) (Checkout, bool) {
	c := Checkout{DotGit: dotGit}
	switch {
	case fi.IsDir():
		c.GitDir = dotGit
	case fi.Mode().IsRegular():
		gitdir, ok := readPointer(dotGit, "gitdir: ", filepath.Dir(dotGit))
		if !ok {
			return Checkout{}, false
		}
		c.GitDir = gitdir
	case fi.Mode()&fs.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(dotGit)
		if err != nil {
			return Checkout{}, false
		}
		if rfi, err := os.Stat(real); err != nil || !rfi.IsDir() {
			return Checkout{}, false
		}
		c.GitDir = real
	default:
		return Checkout{}, false
	}
	if fi, err := os.Stat(c.GitDir); err != nil || !fi.IsDir() {
		return Checkout{}, false
	}
	c.CommonDir = c.GitDir
	if common, ok := readPointer(filepath.Join(c.GitDir, "commondir"), "", c.GitDir); ok {
		if fi, err := os.Stat(common); err == nil && fi.IsDir() {
			c.CommonDir = common
		}
	}
	return c, true
}

// GitDirs returns the git directories of c without duplicates: GitDir,
// and CommonDir when it is another one.
func (c Checkout) GitDirs() []string {
	if c.GitDir == "" {
		return nil
	}
	if c.CommonDir == c.GitDir || c.CommonDir == "" {
		return []string{c.GitDir}
	}
	return []string{c.GitDir, c.CommonDir}
}

// Protection is what keeps bash from changing a checkout's git state: the
// paths mounted read-only for each command, and (with git writes allowed)
// the git directories it may write.
type Protection struct {
	// ReadOnly are mounted read-only, over whatever Landlock allows.
	ReadOnly []string
	// Writable are added to what Landlock lets the command write.
	Writable []string
}

// Protect says how bash is kept off c's git state. By default the git
// directories are read-only whole, and so is a .git file (which would
// otherwise be pointed at a git directory a command made). With
// allowWrites (--allow-git-writes) the git directories become writable —
// objects, refs, the index, HEAD, so git commit works — except what makes
// git run programs or read configuration: the common directory's config
// and hooks, each git directory's config.worktree and commondir (which
// names the directory git takes config, hooks and refs from: one written
// by bash would name a git directory of its own), and the git directories
// of submodules (modules/), which hold their own config and hooks. A mount
// needs something to cover, so what is missing is created: an empty hooks
// directory, an empty config.worktree (git reads it only when the config
// enables it) and a commondir that names its own directory, which is what
// git does without one.
func (c Checkout) Protect(allowWrites bool) (Protection, error) {
	var p Protection
	add := func(list *[]string, path string) {
		if !slices.Contains(*list, path) {
			*list = append(*list, path)
		}
	}
	if c.DotGit != c.GitDir {
		add(&p.ReadOnly, c.DotGit)
	}
	if !allowWrites {
		dirs := c.GitDirs()
		if len(dirs) == 2 && within(c.CommonDir, c.GitDir) {
			dirs = dirs[1:] // a linked worktree's git dir lies in the common dir
		}
		for _, d := range dirs {
			add(&p.ReadOnly, d)
		}
		return p, nil
	}
	for _, d := range c.GitDirs() {
		add(&p.Writable, d)
	}
	hooks := filepath.Join(c.CommonDir, "hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return Protection{}, fmt.Errorf("create %s to keep it read-only: %w", hooks, err)
	}
	covered := []string{filepath.Join(c.CommonDir, "config"), hooks}
	for _, d := range c.GitDirs() {
		for _, f := range [][2]string{{"commondir", ".\n"}, {"config.worktree", ""}} {
			path := filepath.Join(d, f[0])
			if err := createMissing(path, f[1]); err != nil {
				return Protection{}, fmt.Errorf("create %s to keep it read-only: %w", path, err)
			}
			covered = append(covered, path)
		}
	}
	for _, path := range append(covered, filepath.Join(c.CommonDir, "modules")) {
		if _, err := os.Lstat(path); err == nil {
			add(&p.ReadOnly, path)
		}
	}
	return p, nil
}

// createMissing creates the file path holding content unless something
// is there already. The file is whole from its first instant: an empty
// commondir, which a process killed between creating and writing it
// would leave, would break git in the user's repository.
func createMissing(path, content string) error {
	f, err := durable.CreateExclusive(durable.OS, path, []byte(content), 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// readPointer reads a small regular file holding prefix and a path; a
// relative path is taken from base. It returns the path with symlinks
// resolved.
func readPointer(file, prefix, base string) (string, bool) {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	s, ok := strings.CutPrefix(strings.TrimSpace(string(line)), prefix)
	if !ok || s == "" {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(base, s)
	}
	real, err := filepath.EvalSymlinks(s)
	if err != nil {
		return "", false
	}
	return real, true
}
