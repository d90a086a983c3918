// Command ink delegates coding-agent work to child agents that run as
// separate OS processes. Each command parses its flags and calls one package;
// the hidden `worker` command is what every agent process runs, and the
// hidden `sandbox-exec` command is the step between a worker and a bash
// command that applies the bash sandbox.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/inkdev/ink/sandbox"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/worker"
)

// Exit codes: 0 completed, 1 crash or failure, 2 bad usage or input, 3 a
// refusal of good input (busy, drift), 124 timeout, 130 interrupted.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitRefused     = 3
	exitTimeout     = 124
	exitInterrupted = 130
)

// exitError carries an exit code and a message for the user.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, a...)}
}

func main() {
	// No descriptor whoever started ink left open reaches a worker, git or
	// bash: every one above 2 closes at the next exec.
	sandbox.CloseInherited()
	// Secrets stay in this process's memory: nobody else of this user may
	// read it, and /proc/<pid>/environ no longer shows the keys (Go keeps
	// its own copy of the environment, which ink goes on using).
	hardenErr := secret.Harden()
	_, scrubErr := secret.ScrubEnviron(secret.FromEnviron(os.Environ()))
	if len(os.Args) == 3 && os.Args[1] == "worker" && os.Args[2] == "--remote" {
		// A worker behind a launch command (ssh, docker run -i): its stdin
		// and stdout are its host's stream.
		os.Exit(worker.RemoteMain())
	}
	if len(os.Args) == 5 && os.Args[1] == "worker" && os.Args[2] == "--remote" && os.Args[3] == "--listen" {
		// A worker in a container (a Kubernetes pod): it listens on TCP
		// with TLS pinned both ways and announces itself on stdout.
		os.Exit(worker.RemoteListenMain(os.Args[4]))
	}
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		worker.Main() // a worker never prints; its environment holds no key anyway
		return
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.Command {
		sandbox.Main(os.Args[2:]) // becomes the sandboxed command or exits
	}
	for _, err := range []error{hardenErr, scrubErr} {
		if err != nil {
			fmt.Fprintf(os.Stderr, "ink: warning: %v; other processes of yours may be able to read ink's keys\n", err)
		}
	}
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the exit code.
func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "ink: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "ink: "+err.Error())
	return exitUsage
}
