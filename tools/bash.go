package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/toolargs"
)

// bashTool is the `bash` tool: it runs a shell command in the working
// directory, in its own process group, and kills the whole group on
// cancellation or timeout. It is not safe for concurrent use with the
// agent's edit and write calls (the loop runs it alone), though separate
// calls share no state.
type bashTool struct {
	env   *Env
	sweep sync.Once // sweepTempDirs, before the first sandboxed call
}

var _ Tool = (*bashTool)(nil)

func (t *bashTool) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "bash",
		Description: "Run a command with bash -c in the working directory and return its combined stdout and stderr and its exit code. " +
			"Standard input is empty, so interactive commands fail; pass flags that avoid prompts and pagers. " +
			fmt.Sprintf("The default timeout is %s s and the maximum %s s; on timeout the command and everything it started are killed. ",
				seconds(t.env.BashTimeout), seconds(t.env.BashMaxTimeout)) +
			fmt.Sprintf("Output longer than %s keeps its start and end and drops the middle. ", byteSize(t.env.BashMaxOutput)) +
			"Background processes the command leaves running are stopped when it finishes. " +
			"A non-zero exit code is reported as an error with the output. " +
			t.sandboxNote() +
			"Prefer read, grep, find and ls for looking at files, and edit or write for changing them.",
		Schema: toolargs.Schema[bashArgs](toolargs.Describe("timeout",
			fmt.Sprintf("Timeout in seconds (default %s, at most %s).", seconds(t.env.BashTimeout), seconds(t.env.BashMaxTimeout)))),
	}
}

func (t *bashTool) Safe() bool { return false }

// sandboxNote tells the model what its commands may write, when they run
// sandboxed.
func (t *bashTool) sandboxNote() string {
	var where []string
	switch t.env.sandbox.Effective {
	case sandbox.ReadOnly:
	case sandbox.WorkspaceWrite:
		where = append(where, t.env.Root)
		if cache, err := os.UserCacheDir(); err == nil {
			where = append(where, cache+" (the cache directory)")
		}
		where = append(where, t.env.Writable...)
		if len(t.env.gitDirs) > 0 {
			where = append(where, "this worktree's own git directory (its objects, refs and logs, so git add, commit and stash work on its branch; its config and hooks stay read-only, and the user's repository is read-only)")
		}
	default:
		return ""
	}
	where = append(where, "$TMPDIR (a fresh directory for each call, removed afterwards)")
	note := fmt.Sprintf("Commands run in the %s sandbox: they may read any file but write only under %s; any other write fails with \"Permission denied\", and retrying will not help. ",
		t.env.sandbox.Effective, strings.Join(where, ", "))
	switch {
	case len(t.env.protect.ReadOnly) > 0 && len(t.env.protect.Writable) > 0:
		note += "The repository's git directory is writable (commits work), but its config and hooks are read-only. "
	case len(t.env.protect.ReadOnly) > 0:
		note += "The repository's git directory is read-only (\"Read-only file system\"): git status, diff and log work, git add, commit and config do not. "
	}
	if !t.env.network.Allowed {
		note += "There is no network: connections fail with \"Operation not permitted\" or \"Permission denied\"; do not retry them. "
	}
	return note
}

// bashArgs are bash's arguments; timeout's description, which names the
// configured default and maximum, is set in Spec.
type bashArgs struct {
	Command string   `json:"command" jsonschema:"The command line to run with bash -c."`
	Timeout *float64 `json:"timeout,omitempty" jsonschema:"Timeout in seconds."`
}

