package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/inkdev/ink/durable"
)

// ErrBadLeaseFile marks a lease file that ink cannot use as a lock: a
// symlink, a directory, a special file or one it cannot open. The error text
// names the path and says how to fix it.
var ErrBadLeaseFile = errors.New("unusable lease file")

// badLeaseFile is the typed form of ErrBadLeaseFile.
type badLeaseFile struct {
	path    string
	problem string
	fix     string
}

func (e *badLeaseFile) Error() string {
	return fmt.Sprintf("lease file %s %s; %s", e.path, e.problem, e.fix)
}

func (e *badLeaseFile) Is(target error) bool { return target == ErrBadLeaseFile }

// fileKey identifies a lease file by device and inode, so that two paths
// naming one file (or one path whose file was replaced) are told apart.
type fileKey struct {
	dev uint64
	ino uint64
}

func keyOf(fi fs.FileInfo) (fileKey, uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, 1
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, uint64(st.Nlink)
}

// describeMode names a file type in words a user recognises.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsRegular():
		return "regular file"
	default:
		return "special file"
	}
}

// checkLeaseMode refuses every lease file that is not a regular file.
func checkLeaseMode(path string, m fs.FileMode) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		return &badLeaseFile{path, "is a symlink, and ink never follows links for leases",
			"remove the symlink (rm " + path + ") and retry"}
	case m.IsDir():
		return &badLeaseFile{path, "is a directory, not a regular file",
			"move the directory out of the way (it is not ink's) and retry"}
	default:
		return &badLeaseFile{path, "is a " + describeMode(m) + ", not a regular file",
			"remove it (rm " + path + ") and retry"}
	}
}

// openError turns an error from opening or locking the lease file into a
// user-facing one.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return checkLeaseMode(path, fs.ModeSymlink)
	case errors.Is(err, syscall.EISDIR):
		return checkLeaseMode(path, fs.ModeDir)
	case errors.Is(err, fs.ErrPermission):
		return &badLeaseFile{path, "cannot be opened (permission denied)",
			"give your user read access to it and its directory (chmod 600 " + path + ") and retry"}
	}
	return fmt.Errorf("open lease file %s: %w", path, err)
}

// statLeaseFile returns the identity of the lease file at path, creating it
// (0600) when missing. It never follows a symlink and refuses non-regular
// files.
func statLeaseFile(fsys durable.FS, path string) (fileKey, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, cerr := fsys.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
		if cerr == nil {
			f.Close()
		} else if !errors.Is(cerr, fs.ErrExist) {
			return fileKey{}, openError(path, cerr)
		}
		fi, err = os.Lstat(path)
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fileKey{}, openError(path, err)
		}
		return fileKey{}, fmt.Errorf("check lease file %s: %w", path, err)
	}
	if err := checkLeaseMode(path, fi.Mode()); err != nil {
		return fileKey{}, err
	}
	k, _ := keyOf(fi)
	return k, nil
}
