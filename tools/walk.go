package tools

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// skippedDirs are directories that grep and find never descend into
// (unless the search starts inside one): version-control metadata and
// installed dependencies.
var skippedDirs = map[string]bool{
	".git":         true,
	".hg":          true,
	".svn":         true,
	"node_modules": true,
}

// walkEntry is one entry a walk visits.
type walkEntry struct {
	at  string      // slash-separated path relative to Root
	rel string      // slash-separated path relative to the walk's start
	d   fs.DirEntry // the entry, as its directory listed it (links not followed)
	dir *os.Root    // the directory holding it, open for the visit only
}

// walkTree calls visit for every entry below the directory start (not
// start itself), in lexical order. The walk goes through the open root,
// one directory at a time: each directory is opened (as an os.Root) from
// its parent's handle by name, its entries are listed and visited, and a
// file is opened from that handle, so a walk never resolves a path from
// the top again and cannot be steered out of the root by a link swapped in
// above it (like an os.Root, it keeps reading a directory that is moved
// while the walk is inside it).
// Symbolic links are reported but never followed; a directory that cannot
// be opened (unreadable, or swapped for a link) is skipped. It checks ctx
// before every entry and stops with ctx's cause when ctx is done, or with
// the error visit returns (fs.SkipDir skips a directory, fs.SkipAll ends
// the walk). An error opening start itself is returned.
func (e *Env) walkTree(ctx context.Context, start target, visit func(w walkEntry) error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	dir, err := e.dir.OpenRoot(start.rel)
	if err != nil {
		return err
	}
	defer dir.Close()
	entries, err := readDirSorted(dir)
	if err != nil {
		return err
	}
	at := filepath.ToSlash(start.rel)
	err = walkEntries(ctx, dir, entries, at, "", visit)
	if err == fs.SkipAll {
		return nil
	}
	return err
}

// walkEntries visits the entries of dir (listed at at, rel) and walks
// below its subdirectories.
func walkEntries(ctx context.Context, dir *os.Root, entries []fs.DirEntry, at, rel string, visit func(w walkEntry) error) error {
	for _, d := range entries {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		name := d.Name()
		if d.IsDir() && skippedDirs[name] {
			continue
		}
		w := walkEntry{at: path.Join(at, name), rel: name, d: d, dir: dir}
		if rel != "" {
			w.rel = rel + "/" + name
		}
		err := visit(w)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			continue
		}
		if err := walkSubdir(ctx, dir, w, visit); err != nil {
			return err
		}
	}
	return nil
}

// walkSubdir walks below the directory entry w of dir, skipping it when
// it cannot be opened or listed.
func walkSubdir(ctx context.Context, dir *os.Root, w walkEntry, visit func(w walkEntry) error) error {
	sub, err := dir.OpenRoot(w.d.Name())
	if err != nil {
		return nil
	}
	defer sub.Close()
	entries, err := readDirSorted(sub)
	if err != nil {
		return nil
	}
	return walkEntries(ctx, sub, entries, w.at, w.rel, visit)
}

// readDirSorted lists the directory dir by name.
func readDirSorted(dir *os.Root) ([]fs.DirEntry, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// realOf is the absolute path of at, a slash-separated path relative to
// Root.
func (e *Env) realOf(at string) string {
	return filepath.Join(e.Root, filepath.FromSlash(path.Clean(at)))
}
