package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links one path may go through, as Linux
// does (ELOOP after 40).
const maxLinks = 40

// target is a path argument resolved inside the root.
type target struct {
	arg  string // the path as the model gave it
	rel  string // relative to Root, for os.Root calls ("." for Root itself)
	real string // absolute, symlink-free at resolve time; the lock and tracker key
	name string // how results show it (see Env.display)
}

// outsideRootError is the refusal for a path that resolves outside Root.
// resolved is empty when os.Root found the way out (a link swapped in
// after the path was resolved).
type outsideRootError struct {
	arg, resolved, root string
}

func (e *outsideRootError) Error() string {
	if e.resolved == "" {
		return fmt.Sprintf("path %q leads outside the root %s through a symbolic link; tools may only touch files under %s",
			e.arg, e.root, e.root)
	}
	return fmt.Sprintf("path %q resolves to %s, which is outside the root %s; tools may only touch files under %s",
		e.arg, e.resolved, e.root, e.root)
}

// resolve turns a path argument into a target inside Root. Relative paths
// start at Cwd. A path that names a place under Root is resolved through
// the open root: its symbolic links are read there, and a link that
// leads out (absolute or through "..") is refused, naming where it leads.
// A missing path resolves as far as it exists, so a write target is
// confined as strictly as an existing file. Only an absolute path that
// names a place outside Root is looked up by name, to learn whether a
// link outside (the root's own unresolved name, say) leads back in;
// nothing is opened there.
//
// The result is a check for clear messages, not the confinement: every
// later open goes through the os.Root again, which refuses a link that a
// concurrent process swaps in to lead out.
func (e *Env) resolve(arg string) (target, error) {
	abs := arg
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(e.Cwd, abs)
	}
	abs = filepath.Clean(abs)
	if !within(e.Root, abs) {
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return target{}, fmt.Errorf("path %q: %w", arg, unwrapPathError(err))
			}
			if real, err = resolveMissing(arg, abs); err != nil {
				return target{}, err
			}
		}
		if !within(e.Root, real) {
			return target{}, &outsideRootError{arg: arg, resolved: real, root: e.Root}
		}
		abs = real
	}
	rel, err := filepath.Rel(e.Root, abs)
	if err != nil {
		return target{}, fmt.Errorf("path %q: %w", arg, err)
	}
	t, err := e.resolveInRoot(arg, rel)
	if err != nil {
		return target{}, err
	}
	e.hook(hookResolved)
	return t, nil
}

// resolveInRoot resolves the symbolic links of rel (clean, relative to
// Root, not starting with "..") through the open root, the way the kernel
// would, and refuses one that leads out of Root.
func (e *Env) resolveInRoot(arg, rel string) (target, error) {
	parts := splitPath(rel)
	var done []string
	links := 0
	// A part is from a link's target while len(parts) (after taking it) is
	// at least fromLink; a missing one of those is a dangling link.
	fromLink := math.MaxInt
	missing := false
	for len(parts) > 0 {
		p := parts[0]
		parts = parts[1:]
		inLink := len(parts) >= fromLink
		switch p {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				out := filepath.Join(append([]string{filepath.Dir(e.Root)}, parts...)...)
				return target{}, &outsideRootError{arg: arg, resolved: out, root: e.Root}
			}
			done = done[:len(done)-1]
			continue
		}
		if missing {
			done = append(done, p)
			continue
		}
		cur := filepath.Join(slices.Concat(done, []string{p})...)
		fi, err := e.dir.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist) && inLink:
			return target{}, fmt.Errorf("path %q goes through a symbolic link to something that does not exist", arg)
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			done = append(done, p)
			continue
		case isEscape(err):
			return target{}, &outsideRootError{arg: arg, root: e.Root}
		case err != nil:
			return target{}, fmt.Errorf("path %q: %w", arg, unwrapPathError(err))
		case fi.Mode()&fs.ModeSymlink == 0:
			done = append(done, p)
			continue
		}
		if links++; links > maxLinks {
			return target{}, fmt.Errorf("path %q goes through more than %d symbolic links; one of them may point to itself", arg, maxLinks)
		}
		dest, err := e.dir.Readlink(cur)
		if err != nil {
			return target{}, fmt.Errorf("path %q: %w", arg, unwrapPathError(err))
		}
		if filepath.IsAbs(dest) {
			dest = filepath.Clean(dest)
			if !within(e.Root, dest) {
				out := filepath.Join(append([]string{dest}, parts...)...)
				return target{}, &outsideRootError{arg: arg, resolved: out, root: e.Root}
			}
			r, _ := filepath.Rel(e.Root, dest)
			done, dest = nil, r
		}
		fromLink = min(fromLink, len(parts))
		parts = slices.Concat(splitPath(dest), parts)
	}
	t := target{arg: arg, rel: filepath.Join(done...)}
	if t.rel == "" {
		t.rel = "."
	}
	t.real = filepath.Join(e.Root, t.rel)
	t.name = e.display(t.real)
	return t, nil
}

