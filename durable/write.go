package durable

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MkdirAll creates dir and any missing parents with mode perm, and syncs
// the parent of every directory it created, deepest last, so that a crash
// cannot lose a directory ink goes on to fill. Directories that already
// exist cost nothing. A symlink on the way is followed as os.MkdirAll
// follows it.
func MkdirAll(fsys FS, dir string, perm fs.FileMode) error {
	sync, err := MkdirAllLater(fsys, dir, perm)
	if err != nil {
		return err
	}
	return sync()
}

// MkdirAllLater is MkdirAll whose syncs are left to the returned function,
// for a caller that makes them durable beside other work (a worker syncs
// them in the background with its new transcript). sync does nothing when
// nothing was created; call it before anything in dir has to survive a
// crash.
func MkdirAllLater(fsys FS, dir string, perm fs.FileMode) (sync func() error, err error) {
	fsys = Or(fsys)
	dir = filepath.Clean(dir)
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return nil, &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := fsys.Mkdir(p, perm); err != nil {
			if errors.Is(err, fs.ErrExist) {
				// Made by someone else at the same time; they sync it.
				continue
			}
			return nil, err
		}
		made = append(made, p)
	}
	return func() error {
		for _, p := range made {
			if err := fsys.SyncDir(filepath.Dir(p)); err != nil {
				return fmt.Errorf("sync %s: %w", filepath.Dir(p), err)
			}
		}
		return nil
	}, nil
}

// TempName is the name of a temp file beside path: hidden, marked
// ".tmp-", unique. The writer that owns path removes stale ones.
func TempName(path string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(b[:]))
}

// CreateExclusive creates the file path, which must not exist, holding data
// from its first instant: data is written to a temp file beside it, which
// is then linked at path (failing, like O_EXCL, when path exists) and
// unlinked, so that a process killed at any instant leaves path absent or
// whole, never empty. Nothing is synced: the caller syncs the returned
// file, open for appending, and then the directory, to make it survive a
// crash of the machine. path's directory must exist.
func CreateExclusive(fsys FS, path string, data []byte, perm fs.FileMode) (File, error) {
	fsys = Or(fsys)
	tmp := TempName(path)
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, err
	}
	n, err := f.Write(data)
	if err == nil && n != len(data) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = fsys.Link(tmp, path)
	}
	_ = fsys.Remove(tmp)
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile publishes data at path complete or not at all: it writes a
// temp file beside path (mode perm), syncs it, renames it over path and
// syncs the directory. A crash at any instant leaves the old file, or none,
// or the new one whole; never an empty or partial one. path's directory
// must exist.
//
// ink publishes its records through their own writers (lease records,
// worktree records); WriteFile is the protocol in its plainest form, kept
// for the crash tests of durable/crashfs, which check it at every instant.
func WriteFile(fsys FS, path string, data []byte, perm fs.FileMode) error {
	fsys = Or(fsys)
	tmp := TempName(path)
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}
