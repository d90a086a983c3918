package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Command is the hidden subcommand of the ink binary that applies a policy
// to itself and then becomes the sandboxed program (see Main). Its command
// line is private to this package: Wrap writes it, Main reads it.
const Command = "sandbox-exec"

// statusLimit caps what Main reports over the status pipe.
const statusLimit = 4 << 10

// Launch is one command rewritten by Wrap to start under a policy. It
// learns over a status pipe whether the policy was applied. Use it from
// one goroutine: Started after cmd.Start, then Failure after the process
// has exited.
type Launch struct {
	r, w *os.File
	msg  []byte
	done chan struct{}
}

// Wrap rewrites cmd, not yet started, so that it runs under p: cmd then
// starts exe (the ink binary) as the hidden Command, which restricts
// itself with Landlock and then executes cmd's program in its own place —
// the same process, so a process group, signals and the exit status work
// exactly as for the program started directly, and everything the program
// starts inherits the restriction. The policy travels on the command line,
// never through a file. cmd's Path must be resolved (exec.Command does
// that) and its Err nil; Stdout, Stderr, Dir and Env are kept as set,
// before or after Wrap. Wrap adds one entry to cmd.ExtraFiles, and with
// read-only paths sets the namespace flags of cmd.SysProcAttr, so set
// ExtraFiles and SysProcAttr before calling it, if at all.
//
// After cmd.Start (whatever it returned) call Started; after the process
// has exited, Failure says whether the policy could not be applied.
func Wrap(cmd *exec.Cmd, exe string, p Policy) (*Launch, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil {
		return nil, errors.New("sandbox: the command has already started")
	}
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("sandbox: the ink binary %q is not an absolute path", exe)
	}
	if !filepath.IsAbs(cmd.Path) {
		return nil, fmt.Errorf("sandbox: the program %q is not an absolute path", cmd.Path)
	}
	dirs, err := p.WritableDirs()
	if err != nil {
		return nil, err
	}
	if len(p.ReadOnly) > 0 && p.Namespaces == NoNamespaces {
		return nil, errors.New("sandbox policy: read-only paths need a private mount namespace, and this machine gives none")
	}
	var host string // the mount namespace the command must leave
	if len(p.ReadOnly) > 0 {
		if host, err = mountNamespaceID(); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)

	args := []string{exe, Command, "-mode", string(p.Mode), "-status-fd", strconv.Itoa(fd), "-path", cmd.Path}
	for _, d := range dirs {
		args = append(args, "-write", d)
	}
	if p.Network {
		args = append(args, "-network")
	}
	if len(p.ReadOnly) > 0 {
		args = append(args, "-host-mntns", host)
		for _, ro := range p.ReadOnly {
			args = append(args, "-ro", ro)
		}
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		p.Namespaces.apply(cmd.SysProcAttr)
	}
	args = append(args, "--")
	args = append(args, cmd.Args...)
	cmd.Path = exe
	cmd.Args = args
	return &Launch{r: r, w: w, done: make(chan struct{})}, nil
}

// Started must be called once right after cmd.Start, whether or not it
// succeeded: it drops this process's copy of the status pipe and starts
// reading the outcome in the background.
func (l *Launch) Started() {
	l.w.Close()
	go func() {
		defer close(l.done)
		defer l.r.Close()
		l.msg, _ = io.ReadAll(io.LimitReader(l.r, statusLimit))
		io.Copy(io.Discard, l.r)
	}()
}

// Failure reports why the policy could not be applied and the program
// never ran, or nil when the program ran confined (or the process was
// killed before it could say). Call it after Started and after the process
// has exited: it waits for the status pipe to close, which happens when
// the program starts or the process ends.
func (l *Launch) Failure() error {
	<-l.done
	if len(l.msg) == 0 {
		return nil
	}
	return errors.New(strings.TrimSpace(string(l.msg)))
}
