package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inkdev/ink/sandbox"
)

// Default limits used when the matching Env field is zero.
const (
	DefaultReadMaxLines   = 2000
	DefaultReadMaxBytes   = 50 << 10
	DefaultGrepMaxMatches = 200
	DefaultFindMaxResults = 1000
	DefaultLsMaxEntries   = 1000
	DefaultBashMaxOutput  = 50 << 10
	DefaultBashTimeout    = 120 * time.Second
	DefaultBashMaxTimeout = 600 * time.Second
	DefaultBashKillGrace  = time.Second
)

// Env is where an agent's built-in tools work: the directory tree they are
// confined to, where relative paths start, and the limits that keep their
// output small enough for a model. Builtins validates it once; a zero limit
// means its default.
type Env struct {
	// Root is the confinement root, an absolute directory (symlinks are
	// resolved once, by Builtins). read, grep, find, ls, edit and write
	// refuse any path that resolves outside it.
	Root string
	// Cwd is where relative paths resolve and where bash runs: an absolute
	// directory inside Root. Empty means Root.
	Cwd string
	// LockDir holds the cross-process per-file edit locks
	// (<sha256(realpath)>.lock), normally $INK_HOME/locks. It is created on
	// first use; its lock files are never deleted.
	LockDir string

	// ReadMaxLines is how many lines read returns when no limit is given.
	ReadMaxLines int
	// ReadMaxBytes caps the text one read call returns.
	ReadMaxBytes int
	// GrepMaxMatches caps the matching lines grep returns.
	GrepMaxMatches int
	// FindMaxResults caps the paths find returns.
	FindMaxResults int
	// LsMaxEntries caps the entries ls returns.
	LsMaxEntries int
	// BashMaxOutput caps the combined output bash returns (head and tail
	// are kept, the middle is dropped).
	BashMaxOutput int
	// BashTimeout is the timeout of a bash call that names none.
	BashTimeout time.Duration
	// BashMaxTimeout is the largest timeout a bash call may ask for.
	BashMaxTimeout time.Duration
	// BashKillGrace is how long a process group gets between SIGTERM and
	// SIGKILL when bash stops it.
	BashKillGrace time.Duration

	// Sandbox is how bash commands are confined (package sandbox); empty
	// means sandbox.WorkspaceWrite. Where the kernel cannot enforce it,
	// bash runs unconfined, unless SandboxExplicit is set: then Builtins
	// fails with a message that says why.
	Sandbox sandbox.Mode
	// SandboxExplicit says the user asked for Sandbox by name (a flag or
	// a profile field) rather than getting the default.
	SandboxExplicit bool
	// Writable lists more directories bash may write under
	// workspace-write: absolute paths of existing directories.
	Writable []string
	// SandboxExe is the ink binary that bash re-executes to apply the
	// sandbox (the worker's os.Executable()): an absolute path, needed
	// whenever bash runs confined; without it such a bash call fails.
	SandboxExe string

	// testNoLock and testBeforeWrite exist for the package's own tests: the
	// first turns the per-file lock off (to show that lost updates then
	// happen), the second widens the window between check and write.
	testNoLock      bool
	testBeforeWrite func()

	// sandbox is how bash really runs, settled by normalize.
	sandbox sandbox.Decision
	// gitDirs are the git state of a worktree Root, writable by bash
	// under workspace-write; found once, before any command runs.
	gitDirs []string
	// testLandlock, when set, stands in for sandbox.Check in normalize.
	testLandlock func() error
}

