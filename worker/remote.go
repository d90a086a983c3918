package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// RemoteMain serves one attempt over this process's standard input and
// output, for `ink worker --remote` behind a launch command (ssh, docker
// run -i): it shares no disk with its host, so it holds no lease and opens
// no transcript; every entry goes to its host through Append. It logs to
// standard error, which the host keeps in the attempt's log. It returns
// the process's exit status.
func RemoteMain() int {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	reaper := becomeSubreaper() == nil
	h := &handler{log: logger, done: make(chan struct{}), remote: true}
	if err := ipc.ServeRemote(h, logger); err != nil {
		fmt.Fprintf(os.Stderr, "ink worker --remote: %v\n", err)
		return 1
	}
	if !reaper || !endDescendants() {
		logger.Warn("Some process this worker started may still run")
		return exitLeftovers
	}
	return 0
}

// PodTerminated is how an attempt ends when its remote worker is told to
// stop by SIGTERM (the cluster deletes or evicts its pod, a node drains).
const PodTerminated = "the worker was terminated by the cluster (SIGTERM)"

// exitTerminated is the status of a worker told to stop before its
// attempt came (128 + SIGTERM, as a shell reports it).
const exitTerminated = 143

// RemoteListenMain serves one attempt over TCP, for `ink worker --remote
// --listen ADDR` in a container: TLS pinned both ways, the supervisor's
// certificate hash from ipc.SupervisorCertEnv, its own announced on its
// first line of standard output (which the supervisor reads through the
// pod's log). As its container's PID 1 it handles SIGTERM: the attempt
// ends interrupted and is recorded through the host while the stream
// lasts. It returns the process's exit status.
func RemoteListenMain(addr string) int {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	reaper := becomeSubreaper() == nil
	h := &handler{log: logger, done: make(chan struct{}), remote: true}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		for range terms {
			if !h.started() {
				// No attempt yet: nothing to record, nothing to wait for.
				os.Exit(exitTerminated)
			}
			h.terminate(PodTerminated)
		}
	}()
	if err := ipc.ServeListen(h, ipc.ListenConfig{Addr: addr, Supervisor: os.Getenv(ipc.SupervisorCertEnv), Greet: os.Stdout}, logger); err != nil {
		fmt.Fprintf(os.Stderr, "ink worker --remote --listen: %v\n", err)
		return 1
	}
	if !reaper || !endDescendants() {
		logger.Warn("Some process this worker started may still run")
		return exitLeftovers
	}
	return 0
}

// sink is where an attempt's entries are written: the transcript itself
// (*session.Writer, a local worker) or the host (remoteSink).
type sink interface {
	AppendMessage(model.Message) (session.Entry, error)
	AppendCompaction(session.CompactionEntry) (session.Entry, error)
	AppendAttempt(session.AttemptEntry) error
	// Sync makes what was written durable.
	Sync() error
	Close() error
}

// holder is the attempt's claim on its transcript: the lease of a local
// worker, the fence of a remote one.
type holder interface {
	// Check fails once the claim is lost: nothing more may be written.
	Check() error
	// Progress notes that the attempt moved on (for hung detection).
	Progress()
}

var (
	_ sink   = (*session.Writer)(nil)
	_ sink   = (*remoteSink)(nil)
	_ holder = (*remoteSink)(nil)
)

// errFenced is the cause of a remote attempt stopped because its host
// refused an append as fenced.
var errFenced = errors.New("fenced")

// remoteSink writes a remote attempt's entries through its host: each
// batch is sent as an Append and waited for; the host answers Appended
// once the lines are on its disk, so an entry's event, sent after, is
// never ahead of it. A refusal as fenced fails every later write and Check.
// It is safe for concurrent use; batches go one at a time, in order.
type remoteSink struct {
	a         *attempt
	attemptID string
	epoch     int64
	// snapshot, when set, sends a snapshot of the workspace before a
	// durable batch and returns its number (0: nothing changed).
	snapshot func() (uint64, error)

	mu      sync.Mutex // held while a batch is in flight
	seq     uint64
	pending chan ipc.Appended

	errMu  sync.Mutex
	err    error
	fenced chan struct{}
}