// splitPath splits a relative path into its elements.
func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// resolveMissing resolves, by name, the deepest existing ancestor of abs
// (which lies outside Root) and appends the missing rest.
func resolveMissing(arg, abs string) (string, error) {
	dir := abs
	var rest []string
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
	if len(rest) == 0 {
		return "", fmt.Errorf("path %q is a symbolic link to something that does not exist", arg)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("path %q: %s is a symbolic link to something that does not exist", arg, dir)
	}
	return filepath.Join(append([]string{realDir}, rest...)...), nil
}

// isEscape reports whether err is os.Root refusing a path that leads out
// of the root. os does not export that error value, so its text is
// compared; TestSwappedLinkIsRefused keeps the two in step.
func isEscape(err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return err.Error() == "path escapes from parent"
}

// problem describes a failed stat or open of t, with a hint when it does
// not exist and the root refusal when a link swapped in leads out.
func (e *Env) problem(t target, err error) string {
	switch {
	case isEscape(err):
		return (&outsideRootError{arg: t.arg, root: e.Root}).Error()
	case errors.Is(err, fs.ErrNotExist):
		return t.name + " does not exist; check the path with ls or find"
	}
	return fmt.Sprintf("%s: %v", t.name, unwrapPathError(err))
}

// errNotRegular is openRegular's refusal of something that is not a
// regular file (a directory, FIFO or device swapped in after a stat).
var errNotRegular = errors.New("not a regular file")

// openRegular opens the regular file at rel (relative to Root) for
// reading through the root. It never blocks on a FIFO and refuses
// anything but a regular file with errNotRegular. The caller closes the
// file.
func (e *Env) openRegular(rel string) (*os.File, fs.FileInfo, error) {
	return openRegular(e.dir, rel)
}

// openRegular opens the regular file name (relative to dir) for reading
// through dir, as Env.openRegular does.
func openRegular(dir *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, errNotRegular
	}
	return f, fi, nil
}

// unwrapPathError drops the *fs.PathError wrapper, whose path may differ
// from what the model passed, keeping the cause.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// display shows a real path the way the model should pass it back:
// relative to Cwd (with ".." when it lies above Cwd inside Root), or
// absolute for a path outside Root.
func (e *Env) display(real string) string {
	if within(e.Root, real) {
		rel, err := filepath.Rel(e.Cwd, real)
		if err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return real
}

// resolveForWrite is resolve for a tool that writes: it also refuses a
// path in the checkout's protected git state (Env.protectedPaths), which
// bash may not write either, so that a file tool cannot plant what the
// sandbox keeps out (a hook, core.fsmonitor in the config).
func (e *Env) resolveForWrite(arg string) (target, error) {
	t, err := e.resolve(arg)
	if err != nil {
		return t, err
	}
	for _, p := range e.protectedPaths {
		if within(p, t.real) {
			return target{}, fmt.Errorf("path %q lies in %s, the repository's git state, which agents may not write", arg, p)
		}
	}
	return t, nil
}
