// Package crashfs is a strict durable.FS for tests: it carries every call
// out on a real directory, so that every reader sees what a running system
// sees, and remembers what a crash of the machine would keep — each file's
// content as of its last Sync, each directory's entries as of its last
// SyncDir (like pebble's strict in-memory filesystem, but over the disk, so
// that flock, O_NOFOLLOW and every reader of ink work unchanged). Crash
// freezes that image and fails every later call, as a dead machine would;
// Restore rewrites the directory to the image, dropping every write that
// was never synced.
//
// Only paths under the root are tracked; others pass through to the real
// filesystem. What a process writes without going through the FS is not
// durable to it, and Restore removes it.
package crashfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/inkdev/ink/durable"
)

// ErrCrashed is returned by every call after Crash.
var ErrCrashed = errors.New("the machine crashed (crashfs)")

// Op is one durable point the FS saw: a file's Sync or a directory's
// SyncDir, after its effect was recorded.
type Op struct {
	Dir  bool   // a SyncDir
	Path string // the file's name when it was opened, or the directory
}

func (o Op) String() string {
	if o.Dir {
		return "syncdir " + o.Path
	}
	return "sync " + o.Path
}

// Mode says what a crash keeps of the directory operations (creations,
// renames, removals) that no SyncDir made durable. POSIX promises nothing
// for them, and real filesystems differ, so tests run in both modes.
type Mode int

const (
	// Strict keeps each directory's entries as of its last SyncDir:
	// every later creation, rename and removal is undone.
	Strict Mode = iota
	// Journaled keeps every directory's entries as they are at the
	// crash, as a journaling filesystem that committed its metadata but
	// not the data: a file created or renamed into place survives, empty
	// or with only what was synced of it (a record renamed over a synced
	// one without a sync of its own comes back empty).
	Journaled
)

// FS is the strict filesystem. It is safe for concurrent use.
type FS struct {
	root string
	// Mode is what a crash keeps of unsynced directory operations; set it
	// before use.
	Mode Mode
	// OnSync, when set before use, is called after every durable point
	// with no lock held; it may call Crash.
	OnSync func(Op)

	mu      sync.Mutex
	files   map[string]*node            // a tracked file's current path -> its inode
	dirs    map[string]map[string]entry // a directory's durable entries, by name
	crashed bool
	image   map[string][]byte // path -> content; nil for a directory
}

// node is one file (an inode): what a crash keeps of its content.
type node struct {
	synced []byte
}

// entry is one durable directory entry.
type entry struct {
	node *node // nil for a directory
}

// New tracks the directory root (absolute), taking everything under it now
// as durable.
func New(root string) (*FS, error) {
	f := &FS{root: filepath.Clean(root), files: map[string]*node{}, dirs: map[string]map[string]entry{}}
	err := filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			f.dirs[p] = map[string]entry{}
		} else if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n := &node{synced: data}
			f.files[p] = n
			f.dirs[filepath.Dir(p)][d.Name()] = entry{node: n}
		}
		if p != f.root {
			if d.IsDir() {
				f.dirs[filepath.Dir(p)][d.Name()] = entry{}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("crashfs: %w", err)
	}
	return f, nil
}

var _ durable.FS = (*FS)(nil)

func (f *FS) tracked(p string) bool {
	p = filepath.Clean(p)
	return p == f.root || strings.HasPrefix(p, f.root+string(filepath.Separator))
}

// OpenFile implements durable.FS. A file opened for writing is opened for
// reading too, so that Sync can read what it holds.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	name = filepath.Clean(name)
	if !f.tracked(name) {
		return durable.OS.OpenFile(name, flag, perm)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrCrashed}
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		flag = flag&^os.O_WRONLY | os.O_RDWR
	}
	osf, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	n := f.files[name]
	if n == nil {
		n = &node{} // created now, or written by someone else: nothing of it is durable
		f.files[name] = n
	}
	return &file{fs: f, f: osf, node: n, name: name}, nil
}

// Mkdir implements durable.FS.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	name = filepath.Clean(name)
	if !f.tracked(name) {
		return os.Mkdir(name, perm)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return &fs.PathError{Op: "mkdir", Path: name, Err: ErrCrashed}
	}
	if err := os.Mkdir(name, perm); err != nil {
		return err
	}
	f.dirs[name] = map[string]entry{}
	return nil
}

// Rename implements durable.FS.
func (f *FS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	if !f.tracked(oldpath) && !f.tracked(newpath) {
		return os.Rename(oldpath, newpath)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: ErrCrashed}
	}
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	moved := map[string]*node{}
	for p, n := range f.files {
		if p == oldpath || strings.HasPrefix(p, oldpath+"/") {
			moved[newpath+strings.TrimPrefix(p, oldpath)] = n
			delete(f.files, p)
		}
	}
	delete(f.files, newpath)
	for p, n := range moved {
		f.files[p] = n
	}
	return nil
}

// Link implements durable.FS: both names are one inode.
func (f *FS) Link(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	if !f.tracked(oldname) && !f.tracked(newname) {
		return os.Link(oldname, newname)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: ErrCrashed}
	}
	if err := os.Link(oldname, newname); err != nil {
		return err
	}
	n := f.files[oldname]
	if n == nil {
		n = &node{}
		f.files[oldname] = n
	}
	f.files[newname] = n
	return nil
}

