package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Policy is what one sandboxed command may write. Everything else it may
// only read (and execute).
type Policy struct {
	// Mode is ReadOnly or WorkspaceWrite.
	Mode Mode
	// TempDir is the command's private temporary directory (point its
	// TMPDIR there): writable in every confined mode. Required.
	TempDir string
	// Root is the agent's root (its worktree, for a worktree child):
	// writable under WorkspaceWrite.
	Root string
	// Writable lists more directories writable under WorkspaceWrite (the
	// user's --writable and the profile's writable: list), as
	// CheckWritable returned them.
	Writable []string
	// Network lets the command reach the network. Without it, it may
	// create no socket but a Unix one, and (Landlock ABI 4 and newer) may
	// not connect or bind a TCP port.
	Network bool
	// ReadOnly are paths mounted read-only for the command, over anything
	// writable (a checkout's git state: Checkout.Protect); they need
	// Namespaces.
	ReadOnly []string
	// Namespaces is how the command gets the private mount namespace
	// ReadOnly needs (ProbeNamespaces); unused without ReadOnly.
	Namespaces Namespaces
}

// WritableDirs returns the directories p lets a command write, without
// duplicates: TempDir, then under WorkspaceWrite Root, the user's cache
// directory and Writable. The cache directory (os.UserCacheDir) is created
// (0700) when missing, because compilers and package managers write there
// and could not create it themselves; it is left out when it cannot be
// found or made. It fails on a policy that is not complete.
func (p Policy) WritableDirs() ([]string, error) {
	if !p.Mode.Confined() {
		return nil, fmt.Errorf("sandbox policy: mode %q confines nothing; run the command without the sandbox", p.Mode)
	}
	if p.TempDir == "" || !filepath.IsAbs(p.TempDir) {
		return nil, fmt.Errorf("sandbox policy: the private temp dir %q is not an absolute path", p.TempDir)
	}
	dirs := []string{p.TempDir}
	if p.Mode == WorkspaceWrite {
		if !filepath.IsAbs(p.Root) {
			return nil, fmt.Errorf("sandbox policy: the root %q is not an absolute path", p.Root)
		}
		dirs = append(dirs, p.Root)
		if cache, ok := cacheDir(); ok {
			dirs = append(dirs, cache)
		}
		for _, d := range p.Writable {
			if !filepath.IsAbs(d) {
				return nil, fmt.Errorf("sandbox policy: writable directory %q is not an absolute path", d)
			}
			dirs = append(dirs, d)
		}
	}
	out := dirs[:0]
	for _, d := range dirs {
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// cacheDir is the user's cache directory, created when missing.
func cacheDir() (string, bool) {
	dir, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(dir) {
		return "", false
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, true
}

// CheckWritable validates one extra writable directory as a user gives it
// (--writable DIR or a profile's writable: entry): it must be an absolute
// path to an existing directory. It returns the directory with symlinks
// resolved, since the sandbox grants the directory a symlink points to, so
// that is what the user should see; or an error saying what is wrong and
// how to fix it.
func CheckWritable(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("writable directory is empty; give the absolute path of a directory")
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("writable directory %q is not an absolute path; give it in full, e.g. %s", dir, filepath.Join("/home/me", dir))
	}
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("writable directory %s does not exist; create it first or leave it out", dir)
	}
	if err != nil {
		return "", fmt.Errorf("writable directory %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("writable directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("writable directory %s is not a directory; give a directory (its whole tree becomes writable)", dir)
	}
	return real, nil
}
