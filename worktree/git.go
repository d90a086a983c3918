package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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

// gitCall describes one git invocation.
type gitCall struct {
	dir string
	// read adds --no-optional-locks so a read never takes index.lock from
	// under a user's own git command.
	read bool
	// noHooks points core.hooksPath at /dev/null for ink's own writes.
	noHooks bool
	// ceiling stops repository discovery above dir, so a worktree whose
	// .git link is gone can never be mistaken for an enclosing repository.
	ceiling string
	// env is added to the environment (e.g. GIT_INDEX_FILE).
	env []string
	// config holds extra -c key=value pairs.
	config []string
	args   []string
	// stdout, when set, receives standard output instead of the returned
	// string.
	stdout io.Writer
}

// scrubbedEnv is the process environment without the variables that would
// point git at another repository, index or work tree than -C says.
func scrubbedEnv() []string {
	drop := map[string]bool{
		"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
		"GIT_COMMON_DIR": true, "GIT_OBJECT_DIRECTORY": true, "GIT_PREFIX": true,
		"GIT_CEILING_DIRECTORIES": true, "GIT_NAMESPACE": true,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "LC_ALL": true, "LANG": true,
		"LANGUAGE": true, "GIT_TERMINAL_PROMPT": true, "GIT_OPTIONAL_LOCKS": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

// exec runs the call and returns its standard output. A failure is a
// *GitError with the exit code and standard error.
func (c gitCall) exec(ctx context.Context) (string, error) {
	return c.execInput(ctx, nil)
}

// execInput is exec with stdin fed from in (nil for none).
func (c gitCall) execInput(ctx context.Context, in io.Reader) (string, error) {
	var full []string
	full = append(full, "-C", c.dir)
	if c.read {
		full = append(full, "--no-optional-locks")
	}
	if c.noHooks {
		full = append(full, "-c", "core.hooksPath=/dev/null")
	}
	for _, kv := range c.config {
		full = append(full, "-c", kv)
	}
	full = append(full, c.args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(scrubbedEnv(), c.env...)
	if c.ceiling != "" {
		cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+c.ceiling)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin = in
	cmd.Stdout = &stdout
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = &stderr
	err := cmd.Run()
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

// run runs a git command that may write (hooks off) in dir.
func run(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCall{dir: dir, noHooks: true, args: args}.exec(ctx)
}

// read runs a read-only git command in dir with --no-optional-locks.
func read(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCall{dir: dir, read: true, args: args}.exec(ctx)
}

// readIn runs a read-only git command inside a worktree, with repository
// discovery stopped at the worktree's parent directory.
func readIn(ctx context.Context, worktreePath string, args ...string) (string, error) {
	return gitCall{dir: worktreePath, read: true, ceiling: parentDir(worktreePath), args: args}.exec(ctx)
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