// Remove implements durable.FS.
func (f *FS) Remove(name string) error {
	name = filepath.Clean(name)
	if !f.tracked(name) {
		return os.Remove(name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return &fs.PathError{Op: "remove", Path: name, Err: ErrCrashed}
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	delete(f.files, name)
	return nil
}

// SyncDir implements durable.FS: the directory's entries as they are now
// become its durable ones.
func (f *FS) SyncDir(name string) error {
	name = filepath.Clean(name)
	if !f.tracked(name) {
		return durable.OS.SyncDir(name)
	}
	f.mu.Lock()
	if f.crashed {
		f.mu.Unlock()
		return &fs.PathError{Op: "sync", Path: name, Err: ErrCrashed}
	}
	ents, err := os.ReadDir(name)
	if err != nil {
		f.mu.Unlock()
		return err
	}
	snap := map[string]entry{}
	for _, d := range ents {
		p := filepath.Join(name, d.Name())
		switch {
		case d.IsDir():
			snap[d.Name()] = entry{}
			if f.dirs[p] == nil {
				f.dirs[p] = map[string]entry{} // made by someone else: none of its entries is durable
			}
		case d.Type().IsRegular():
			n := f.files[p]
			if n == nil {
				n = &node{}
				f.files[p] = n
			}
			snap[d.Name()] = entry{node: n}
		}
	}
	f.dirs[name] = snap
	hook := f.OnSync
	f.mu.Unlock()
	if hook != nil {
		hook(Op{Dir: true, Path: name})
	}
	return nil
}

// Crash freezes what a crash of the machine would keep now; every later
// call fails with ErrCrashed. It is safe to call more than once: the first
// call decides.
func (f *FS) Crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return
	}
	f.crashed = true
	f.image = map[string][]byte{}
	if f.Mode == Journaled {
		_ = filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil || p == f.root:
			case d.IsDir():
				f.image[p] = nil
			case d.Type().IsRegular():
				data := []byte{}
				if n := f.files[p]; n != nil {
					data = append(data, n.synced...)
				}
				f.image[p] = data
			}
			return nil
		})
		return
	}
	var add func(dir string)
	add = func(dir string) {
		for name, e := range f.dirs[dir] {
			p := filepath.Join(dir, name)
			if e.node == nil {
				f.image[p] = nil
				add(p)
			} else {
				f.image[p] = append([]byte{}, e.node.synced...)
			}
		}
	}
	add(f.root)
}

// Crashed reports whether Crash was called.
func (f *FS) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Restore rewrites the directory to what the crash kept: everything else
// under the root is removed, and every kept file is written anew (a new
// inode, so that no lock or descriptor from before the crash reaches it).
// It crashes the FS first if Crash was not called. Call it once whatever
// ran on the FS has stopped.
func (f *FS) Restore() error {
	f.Crash()
	f.mu.Lock()
	defer f.mu.Unlock()
	ents, err := os.ReadDir(f.root)
	if err != nil {
		return err
	}
	for _, d := range ents {
		if err := os.RemoveAll(filepath.Join(f.root, d.Name())); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(f.image))
	for p := range f.image {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a directory before what it holds
	for _, p := range paths {
		data := f.image[p]
		if data == nil { // a directory
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// file is an open file of the FS.
type file struct {
	fs   *FS
	f    *os.File
	node *node
	name string
}

func (h *file) check(op string) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.fs.crashed {
		return &fs.PathError{Op: op, Path: h.name, Err: ErrCrashed}
	}
	return nil
}

func (h *file) Write(b []byte) (int, error) {
	if err := h.check("write"); err != nil {
		return 0, err
	}
	return h.f.Write(b)
}

func (h *file) WriteAt(b []byte, off int64) (int, error) {
	if err := h.check("write"); err != nil {
		return 0, err
	}
	return h.f.WriteAt(b, off)
}

func (h *file) Truncate(size int64) error {
	if err := h.check("truncate"); err != nil {
		return err
	}
	return h.f.Truncate(size)
}

func (h *file) ReadAt(b []byte, off int64) (int, error) { return h.f.ReadAt(b, off) }
func (h *file) Stat() (fs.FileInfo, error)              { return h.f.Stat() }
func (h *file) Name() string                            { return h.name }
func (h *file) Close() error                            { return h.f.Close() }

// Sync records the file's content as durable.
func (h *file) Sync() error {
	h.fs.mu.Lock()
	if h.fs.crashed {
		h.fs.mu.Unlock()
		return &fs.PathError{Op: "sync", Path: h.name, Err: ErrCrashed}
	}
	fi, err := h.f.Stat()
	if err != nil {
		h.fs.mu.Unlock()
		return err
	}
	data := make([]byte, fi.Size())
	if _, err := h.f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		h.fs.mu.Unlock()
		return err
	}
	h.node.synced = data
	hook := h.fs.OnSync
	h.fs.mu.Unlock()
	if hook != nil {
		hook(Op{Path: h.name})
	}
	return nil
}
