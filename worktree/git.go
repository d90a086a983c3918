package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// GitError is a failed git command: its arguments, directory, exit code and
// standard error. ExitCode is -1 when git could not be started or was
// killed.
type GitError struct {
	Dir      string
	Args     []string
	ExitCode int
	Stderr   string
	Err      error
}

var _ error = (*GitError)(nil)

// Error says which git command failed where, and what git printed.
func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.ExitCode >= 0 {
		return fmt.Sprintf("git %s (in %s) exited %d: %s", strings.Join(e.Args, " "), e.Dir, e.ExitCode, msg)
	}
	return fmt.Sprintf("git %s (in %s): %s", strings.Join(e.Args, " "), e.Dir, msg)
}

// Unwrap returns the underlying exec error.
func (e *GitError) Unwrap() error { return e.Err }

// exitCode returns git's exit code carried by err, 0 for a nil error, and -1
// when err is not a completed git run.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// gitCall describes one git invocation. Every call runs hardened (see
// harden.go): no pager, no hooks, none of the commands git can take from
// configuration, and a scrubbed environment.
type gitCall struct {
	dir string
	// in, when set, runs the call in one of ink's worktrees through the
	// directories ink verified (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE),
	// never through the worktree's own .git link; dir is then its work
	// tree.
	in *layout
	// read adds --no-optional-locks so a read never takes index.lock from
	// under a user's own git command.
	read bool
	// ceiling stops repository discovery above dir, so a worktree whose
	// .git link is gone can never be mistaken for an enclosing repository.
	ceiling string
	// env is added to the environment (e.g. GIT_INDEX_FILE).
	env []string
	// config holds extra -c key=value pairs.
	config []string
	args   []string
	// stdout, when set, receives standard output instead of the returned
	// string (and the call is not retried, so nothing is written twice).
	stdout io.Writer
	// lock, when set, is the repository lock the call runs under: its
	// descriptor is inherited by git.
	lock *repoLock
	// stdin, when set, is fed to git's standard input (and the call is
	// not retried).
	stdin io.Reader
	// noRetry turns off the retry of transient failures, for a command
	// that may have done part of its work before failing.
	noRetry bool
	// retrying, when set, is told of each transient failure before the
	// pause that precedes its retry; it lets a test act on the moment a
	// retry is due instead of guessing it with a clock.
	retrying func(err error)
}

// exec runs the call and returns its standard output. A failure is a
// *GitError with the exit code and standard error. A transient failure —
// another git process holding a lock file, a worktree's metadata read while
// it was being written — is retried a few times with jittered backoff
// (about two seconds in all) before it is returned.
func (c gitCall) exec(ctx context.Context) (string, error) {
	for attempt := 0; ; attempt++ {
		out, err := c.once(ctx)
		if err == nil || c.noRetry || c.stdout != nil || c.stdin != nil || attempt >= len(retryDelays) || !transient(err) {
			return out, err
		}
		if c.retrying != nil {
			c.retrying(err)
		}
		if !sleepCtx(ctx, jitter(retryDelays[attempt])) {
			return out, err
		}
	}
}

// once runs the call one time.
func (c gitCall) once(ctx context.Context) (string, error) {
	pins, err := c.pins(ctx)
	if err != nil {
		return "", &GitError{Dir: c.dir, Args: c.args, ExitCode: -1, Err: err}
	}
	full := []string{"--no-pager", "-C", c.dir}
	if c.read {
		full = append(full, "--no-optional-locks")
	}
	for _, kv := range c.config {
		full = append(full, "-c", kv)
	}
	full = append(full, c.args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(hardenedEnv(pins), c.env...)
	if c.in != nil {
		cmd.Env = append(cmd.Env, c.in.env()...)
	}
	if c.ceiling != "" {
		cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+c.ceiling)
	}
	var stdout, stderr bytes.Buffer
	if c.stdin != nil {
		cmd.Stdin = c.stdin
	}
	cmd.Stdout = &stdout
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = &stderr
	if c.lock != nil {
		cmd.ExtraFiles = []*os.File{c.lock.f}
	}
	err = cmd.Run()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			code = -1
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return stdout.String(), &GitError{Dir: c.dir, Args: c.args, ExitCode: code, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// retryDelays are the pauses before each retry of a transient failure.
var retryDelays = []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// jitter returns a duration between d/2 and 3d/2.
func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d) }

// sleepCtx sleeps for d; it returns false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// transientGit matches what git prints when it lost a race it may win on a
// second try: a lock file (index.lock, config.lock, a ref's lock) held by
// another git process, or a worktree's administrative files read while
// another process was creating or deleting them.
var transientGit = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\.lock'?: File exists|could not lock config file|unable to lock|cannot lock ref '[^']*': Unable to create|(failed to|unable to|could not) read [^\n]*worktrees/|(could not|unable to) (open|read) '[^']*worktrees/[^']*'`)
})

// transient reports whether err is a git failure that is worth retrying
// because another process held a lock or was changing worktree metadata.
func transient(err error) bool {
	var ge *GitError
	if !errors.As(err, &ge) || ge.ExitCode < 0 {
		return false
	}
	return transientGit().MatchString(ge.Stderr)
}

// run runs a git command that may write in dir.
func run(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCall{dir: dir, args: args}.exec(ctx)
}

// read runs a read-only git command in dir with --no-optional-locks.
func read(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCall{dir: dir, read: true, args: args}.exec(ctx)
}

// lines splits git output into non-empty lines.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimRight(l, "\r"); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}
