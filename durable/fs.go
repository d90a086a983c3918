package durable

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// FS is the part of a filesystem that decides what survives a crash: the
// calls that create, change, rename and remove files and directories, and
// the syncs that make them durable. Paths are absolute. Implementations
// are safe for concurrent use.
type FS interface {
	// OpenFile opens name as os.OpenFile does.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates one directory as os.Mkdir does.
	Mkdir(name string, perm fs.FileMode) error
	// Rename renames as os.Rename does.
	Rename(oldpath, newpath string) error
	// Link makes newname a second name of oldname as os.Link does;
	// it fails when newname exists.
	Link(oldname, newname string) error
	// Remove removes a file or an empty directory as os.Remove does.
	Remove(name string) error
	// SyncDir makes the entries of the directory durable: what was
	// created, renamed into or removed from it.
	SyncDir(name string) error
}

// File is an open file of an FS. Sync makes its content durable; its name
// in its directory is durable only once that directory is synced.
type File interface {
	io.Writer
	io.WriterAt
	io.ReaderAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Name() string
}

// OS is the real filesystem.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

func (osFS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (osFS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldname, newname string) error        { return os.Link(oldname, newname) }
func (osFS) Remove(name string) error                  { return os.Remove(name) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some filesystems cannot sync a directory (EINVAL); their entries
	// are as durable as they get.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// Or returns fsys, or OS when fsys is nil: the zero value of a writer's
// options means the real filesystem.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}
