package tools

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// errChanged is replaceFile's refusal when the file is no longer what the
// caller read: its content differs, or it was removed or replaced by
// something that is not a regular file.
var errChanged = errors.New("the file changed since it was read")

// errAppeared is replaceFile's refusal when a file appeared at a path
// that was missing when the caller checked it.
var errAppeared = errors.New("a file appeared at the path since it was checked")

// maxTempBase bounds the part of a file's name its temporary file
// borrows, so the temporary name stays within NAME_MAX.
const maxTempBase = 200

// replaceFile puts data at rel (relative to Root) atomically, and only if
// the file is still what the caller saw: with expect set, the file's
// content hash must still be *expect immediately before the swap (else
// errChanged); with expect nil, nothing may exist at rel (else
// errAppeared).
//
// It works through a root opened on rel's directory, so the temporary
// file, the check and the swap all happen in that one directory even if
// a link is swapped in for it meanwhile: it writes a temporary file
// there, gives it mode perm, syncs it, re-checks the target, then renames
// the temporary file over it (a new file is hard-linked into place, which
// fails rather than replace a file that appeared), and syncs the
// directory. A reader sees the old content or the new, never a mix; a
// hard link to the old file keeps the old content. The temporary file is
// removed on every path. The caller holds the file's edit lock; writers
// that take no lock (an editor, a plain process) are caught by the
// re-check unless they write in the instant between it and the rename.
func (e *Env) replaceFile(rel string, data []byte, perm fs.FileMode, expect *[sha256.Size]byte) error {
	dir, err := e.dir.OpenRoot(filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer dir.Close()
	base := filepath.Base(rel)
	tmp, f, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("create temporary file: %w", unwrapPathError(err))
	}
	renamed := false
	defer func() {
		if !renamed {
			dir.Remove(tmp)
		}
	}()
	if err := fillTemp(f, data, perm, !e.testNoSync); err != nil {
		return err
	}
	switch {
	case e.testNoCAS:
	case expect != nil:
		if err := sameContent(dir, base, *expect); err != nil {
			return err
		}
	default:
		// A hard link never replaces: it fails if a file appeared. Where
		// the file system has no hard links, check and rename instead.
		err := dir.Link(tmp, base)
		if err == nil {
			e.syncDir(dir)
			return nil // the deferred Remove drops the temporary name
		}
		if errors.Is(err, fs.ErrExist) {
			return errAppeared
		}
		if _, err := dir.Lstat(base); err == nil {
			return errAppeared
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := dir.Rename(tmp, base); err != nil {
		return fmt.Errorf("rename into place: %w", unwrapPathError(err))
	}
	renamed = true
	e.syncDir(dir)
	return nil
}

// createTemp creates a new, empty temporary file beside base in dir,
// named ".<base>.ink-<random>", mode 0600. The caller removes it.
func createTemp(dir *os.Root, base string) (string, *os.File, error) {
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}
	for tries := 0; ; tries++ {
		var r [8]byte
		rand.Read(r[:])
		name := "." + base + ".ink-" + hex.EncodeToString(r[:])
		f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && tries < 10 {
			continue
		}
		return name, f, err
	}
}

// fillTemp writes data to f, sets its mode, optionally syncs it, and
// closes it.
func fillTemp(f *os.File, data []byte, perm fs.FileMode, sync bool) error {
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", unwrapPathError(err))
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("set mode: %w", unwrapPathError(err))
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync: %w", unwrapPathError(err))
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", unwrapPathError(err))
	}
	return nil
}

// sameContent returns errChanged unless base in dir is a regular file
// whose content hashes to want.
func sameContent(dir *os.Root, base string, want [sha256.Size]byte) error {
	f, err := dir.OpenFile(base, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isEscape(err) {
			return errChanged
		}
		return fmt.Errorf("re-read before replacing: %w", unwrapPathError(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return fmt.Errorf("re-read before replacing: %w", unwrapPathError(err))
	} else if !fi.Mode().IsRegular() {
		return errChanged
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("re-read before replacing: %w", unwrapPathError(err))
	}
	if !bytes.Equal(h.Sum(nil), want[:]) {
		return errChanged
	}
	return nil
}

// syncDir makes a rename in dir durable, unless the tests turned syncing
// off. A failure is ignored: the rename itself has happened.
func (e *Env) syncDir(dir *os.Root) {
	if e.testNoSync {
		return
	}
	if d, err := dir.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
}
