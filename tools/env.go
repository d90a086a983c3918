package tools

import (
	"errors"
	"fmt"
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
	// reach the disk only through an os.Root of it, so nothing outside it
	// can be read or written, whatever links are swapped in mid-call.
	Root string
	// Cwd is where relative paths resolve and where bash runs: an absolute
	// directory inside Root. Empty means Root.
	Cwd string
	// LockDir overrides where the cross-process per-file edit locks
	// (<sha256(realpath)>.lock) live. Leave it empty: the default is the
	// host-wide per-user directory that every ink process of this user
	// shares, whatever its INK_HOME (see DefaultLockDir). Set it only to
	// isolate tests; an override must be an absolute path, and is created
	// on first use. Lock files are never deleted.
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
	// Network lets bash reach the network in a confined mode (--network,
	// a profile's network: true). Without it, where the kernel cannot cut
	// the network, bash reaches it anyway, unless NetworkExplicit says the
	// cut was asked for by name: then Builtins fails with a message that
	// says why.
	Network         bool
	NetworkExplicit bool
	// AllowGitWrites (--allow-git-writes) lets bash under workspace-write
	// write the git directory of the checkout Root lies in, except what
	// makes git run programs (its config, hooks and submodules' git
	// directories); without it that git state is read-only. It does not
	// apply to a worktree child's root.
	AllowGitWrites bool
	// Namespaces is how bash gets the private mount namespace in which the
	// checkout's git state is mounted read-only (sandbox.ProbeNamespaces,
	// asked once by the supervisor). Without one that git state stays
	// writable by bash under workspace-write (the supervisor warned, or
	// refused an explicit mode).
	Namespaces sandbox.Namespaces

	// dir is the open root every file tool goes through (Builtins opens
	// it); locks finds and remembers the lock directory (Builtins makes
	// one unless a test already did).
	dir   *os.Root
	locks *lockDirCache

	// testNoLock, testNoCAS, testNoSync and testHook exist for the
	// package's own tests: the first two turn off the per-file lock and
	// the re-check before a replace (to show that lost updates then
	// happen), the third skips fsync (confinement races do not need it),
	// and the hook runs at named points of a call (hookResolved after a
	// path is resolved, hookBeforeWrite between an edit's or write's checks
	// and its replace) so a test can change the disk there.
	testNoLock bool
	testNoCAS  bool
	testNoSync bool
	testHook   func(point string)

	// sandbox is how bash really runs, settled by normalize, and network
	// whether it reaches the network.
	sandbox sandbox.Decision
	network sandbox.NetworkDecision
	// protect keeps bash off the git state of the checkout Root lies in
	// (not a worktree child's); found once, before any command runs. The
	// file tools refuse to write its paths too (protectedPaths).
	protect sandbox.Protection
	// protectedPaths are the paths edit and write refuse: protect's
	// read-only paths, whether or not bash can have them mounted.
	protectedPaths []string
	// gitDirs are the git state of a worktree Root, writable by bash
	// under workspace-write; found once, before any command runs.
	gitDirs []string
	// testLandlock and testNetwork, when set, stand in for sandbox.Check
	// and sandbox.CheckNetwork in normalize.
	testLandlock func() error
	testNetwork  func() error
}

// Points at which Env.testHook runs.
const (
	hookResolved    = "resolved"
	hookBeforeWrite = "before-write"
)

// hook runs the test hook at point, if one is set.
func (e *Env) hook(point string) {
	if e.testHook != nil {
		e.testHook(point)
	}
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
	if e.LockDir != "" && !filepath.IsAbs(e.LockDir) {
		return e, fmt.Errorf("tools env: LockDir %q is not an absolute path; leave it empty for the default", e.LockDir)
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
	checkNet := sandbox.CheckNetwork
	if e.testNetwork != nil {
		checkNet = e.testNetwork
	}
	var netAvailable error
	if d.Effective.Confined() && !e.Network {
		netAvailable = checkNet()
	}
	if e.network, err = sandbox.DecideNetwork(d, e.Network, e.NetworkExplicit, netAvailable); err != nil {
		return e, fmt.Errorf("tools env: %w", err)
	}
	if d.Effective == sandbox.WorkspaceWrite {
		e.gitDirs = sandbox.WorktreeGitDirs(e.Root)
	}
	if d.Effective.Confined() {
		if co, ok := sandbox.AgentCheckout(e.Root); ok {
			p, err := co.Protect(e.AllowGitWrites && d.Effective == sandbox.WorkspaceWrite)
			if err != nil {
				return e, fmt.Errorf("tools env: %w", err)
			}
			e.protectedPaths = p.ReadOnly
			if d.Effective == sandbox.WorkspaceWrite {
				if e.Namespaces == sandbox.NoNamespaces {
					p.ReadOnly = nil
				}
				e.protect = p
			}
		}
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