// normalize validates e, resolves Root and Cwd and fills default limits.
func (e Env) normalize() (Env, error) {
	if e.Root == "" {
		return e, errors.New("tools env: Root is empty; set it to the directory the agent may work in")
	}
	if !filepath.IsAbs(e.Root) {
		return e, fmt.Errorf("tools env: Root %q is not an absolute path", e.Root)
	}
	root, err := filepath.EvalSymlinks(e.Root)
	if err != nil {
		return e, fmt.Errorf("tools env: root: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return e, fmt.Errorf("tools env: root: %w", err)
	} else if !fi.IsDir() {
		return e, fmt.Errorf("tools env: Root %s is not a directory", e.Root)
	}
	e.Root = root
	if e.Cwd == "" {
		e.Cwd = root
	}
	if !filepath.IsAbs(e.Cwd) {
		return e, fmt.Errorf("tools env: Cwd %q is not an absolute path", e.Cwd)
	}
	cwd, err := filepath.EvalSymlinks(e.Cwd)
	if err != nil {
		return e, fmt.Errorf("tools env: cwd: %w", err)
	}
	if fi, err := os.Stat(cwd); err != nil {
		return e, fmt.Errorf("tools env: cwd: %w", err)
	} else if !fi.IsDir() {
		return e, fmt.Errorf("tools env: Cwd %s is not a directory", e.Cwd)
	}
	if !within(root, cwd) {
		return e, fmt.Errorf("tools env: Cwd %s is outside Root %s", cwd, root)
	}
	e.Cwd = cwd
	if e.LockDir == "" {
		return e, errors.New("tools env: LockDir is empty; set it to $INK_HOME/locks")
	}
	if !filepath.IsAbs(e.LockDir) {
		return e, fmt.Errorf("tools env: LockDir %q is not an absolute path", e.LockDir)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&e.ReadMaxLines, DefaultReadMaxLines)
	def(&e.ReadMaxBytes, DefaultReadMaxBytes)
	def(&e.GrepMaxMatches, DefaultGrepMaxMatches)
	def(&e.FindMaxResults, DefaultFindMaxResults)
	def(&e.LsMaxEntries, DefaultLsMaxEntries)
	def(&e.BashMaxOutput, DefaultBashMaxOutput)
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur(&e.BashTimeout, DefaultBashTimeout)
	defDur(&e.BashMaxTimeout, DefaultBashMaxTimeout)
	defDur(&e.BashKillGrace, DefaultBashKillGrace)
	if e.BashTimeout > e.BashMaxTimeout {
		e.BashTimeout = e.BashMaxTimeout
	}
	return e.normalizeSandbox()
}

// normalizeSandbox validates the sandbox fields and settles the mode bash
// runs under on this machine.
func (e Env) normalizeSandbox() (Env, error) {
	mode := e.Sandbox
	if mode == "" {
		mode = sandbox.WorkspaceWrite
	}
	check := sandbox.Check
	if e.testLandlock != nil {
		check = e.testLandlock
	}
	var available error
	if mode.Confined() {
		available = check()
	}
	d, err := sandbox.Decide(mode, e.SandboxExplicit, available)
	if err != nil {
		return e, fmt.Errorf("tools env: %w", err)
	}
	e.sandbox = d
	if e.SandboxExe != "" && !filepath.IsAbs(e.SandboxExe) {
		return e, fmt.Errorf("tools env: SandboxExe %q is not an absolute path", e.SandboxExe)
	}
	writable := make([]string, 0, len(e.Writable))
	for _, w := range e.Writable {
		real, err := sandbox.CheckWritable(w)
		if err != nil {
			return e, fmt.Errorf("tools env: %w", err)
		}
		writable = append(writable, real)
	}
	e.Writable = writable
	if d.Effective == sandbox.WorkspaceWrite {
		e.gitDirs = sandbox.WorktreeGitDirs(e.Root)
	}
	return e, nil
}

// within reports whether path p is root or lies below it. Both must be
// clean absolute paths.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// outsideRootError is the refusal for a path that resolves outside Root.
type outsideRootError struct {
	arg, resolved, root string
}

func (e *outsideRootError) Error() string {
	return fmt.Sprintf("path %q resolves to %s, which is outside the root %s; tools may only touch files under %s",
		e.arg, e.resolved, e.root, e.root)
}

// resolve turns a path argument into a real (symlink-free) absolute path
// inside Root. Relative paths start at Cwd. When the path does not exist,
// the nearest existing parent is resolved and the rest appended, so a write
// target is confined as strictly as an existing file.
func (e *Env) resolve(arg string) (string, error) {
	abs := arg
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(e.Cwd, abs)
	}
	abs = filepath.Clean(abs)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("path %q: %w", arg, unwrapPathError(err))
		}
		real, err = resolveMissing(arg, abs)
		if err != nil {
			return "", err
		}
	}
	if !within(e.Root, real) {
		return "", &outsideRootError{arg: arg, resolved: real, root: e.Root}
	}
	return real, nil
}

// resolveMissing resolves the deepest existing ancestor of abs and appends
// the missing rest.
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

// unwrapPathError drops the *fs.PathError wrapper, whose path may differ
// from what the model passed, keeping the cause.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
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
