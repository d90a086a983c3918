package ipc

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/secret"
)

// Launcher starts workers. Supervision reaches every worker through it, so
// the way a worker comes to be — a fresh local process over go-plugin
// (package launcher/local), a command that reaches a worker elsewhere
// (package launcher/command) — is invisible to the task and resume logic,
// and tests supervise fake workers in memory.
type Launcher interface {
	// Launch starts a worker for spec and sends it the Run message. On
	// error nothing is left running. ctx bounds the start only.
	Launch(ctx context.Context, spec AttemptSpec) (Worker, error)
}

// ReadyLauncher is a Launcher that can start a worker while what its
// attempt needs is made ready: ready runs once the worker is started and
// before it is sent the attempt; its error ends the launch, nothing left
// running.
type ReadyLauncher interface {
	LaunchReady(ctx context.Context, spec AttemptSpec, ready func() error) (Worker, error)
}

// Worker is one running attempt as the supervisor sees it. Send is safe for
// concurrent use; Recv is called from one goroutine; Close and Kill may be
// called from any goroutine, more than once.
type Worker interface {
	// Pid is the worker's process id (its process group and session); for
	// a worker reached through a command, the command's.
	Pid() int
	// Send sends a message to the worker.
	Send(HostMsg) error
	// Recv receives the worker's next message; io.EOF ends the stream
	// normally, any other error means the worker is gone.
	Recv() (WorkerMsg, error)
	// Close ends a worker whose outcome was acknowledged: it ends the
	// stream, waits (bounded) for the worker to finish it, shuts the worker
	// down and waits for it to exit, then removes what it left behind.
	Close()
	// Kill SIGKILLs the worker's process group and every other group of
	// its session, waits for it and removes what it left behind.
	Kill()
	// Exit waits up to d for the worker process to end and says how it
	// ended; ok is false when it still runs.
	Exit(d time.Duration) (state ExitState, ok bool)
	// Beats delivers the worker's heartbeats from its Beats stream (the
	// latest one kept); it is closed when that stream ends. The supervisor
	// judges the worker's liveness from them.
	Beats() <-chan Heartbeat
}

// ExitState is how a worker process ended: killed by Signal ("SIGKILL"),
// or exited with Code.
type ExitState struct {
	Signal string
	Code   int
}

// Describe explains a worker that ended without reporting an outcome.
func (e ExitState) Describe(pid int) string {
	if e.Signal != "" {
		return fmt.Sprintf("the worker process (pid %d) was killed by signal %s", pid, e.Signal)
	}
	return fmt.Sprintf("the worker process (pid %d) exited with status %d before reporting an outcome", pid, e.Code)
}

// IdleWorker is a started, handshaken worker process that has no attempt,
// no lease and no session yet (a warm pool's).
type IdleWorker interface {
	// Run opens its attempt stream and sends spec; on error the worker is
	// gone.
	Run(spec AttemptSpec) (Worker, error)
	// Alive reports whether the process still runs.
	Alive() bool
	// Discard ends it at once.
	Discard()
}

// IdleStarter starts idle workers in dir, sockets under inkHome, for a
// warm pool.
type IdleStarter interface {
	StartIdle(ctx context.Context, inkHome, dir string) (IdleWorker, error)
}

// WorkerEnv filters the host environment down to what a worker may see:
// the basics a shell needs (PATH, HOME, user, shell, terminal, temp dir,
// time zone), locale, git's commit identity, ink's own variables, what it
// takes to reach a provider from a network that needs a proxy or its own CA
// certificates, and GOCOVERDIR (set only by `go test -cover`). It holds no
// secret: no provider variable (the supervisor resolves each binding's
// endpoint and hands the worker its own key inside the attempt spec), no
// variable named like a secret (secret.IsKeyName), no SSH agent socket and
// no git configuration override. Nothing else leaks. README's Security section
// lists these variables and why each is there.
func WorkerEnv(environ []string) []string {
	exact := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"TERM": true, "TMPDIR": true, "TZ": true, "LANG": true, "LANGUAGE": true,
		"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_RUNTIME_DIR": true,
		"HTTPS_PROXY": true, "https_proxy": true, "HTTP_PROXY": true, "http_proxy": true,
		"NO_PROXY": true, "no_proxy": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
		"GOCOVERDIR": true,
	}
	prefixes := []string{"LC_", "INK_", "GIT_AUTHOR_", "GIT_COMMITTER_"}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "INK_WORKER" || k == "INK_WORKER_LOG" || k == PooledEnv || secret.IsKeyName(k) || providers.IsProviderVar(k) {
			continue
		}
		keep := exact[k]
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				keep = true
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
