package tools

import (
	"context"
	"io/fs"
	"path/filepath"
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

// walkTree calls visit for every entry below the real directory start (not
// start itself), in lexical order, with rel the slash-separated path
// relative to start. Symbolic links are reported but never followed, so a
// walk cannot leave the root through one; unreadable directories are
// skipped. It stops with ctx's cause when ctx is done, or with the error
// visit returns (fs.SkipDir skips a directory, fs.SkipAll ends the walk).
func walkTree(ctx context.Context, start string, visit func(real, rel string, d fs.DirEntry) error) error {
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			if p == start {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == start {
			return nil
		}
		if d.IsDir() && skippedDirs[d.Name()] {
			return fs.SkipDir
		}
		rel, err := filepath.Rel(start, p)
		if err != nil {
			return nil
		}
		return visit(p, filepath.ToSlash(rel), d)
	})
	if err == fs.SkipAll {
		return nil
	}
	return err
}
