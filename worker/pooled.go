package worker

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/tools"
)

// PooledEnv (ipc.PooledEnv, set to the host's pid) marks a worker started
// ahead of its attempt, to wait idle in its host's warm pool: it is told
// its session only by the Run message. A pooled worker holds its log lines until then and writes
// them to $INK_HOME/logs/<sessionId>.log of the spec; it waits for its
// attempt for as long as its host lives, and exits as soon as its host is
// gone (its connection closes, or it is re-parented).
const PooledEnv = ipc.PooledEnv

// maxEarlyLog bounds what a pooled worker holds before its log file is
// known; lines beyond it are dropped.
const maxEarlyLog = 1 << 20

// lateLog is a pooled worker's log file, opened once the attempt names its
// session; until then lines are held in memory. It is safe for concurrent
// use.
type lateLog struct {
	mu   sync.Mutex
	held bytes.Buffer
	f    *os.File
	done bool // closed: lines are dropped
}

// Write holds p until the file is open, then appends to it. It never
// fails: a worker's logging must not stop its work.
func (l *lateLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.f != nil:
		_, _ = l.f.Write(p)
	case !l.done && l.held.Len()+len(p) <= maxEarlyLog:
		l.held.Write(p)
	}
	return len(p), nil
}

// open opens the log file at path and writes the held lines to it. Only
// the first call does anything.
func (l *lateLog) open(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil || l.done {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(l.held.Bytes())
	l.held.Reset()
	l.f = f
}

// close closes the file; later lines are dropped.
func (l *lateLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// openPooledLog returns the logger of a pooled worker and its lateLog.
func openPooledLog() (*slog.Logger, *lateLog) {
	l := &lateLog{}
	logger := slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})).With("pid", os.Getpid(), "pooled", true)
	return logger, l
}

// adopt readies a pooled worker for the attempt of sp: its log goes to the
// session's log file, and its working directory becomes the attempt's, as
// a worker started for it would have.
func (h *handler) adopt(sp ipc.AttemptSpec) {
	if h.late == nil {
		return
	}
	h.late.open(filepath.Join(sp.InkHome, "logs", sp.SessionID+".log"))
	if err := os.Chdir(sp.Cwd); err != nil {
		h.log.Warn("Cannot change to the attempt's directory", "cwd", sp.Cwd, "err", err)
	}
}

// warmUp does, while a pooled worker waits for its attempt, what every
// attempt does the same way in a process: it lists the built-in tools,
// whose argument schemas are generated once per process, so that the
// attempt's first model request does not wait for them. It does so for
// dir (the worker's directory) and leaves nothing behind; what it cannot
// do it leaves to the attempt.
func warmUp(dir string) {
	all, closer, err := tools.Builtins(tools.Env{Root: dir, Cwd: dir})
	if err != nil {
		return
	}
	defer closer.Close()
	all = append(all, tools.NewTask(nil))
	all = append(all, tools.NewTaskControls(nil)...)
	for _, t := range all {
		t.Spec()
	}
}

// watchHost calls lost as soon as this process's parent is not host: at
// once when the host died before this process started watching, else
// within a quarter second of its death (the process is re-parented).
func watchHost(ctx context.Context, host int, lost func()) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if os.Getppid() != host {
			lost()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
