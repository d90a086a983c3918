// Package command is the launcher of remote attempts: workers that share
// no disk with the supervisor. It holds for such a worker what it cannot:
// the transcript's lease, the transcript (written through a
// session.Fence), and the child's worktree (shipped out, its snapshots
// applied back). How the worker is reached is a Transport: by default a
// command (--launcher exec:COMMAND: ssh, docker run -i, anything that runs
// `ink worker --remote` with its stdin and stdout as the stream); package
// launcher/kube supplies one that runs the worker in a Pod and dials it.
// It owns nothing else: the supervisor (package orchestrator) decides what
// runs where.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// closeWait bounds how long Close waits for the worker to end its stream
// after the host closed its side.
const closeWait = 5 * time.Second

// Workspace ships a remote child's worktree to its worker and brings
// the worker's snapshots back into it. The worktree package implements it
// (worktree.Remote); tests use a fake.
type Workspace interface {
	// Pack writes the worktree of rec for its worker: its baseline, the
	// child's commits and its files as they are; the .worktreeinclude
	// files only when includes is set. It returns those it left out.
	Pack(ctx context.Context, rec worktree.Record, w io.Writer, includes bool) (leftOut []string, err error)
	// Apply applies a snapshot the worker sent to the worktree of rec.
	Apply(ctx context.Context, rec worktree.Record, r io.Reader) error
}

// maxSnapshot bounds one snapshot a remote worker sends.
const maxSnapshot = 512 << 20

// Config configures a Launcher.
type Config struct {
	// Command is run with /bin/sh -c once per attempt; it must end in
	// `ink worker --remote`.
	Command string
	// Environ is the host environment; the command gets its allowlisted
	// part (ipc.WorkerEnv).
	Environ []string
	Logger  *slog.Logger
	// Workspace ships worktrees out and applies snapshots back; nil is
	// package worktree's.
	Workspace Workspace
	// Includes ships the worktree's .worktreeinclude files (often
	// secrets) too; Warn, when set, says which were left out otherwise.
	Includes bool
	Warn     func(agent, text string)
	// Transport reaches each attempt's worker; nil runs Command.
	Transport Transport
}

// New returns the Launcher of cfg.
func New(cfg Config) *Launcher {
	ws := cfg.Workspace
	if ws == nil {
		ws = worktreeShipping{}
	}
	return &Launcher{command: cfg.Command, environ: cfg.Environ, logger: cfg.Logger, workspace: ws, includes: cfg.Includes, warn: cfg.Warn, transport: cfg.Transport}
}

// Launcher runs each remote attempt's worker through a command that
// reaches `ink worker --remote` (ssh, docker run -i, …), and holds what a
// worker that shares no disk cannot: the transcript's lease, the
// transcript, and the child's worktree. It is safe for concurrent use.
type Launcher struct {
	command   string
	environ   []string
	logger    *slog.Logger
	workspace Workspace
	// includes ships the worktree's .worktreeinclude files (often
	// secrets) too; warn says which were left out when it is not set.
	includes bool
	warn     func(agent, text string)
	// transport reaches each attempt's worker; nil is the exec transport
	// of command.
	transport Transport
	// start starts the command and reaches its worker (startExec; tests
	// play the worker in memory).
	start func(ctx context.Context, cfg ipc.ExecConfig) (remoteClient, error)
}

var _ ipc.Launcher = (*Launcher)(nil)

// remoteClient and attemptStream are this package's names for Conn and
// Stream.
type (
	remoteClient  = Conn
	attemptStream = Stream
)

// execClient adapts *ipc.RemoteClient to remoteClient.
type execClient struct{ *ipc.RemoteClient }

func (c execClient) Attempt(ctx context.Context) (attemptStream, error) {
	return c.RemoteClient.Attempt(ctx)
}