func (t *bashTool) Run(ctx context.Context, raw json.RawMessage) Result {
	a, err := toolargs.Decode[bashArgs]("bash", raw)
	if err != nil {
		return errorResult("%v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return errorResult("bash: command is required: give the command line to run")
	}
	timeout := t.env.BashTimeout
	if a.Timeout != nil {
		switch {
		case *a.Timeout < 0.001:
			return errorResult("bash: timeout must be a positive number of seconds (at least 0.001), got %v", *a.Timeout)
		case *a.Timeout > t.env.BashMaxTimeout.Seconds():
			return errorResult("bash: timeout %v s is more than the maximum %s s; split the work or run it in steps", *a.Timeout, seconds(t.env.BashMaxTimeout))
		}
		timeout = time.Duration(*a.Timeout * float64(time.Second))
	}
	if ctx.Err() != nil {
		return errorResult("interrupted: %s\n(the command was not started)", context.Cause(ctx).Error())
	}

	cmd := exec.Command("bash", "-c", a.Command)
	cmd.Dir = t.env.Cwd
	cmd.Env = commandEnv(os.Environ())
	if cmd.Err != nil {
		return errorResult("bash: could not start bash: %v", cmd.Err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var launch *sandbox.Launch
	if t.env.sandbox.Effective.Confined() {
		t.sweep.Do(sweepTempDirs)
		tmp, err := makeTempDir()
		if err != nil {
			return errorResult("bash: create the command's private temp dir: %v", err)
		}
		defer removeTempDir(tmp)
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		if launch, err = t.sandboxed(cmd, tmp); err != nil {
			return errorResult("bash: cannot apply the %s sandbox: %v", t.env.sandbox.Effective, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return errorResult("bash: create output pipe: %v", err)
	}
	cmd.Stdout = w
	cmd.Stderr = w
	err = cmd.Start()
	if launch != nil {
		launch.Started()
	}
	if err != nil {
		r.Close()
		w.Close()
		return errorResult("bash: could not start bash: %v", err)
	}
	w.Close()
	out := newCappedOutput(t.env.BashMaxOutput)
	copied := make(chan struct{})
	go func() {
		io.Copy(out, r)
		close(copied)
	}()
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		waitExited(pgid)
		close(exited)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var interrupted, timedOut bool
	select {
	case <-exited:
	case <-ctx.Done():
		interrupted = true
	case <-timer.C:
		timedOut = true
	}
	// Cleanup, bounded by one grace period in all: SIGTERM the group, give
	// it until the deadline, then SIGKILL whatever is left.
	deadline := time.Now().Add(t.env.BashKillGrace)
	if interrupted || timedOut {
		stopGroup(pgid, cmd.Process, exited, deadline)
	}
	// The leader has exited but is not reaped yet, so its pid (the group
	// id) cannot be reused: stop whatever the command left in its group.
	if syscall.Kill(-pgid, syscall.SIGTERM) == nil {
		waitUntil(copied, deadline)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	waitErr := cmd.Wait()
	// Something that left the process group may still hold the output
	// pipe; stop reading at the deadline rather than wait for it.
	if soon := time.Now().Add(100 * time.Millisecond); deadline.Before(soon) {
		deadline = soon
	}
	waitUntil(copied, deadline)
	r.Close()
	<-copied

	if launch != nil {
		if err := launch.Failure(); err != nil {
			return errorResult("bash: the command did not run: %v", err)
		}
	}
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	switch {
	case interrupted:
		return errorResult("interrupted: %s\n%s", context.Cause(ctx).Error(), text)
	case timedOut:
		return errorResult("bash: timed out after %s s; the command and its process group were killed. Output so far:\n%s", seconds(timeout), text)
	}
	state := cmd.ProcessState
	if state == nil {
		return errorResult("bash: %v\n%s", waitErr, text)
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return errorResult("%s\n[killed by signal %s]", text, unix.SignalName(ws.Signal()))
	}
	code := state.ExitCode()
	if code != 0 {
		return errorResult("%s\n[exit code %d]", text, code)
	}
	return Result{Content: fmt.Sprintf("%s\n[exit code 0]", text)}
}

// sandboxed rewrites cmd to start under the sandbox, with tmp as the
// private temp dir.
func (t *bashTool) sandboxed(cmd *exec.Cmd, tmp string) (*sandbox.Launch, error) {
	if t.env.SandboxExe == "" {
		return nil, errors.New("the ink binary that applies it is not known (tools Env.SandboxExe is empty)")
	}
	writable := append(slices.Clip(t.env.Writable), t.env.gitDirs...)
	return sandbox.Wrap(cmd, t.env.SandboxExe, sandbox.Policy{
		Mode:       t.env.sandbox.Effective,
		TempDir:    tmp,
		Root:       t.env.Root,
		Writable:   append(writable, t.env.protect.Writable...),
		Network:    t.env.network.Allowed,
		ReadOnly:   t.env.protect.ReadOnly,
		Namespaces: t.env.Namespaces,
	})
}

// stopGroup ends the process group pgid: SIGTERM, until deadline for the
// leader to exit, then SIGKILL. It returns once the leader has exited.
func stopGroup(pgid int, leader *os.Process, exited <-chan struct{}, deadline time.Time) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	if waitUntil(exited, deadline) {
		return
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	leader.Kill()
	<-exited
}

// waitUntil waits for ch to be closed until deadline and reports whether
// it was.
func waitUntil(ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// seconds formats d as a number of seconds without a unit.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// commandEnv is the environment of a bash command: the worker's own (already
// an allowlist) minus every variable named like a secret (secret.IsKeyName),
// which belongs to the worker and not to commands a model chooses to run.
func commandEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if secret.IsKeyName(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