func newRemoteSink(a *attempt, attemptID string, epoch int64) *remoteSink {
	return &remoteSink{a: a, attemptID: attemptID, epoch: epoch, fenced: make(chan struct{})}
}

// deliver hands the host's answer to the batch waiting for it.
func (s *remoteSink) deliver(ack ipc.Appended) {
	s.errMu.Lock()
	ch := s.pending
	s.errMu.Unlock()
	if ch != nil {
		select {
		case ch <- ack:
		default:
		}
	}
}

// fail records the first reason writes stop.
func (s *remoteSink) fail(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.fenced)
	}
}

// Check fails once the host refused a batch as fenced.
func (s *remoteSink) Check() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Progress does nothing: the host sees a remote attempt's progress in its
// appends and beats.
func (s *remoteSink) Progress() {}

// Fenced is closed once the host refused a batch.
func (s *remoteSink) Fenced() <-chan struct{} { return s.fenced }

// append encodes entries and writes them through the host as one batch.
func (s *remoteSink) append(entries ...session.Entry) ([]session.Entry, error) {
	out, lines, err := session.EncodeEntries(entries...)
	if err != nil {
		return nil, err
	}
	durable := false
	for _, e := range out {
		// A task call is durable before the child it starts exists.
		durable = durable || session.DurablePoint(e) || (e.Message != nil && hasTaskCall(*e.Message))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Check(); err != nil {
		return nil, err
	}
	var snap uint64
	if durable && s.snapshot != nil {
		if snap, err = s.snapshot(); err != nil {
			return nil, fmt.Errorf("workspace snapshot: %w", err)
		}
	}
	s.seq++
	ch := make(chan ipc.Appended, 1)
	s.errMu.Lock()
	s.pending = ch
	s.errMu.Unlock()
	defer func() {
		s.errMu.Lock()
		s.pending = nil
		s.errMu.Unlock()
	}()
	if err := s.a.stream.Send(ipc.Append{Seq: s.seq, AttemptID: s.attemptID, Epoch: s.epoch, Lines: lines, Durable: durable, Snapshot: snap}); err != nil {
		s.fail(fmt.Errorf("the host is gone: %w", err))
		return nil, s.Check()
	}
	select {
	case ack := <-ch:
		switch {
		case ack.Fenced:
			s.fail(fmt.Errorf("%w: %s", errFenced, ack.Error))
			return nil, s.Check()
		case ack.Error != "":
			s.fail(fmt.Errorf("the host could not write the transcript: %s", ack.Error))
			return nil, s.Check()
		case ack.Seq != s.seq || len(ack.Offsets) != len(out):
			s.fail(fmt.Errorf("the host acknowledged batch %d with %d offsets for batch %d of %d lines", ack.Seq, len(ack.Offsets), s.seq, len(out)))
			return nil, s.Check()
		}
		for i := range out {
			out[i].Offset = ack.Offsets[i]
		}
		return out, nil
	case <-s.a.hostGone:
		s.fail(errHostLost)
		return nil, s.Check()
	}
}

// hasTaskCall reports whether m calls the task tool.
func hasTaskCall(m model.Message) bool {
	for _, c := range m.ToolCalls {
		if c.Name == "task" {
			return true
		}
	}
	return false
}

// AppendMessage writes one message entry through the host.
func (s *remoteSink) AppendMessage(m model.Message) (session.Entry, error) {
	out, err := s.append(session.Entry{Message: &m})
	if err != nil {
		return session.Entry{}, err
	}
	return out[0], nil
}

// AppendCompaction writes one compaction entry through the host.
func (s *remoteSink) AppendCompaction(c session.CompactionEntry) (session.Entry, error) {
	out, err := s.append(session.Entry{Compaction: &c})
	if err != nil {
		return session.Entry{}, err
	}
	return out[0], nil
}

// AppendAttempt writes the attempt's end entry through the host.
func (s *remoteSink) AppendAttempt(e session.AttemptEntry) error {
	_, err := s.append(session.Entry{Attempt: &e})
	return err
}

// Sync does nothing more: every batch that must be durable (a tool result,
// a compaction, an attempt, a task call) was acknowledged after its fsync.
func (s *remoteSink) Sync() error { return s.Check() }

// Close does nothing: the host owns the transcript.
func (s *remoteSink) Close() error { return nil }

// receiveWorkspace reads the baseline of a remote child's worktree, sent
// right after Run, into w.
func receiveWorkspace(ctx context.Context, chunks <-chan ipc.WorkspaceChunk, w io.Writer) error {
	for {
		select {
		case c := <-chunks:
			if _, err := w.Write(c.Data); err != nil {
				return err
			}
			if c.Last {
				return nil
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Workspace makes and snapshots a remote child's worktree on the worker's
// side; the worktree package's implementation by default.
type Workspace interface {
	// Materialise makes a repository of its own at dir from the baseline
	// read from r, and returns the commit that snapshots the worktree as
	// shipped.
	Materialise(ctx context.Context, dir string, r io.Reader) (snapshot string, err error)
	// Snapshot writes to w a snapshot of the repository at dir — committed
	// work, uncommitted and untracked files, deletions and modes — holding
	// what since (the last snapshot the host has) lacks, and returns its
	// commit (since itself when nothing changed).
	Snapshot(ctx context.Context, dir, since string, w io.Writer) (commit string, err error)
}

// workspace is the Workspace remote attempts use.
var workspace Workspace = worktreeWorkspace{}

// worktreeWorkspace is the worktree package's Workspace.
type worktreeWorkspace struct{}

func (worktreeWorkspace) Materialise(ctx context.Context, dir string, r io.Reader) (string, error) {
	ws, err := worktree.Materialise(ctx, dir, r)
	return ws.Snapshot, err
}

func (worktreeWorkspace) Snapshot(ctx context.Context, dir, since string, w io.Writer) (string, error) {
	info, err := worktree.Snapshot(ctx, dir, since, w)
	return info.Commit, err
}

// materialise receives the remote child's baseline and makes its worktree
// at the path the host's worktree has (refused at once where that path
// exists here: the host's own disk, seen without a mount namespace of the
// worker's own), and arranges for a snapshot before every durable batch.
// The worktree's git directory is the worker's own throwaway one: bash may
// write it but for its config and hooks.
func (a *attempt) materialise(ctx context.Context) error {
	ws := a.spec.Remote.Workspace
	if workspace == nil {
		return errors.New("this ink cannot make a remote workspace")
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(receiveWorkspace(ctx, a.chunks, pw)) }()
	since, err := workspace.Materialise(ctx, ws.Path, pr)
	pr.CloseWithError(errors.New("the workspace was read"))
	if err != nil {
		return fmt.Errorf("make the remote workspace: %w", err)
	}
	a.spec.WorktreeGitDir, a.spec.AllowGitWrites = "", true
	var seq uint64
	a.remote.snapshot = func() (uint64, error) {
		var buf bytes.Buffer
		commit, err := workspace.Snapshot(context.WithoutCancel(ctx), ws.Path, since, &buf)
		if err != nil {
			return 0, err
		}
		if commit == since {
			return 0, nil
		}
		seq++
		data := buf.Bytes()
		for {
			n := min(len(data), ipc.MaxChunk)
			last := n == len(data)
			if err := a.stream.Send(ipc.WorkspaceDelta{Seq: seq, Data: data[:n], Last: last}); err != nil {
				return 0, err
			}
			if last {
				break
			}
			data = data[n:]
		}
		// The batch that names this snapshot is answered only once the
		// host applied it; a refusal fences the attempt. Either way the
		// next snapshot builds on this one.
		since = commit
		return seq, nil
	}
	return nil
}