// startExec runs the launch command and reaches its worker.
func startExec(ctx context.Context, cfg ipc.ExecConfig) (remoteClient, error) {
	c, err := ipc.StartExec(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return execClient{c}, nil
}

// Launch takes the transcript's lease, opens (or repairs) the transcript
// and writes the attempt's start entry and prompt, starts the command,
// sends the attempt and ships the workspace. A transcript it cannot take
// or open yields a worker whose only message is the refusal, as a local
// worker's would be.
func (l *Launcher) Launch(ctx context.Context, spec ipc.AttemptSpec) (ipc.Worker, error) {
	if spec.Remote == nil || spec.Remote.Workspace == nil {
		return nil, errors.New("a remote attempt needs its worktree: every remote child works in one")
	}
	info, err := worktree.Find(ctx, spec.InkHome, spec.SessionID)
	if err != nil {
		return nil, fmt.Errorf("the remote child's worktree: %w", err)
	}
	if info.Record.Path != spec.Remote.Workspace.Path {
		return nil, fmt.Errorf("the remote child's worktree is at %s, not %s", info.Record.Path, spec.Remote.Workspace.Path)
	}
	heartbeat := spec.HeartbeatInterval
	if heartbeat <= 0 {
		heartbeat = lease.DefaultHeartbeat
	}
	syncDirs, err := durable.MkdirAllLater(durable.OS, filepath.Dir(spec.Transcript), 0o700)
	if err != nil {
		return nil, fmt.Errorf("transcript directory: %w", err)
	}
	ls, err := lease.AcquireWith(spec.Transcript, lease.Owner{AttemptID: spec.AttemptID, Agent: spec.Label, SessionID: spec.SessionID},
		lease.Options{Heartbeat: heartbeat, SyncLater: spec.Create != nil})
	if err != nil {
		if errors.Is(err, lease.ErrBusy) {
			return refusedAttempt(spec, session.CodeStillRunning, err.Error()), nil
		}
		if errors.Is(err, lease.ErrBadLeaseFile) {
			return refusedAttempt(spec, session.CodeMalformed, err.Error()), nil
		}
		return nil, err
	}
	if spec.Budget > 0 {
		// What is left of the tree's budget goes into the lease record,
		// for `ink status`, as a local worker puts it into its own; Send
		// keeps it current with every Budget message.
		ls.SetBudget(spec.Budget, spec.BudgetRemaining)
	}
	ls.StartHeartbeat(heartbeat)
	start := session.AttemptEntry{Phase: session.PhaseStart, AttemptID: spec.AttemptID, Epoch: ls.Epoch(), Pid: os.Getpid(), Time: time.Now().UTC()}
	req := session.OpenRequest{
		Path: spec.Transcript, Create: spec.Create, ExpectHeader: spec.ExpectHeader, Repair: spec.Repair,
		Start: start, Prompt: model.UserText(spec.Prompt),
		Lost: func(lost session.AttemptEntry) (string, bool) {
			return ls.LostAttempt(lost.AttemptID)
		},
	}
	for _, ans := range spec.Answers {
		req.Answers = append(req.Answers, ans.WithRecord())
	}
	if spec.Create != nil {
		req.SyncBefore = func() error {
			if err := syncDirs(); err != nil {
				return err
			}
			return ls.SyncRecord()
		}
	}
	opened, refused, err := session.OpenAttempt(req)
	if err != nil || refused != nil {
		_ = ls.Release()
		if err != nil {
			return nil, err
		}
		return refusedAttempt(spec, refused.Code, refused.Reason), nil
	}
	rw := &remoteWorker{
		spec: spec, lease: ls, w: opened.Writer, lifetime: opened.Lifetime, start: start,
		fence: session.NewFence(opened.Writer, opened.View, spec.AttemptID, ls.Epoch(), ls.Check),
		ws:    l.workspace, rec: info.Record, eof: make(chan struct{}),
	}
	// From here on the transcript holds a start entry: a failure records
	// the attempt's end before it is returned.
	fail := func(err error) (ipc.Worker, error) {
		rw.finish(fmt.Sprintf("the remote worker could not start: %v", err))
		return nil, err
	}
	remote := *spec.Remote
	remote.Epoch, remote.History, remote.Reserved = ls.Epoch(), opened.View.Export(), opened.Reserved
	remote.Lifetime, remote.LifetimeEnded = opened.Lifetime, opened.Lifetime.Ended()
	sent := spec
	sent.Remote = &remote
	// What only the host reads stays on the host, and so do the paths of
	// its files.
	sent.Create, sent.ExpectHeader, sent.Answers, sent.Repair = nil, nil, nil, false
	sent.InkHome, sent.Transcript = "", ""

	logPath := filepath.Join(spec.InkHome, "logs", spec.SessionID+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return fail(err)
	}
	rw.log, err = os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	startCmd := l.start
	if startCmd == nil {
		startCmd = startExec
	}
	tr := l.transport
	if tr == nil {
		tr = execTransport{command: l.command, start: startCmd}
	}
	rw.c, err = tr.Dial(ctx, Dial{Spec: spec, Env: ipc.WorkerEnv(l.environ), Log: rw.log})
	if err != nil {
		return fail(err)
	}
	streamCtx, stop := context.WithCancel(context.Background())
	rw.stop = stop
	if rw.s, err = rw.c.Attempt(streamCtx); err != nil {
		rw.c.Kill()
		return fail(err)
	}
	if rw.beats, err = rw.c.Beats(streamCtx, spec.HeartbeatInterval); err != nil {
		rw.c.Kill()
		return fail(err)
	}
	if err := rw.s.Send(ipc.Run{Spec: sent}); err != nil {
		rw.c.Kill()
		return fail(fmt.Errorf("send the attempt: %w", err))
	}
	if err := l.ship(ctx, rw.s, info.Record, spec.Label); err != nil {
		rw.c.Kill()
		return fail(fmt.Errorf("ship the worktree %s: %w", remote.Workspace.Path, err))
	}
	return rw, nil
}

// ship streams the worktree's baseline to the worker in pieces of
// ipc.MaxChunk, as Pack writes it: memory holds one piece, not the whole.
func (l *Launcher) ship(ctx context.Context, s attemptStream, rec worktree.Record, label string) error {
	pr, pw := io.Pipe()
	go func() {
		leftOut, err := l.workspace.Pack(ctx, rec, pw, l.includes)
		if len(leftOut) > 0 && l.warn != nil {
			l.warn(label, fmt.Sprintf("the worktree's .worktreeinclude files were not shipped to the remote worker: %s (they often hold secrets; --ship-includes sends them)", strings.Join(leftOut, ", ")))
		}
		pw.CloseWithError(err)
	}()
	defer pr.Close()
	buf := make([]byte, ipc.MaxChunk)
	for {
		n, err := io.ReadFull(pr, buf)
		last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !last {
			return err
		}
		if err := s.Send(ipc.WorkspaceChunk{Data: slices.Clone(buf[:n]), Last: last}); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// remoteWorker is one remote attempt as the supervisor sees it: the
// command's worker behind its stream, and the lease, transcript and fence
// the host holds for it. Recv writes the worker's appends through the
// fence and applies its snapshots; it passes on events, task requests and
// the outcome.
type remoteWorker struct {
	spec     ipc.AttemptSpec
	c        remoteClient
	s        attemptStream
	stop     context.CancelFunc
	lease    *lease.Lease
	w        *session.Writer
	fence    *session.Fence
	start    session.AttemptEntry
	lifetime session.Lifetime
	ws       Workspace
	rec      worktree.Record
	log      *os.File

	// delta gathers the snapshot being received; applied is the last one
	// applied to the worktree.
	delta    bytes.Buffer
	deltaSeq uint64
	applied  uint64
	ended    bool // the worker's end entry was written
	beats    <-chan ipc.Heartbeat
	// lostWhy, once set by KillLost, is the reason the end is recorded
	// with.
	lostWhy atomic.Pointer[string]
	// fenceWhy is why the host closed the fence itself, if it did.
	fenceWhy   atomic.Pointer[string]
	finishOnce sync.Once
	closeOnce  sync.Once
	eofOnce    sync.Once
	eof        chan struct{}
}

var _ ipc.Worker = (*remoteWorker)(nil)

// Pid is the launch command's pid (the shell, or what it ran).
func (r *remoteWorker) Pid() int { return r.c.Pid() }

// Beats is the worker's heartbeat stream.
func (r *remoteWorker) Beats() <-chan ipc.Heartbeat { return r.beats }

// KillLost kills a worker the supervisor found lost, recording reason as
// how its attempt ended (the host holds its lease, so it writes the end).
func (r *remoteWorker) KillLost(reason string) {
	if n, ok := r.c.(LossNamer); ok {
		reason = n.NameLoss(reason)
	}
	r.lostWhy.Store(&reason)
	r.Kill()
}

// Send sends a message to the worker. What a Budget message says is left
// of the tree's budget goes into the lease record the host holds for the
// worker, as a local worker records it in its own.
func (r *remoteWorker) Send(m ipc.HostMsg) error {
	if b, ok := m.(ipc.Budget); ok && r.spec.Budget > 0 {
		r.lease.SetBudget(r.spec.Budget, b.Remaining)
	}
	return r.s.Send(m)
}

// Recv returns the worker's next event, task request or outcome, having
// handled every append and snapshot before it. When the stream breaks
// before the worker recorded its end, the end is recorded here
// (interrupted: the worker was lost), so the attempt can be resumed.
func (r *remoteWorker) Recv() (ipc.WorkerMsg, error) {
	for {
		m, err := r.s.Recv()
		if err != nil {
			r.eofOnce.Do(func() { close(r.eof) })
			why := "the remote worker's stream ended before it recorded its end"
			if !errors.Is(err, io.EOF) {
				why = fmt.Sprintf("worker lost: the remote worker's stream broke (%v)", err)
			}
			if f, ok := r.c.(Fater); ok && r.lostWhy.Load() == nil {
				if fate := f.Fate(); fate != "" {
					why = fate
				}
			}
			r.finish(why)
			return nil, err
		}
		switch m := m.(type) {
		case ipc.Append:
			if err := r.s.Send(r.append(m)); err != nil {
				return nil, err
			}
		case ipc.WorkspaceDelta:
			if err := r.receiveDelta(m); err != nil {
				r.refuse(err.Error())
			}
		default:
			return m, nil
		}
	}
}

// append passes one batch through the fence and answers it.
func (r *remoteWorker) append(m ipc.Append) ipc.Appended {
	if m.Snapshot != 0 && m.Snapshot != r.applied {
		r.refuse(fmt.Sprintf("batch %d needs snapshot %d of the worktree, which was not applied", m.Seq, m.Snapshot))
	}
	ack, err := r.fence.Append(session.Append{Seq: m.Seq, AttemptID: m.AttemptID, Epoch: m.Epoch, Lines: m.Lines, Durable: m.Durable})
	if err != nil {
		return ipc.Appended{Seq: m.Seq, Fenced: errors.Is(err, session.ErrFenced), Error: err.Error()}
	}
	for _, e := range ack.Entries {
		if e.Attempt != nil && e.Attempt.Phase == session.PhaseEnd {
			r.ended = true
		}
	}
	r.lease.Progress()
	return ipc.Appended{Seq: ack.Seq, Offsets: ack.Offsets}
}

// receiveDelta gathers one piece of a snapshot and applies the snapshot
// once its last piece came.
func (r *remoteWorker) receiveDelta(d ipc.WorkspaceDelta) error {
	if d.Seq != r.deltaSeq {
		if r.delta.Len() > 0 || d.Seq != r.applied+1 {
			return fmt.Errorf("snapshot %d of the worktree arrived out of order (after %d)", d.Seq, r.applied)
		}
		r.deltaSeq = d.Seq
	}
	if r.delta.Len()+len(d.Data) > maxSnapshot {
		return fmt.Errorf("snapshot %d of the worktree is over %d MiB", d.Seq, maxSnapshot>>20)
	}
	r.delta.Write(d.Data)
	if !d.Last {
		return nil
	}
	defer r.delta.Reset()
	if err := r.ws.Apply(context.Background(), r.rec, bytes.NewReader(r.delta.Bytes())); err != nil {
		return fmt.Errorf("snapshot %d of the worktree could not be applied: %v", d.Seq, err)
	}
	r.applied = d.Seq
	return nil
}

// refuse closes the fence for a reason of the host's own (a snapshot it
// could not apply): that reason, not the stream's end that follows, is
// how the attempt ended.
func (r *remoteWorker) refuse(why string) {
	r.fence.Close(why)
	r.fenceWhy.CompareAndSwap(nil, &why)
}

// finish records the attempt's end when the worker did not (interrupted,
// with reason), closes the fence and the transcript and releases the
// lease. Once only.
func (r *remoteWorker) finish(reason string) {
	r.finishOnce.Do(func() {
		if why := r.lostWhy.Load(); why != nil {
			reason = *why
		} else if why := r.fenceWhy.Load(); why != nil {
			reason = *why
		}
		r.fence.Close(reason)
		if !r.ended && r.lease.Check() == nil {
			end := session.LostEnd(r.start, reason, r.lifetime)
			if err := r.w.AppendAttempt(end); err != nil {
				slog.Default().Warn("remote attempt end not recorded", "attempt", r.spec.AttemptID, "err", err)
			}
		}
		_ = r.w.Close()
		_ = r.lease.Release()
		if r.log != nil {
			_ = r.log.Close()
		}
	})
}

// Close ends a worker whose outcome was acknowledged: it ends the stream,
// waits (bounded) for the worker to end its side, and shuts the command
// down.
func (r *remoteWorker) Close() {
	r.closeOnce.Do(func() {
		_ = r.s.CloseSend()
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-r.eof:
		case <-t.C:
		}
		r.c.Shutdown()
		r.stop()
		r.finish("the remote worker ended without recording its end")
	})
}

// Kill kills every process of the launch command's session at once; a worker beyond
// it (over ssh, in a container) sees its stream end and stops.
func (r *remoteWorker) Kill() {
	r.c.Kill()
	r.Close()
}

// Exit waits up to d for the launch command to end and says how.
func (r *remoteWorker) Exit(d time.Duration) (ipc.ExitState, bool) {
	if e, ok := r.c.(Exiter); ok {
		return e.Exit(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.c.Done():
	case <-t.C:
		return ipc.ExitState{}, false
	}
	st := r.c.ProcessState()
	if st == nil {
		return ipc.ExitState{}, false
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ipc.ExitState{Code: st.ExitCode()}, true
	case ws.Signaled():
		return ipc.ExitState{Signal: unix.SignalName(ws.Signal())}, true
	default:
		return ipc.ExitState{Code: ws.ExitStatus()}, true
	}
}

// refusedWorker is an attempt refused before any worker ran: its only
// message is the refusal.
type refusedWorker struct {
	out       ipc.Outcome
	once      sync.Once
	closeOnce sync.Once
	done      chan struct{}
}

// refusedAttempt returns the refusedWorker of spec, refused with code and
// reason.
func refusedAttempt(spec ipc.AttemptSpec, code session.Code, reason string) *refusedWorker {
	return &refusedWorker{out: ipc.Outcome{Status: session.StatusRefused, Code: code, Reason: reason, AttemptID: spec.AttemptID}, done: make(chan struct{})}
}

var _ ipc.Worker = (*refusedWorker)(nil)

func (r *refusedWorker) Pid() int                    { return 0 }
func (r *refusedWorker) Beats() <-chan ipc.Heartbeat { return nil }
func (r *refusedWorker) Send(ipc.HostMsg) error      { return nil }

func (r *refusedWorker) Recv() (ipc.WorkerMsg, error) {
	sent := false
	r.once.Do(func() { sent = true })
	if sent {
		return r.out, nil
	}
	<-r.done
	return nil, io.EOF
}

func (r *refusedWorker) Close() { r.closeOnce.Do(func() { close(r.done) }) }
func (r *refusedWorker) Kill()  { r.Close() }
func (r *refusedWorker) Exit(time.Duration) (ipc.ExitState, bool) {
	return ipc.ExitState{}, true
}

// worktreeShipping is the RemoteWorkspace of the worktree package.
type worktreeShipping struct{}

// Pack writes the worktree with worktree.Pack.
func (worktreeShipping) Pack(ctx context.Context, rec worktree.Record, w io.Writer, includes bool) ([]string, error) {
	shipped, err := worktree.Pack(ctx, rec, w, worktree.PackOptions{ShipIncludes: includes})
	return shipped.LeftOut, err
}

// Apply applies a snapshot with worktree.ApplySnapshot, within its bounds.
func (worktreeShipping) Apply(ctx context.Context, rec worktree.Record, r io.Reader) error {
	_, err := worktree.ApplySnapshot(ctx, rec, r, worktree.ApplyOptions{})
	return err
}
