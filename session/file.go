package session

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/inkdev/ink/durable"
)

// ErrNotRegular marks a transcript path that is a symlink, a directory or
// another non-regular file. ink never follows a symlink to a transcript.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens path with flag after checking, without following
// symlinks, that it is a regular file. The caller closes the file.
func openRegular(path string, flag int) (*os.File, os.FileInfo, error) {
	f, fi, err := openForWrite(durable.OS, path, flag)
	if err != nil {
		return nil, nil, err
	}
	return f.(*os.File), fi, nil // durable.OS opens *os.File
}

// checkRegular explains why a file described by fi is not a transcript.
func checkRegular(path string, fi os.FileInfo) error {
	switch m := fi.Mode(); {
	case m&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink; ink does not follow symlinks to transcripts (use the real file): %w", path, ErrNotRegular)
	case m.IsDir():
		return fmt.Errorf("%s is a directory, not a transcript file: %w", path, ErrNotRegular)
	case !m.IsRegular():
		return fmt.Errorf("%s is not a regular file (mode %s): %w", path, m.Type(), ErrNotRegular)
	}
	return nil
}

// openForWrite opens path through fsys with flag after checking, without
// following symlinks, that it is a regular file (and still the one checked
// once open). The caller closes the file.
func openForWrite(fsys durable.FS, path string, flag int) (durable.File, os.FileInfo, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRegular(path, li); err != nil {
		return nil, nil, err
	}
	f, err := fsys.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("%s is a symlink; ink does not follow symlinks to transcripts (use the real file): %w", path, ErrNotRegular)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(li, fi) {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while it was being opened; try again: %w", path, ErrNotRegular)
	}
	return f, fi, nil
}

// syncDir flushes the directory entries of dir: a file created, or a
// directory made, in it.
func syncDir(fsys durable.FS, dir string) error {
	if observeSync != nil {
		observeSync(dir)
	}
	return fsys.SyncDir(dir)
}

// fsync flushes f's data and metadata to disk; name is the transcript's
// path. Every sync of the package goes through it or syncDir, so that tests
// can count the syncs each durable point costs.
func fsync(f durable.File, name string) error {
	if observeSync != nil {
		observeSync(name)
	}
	return f.Sync()
}

// observeSync, when set, is told the name of every file or directory the
// package syncs. Only tests set it, before any test runs.
var observeSync func(name string)
