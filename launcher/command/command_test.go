package command

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// The exec launcher's host side, with the worker behind its command played
// in memory: the transcript, the lease and the worktree are the default
// ones (real files and git), the stream is a pair of channels.

// memStream is one side of an in-memory attempt stream.
type memStream struct {
	toWorker chan ipc.HostMsg
	toHost   chan ipc.WorkerMsg
	once     sync.Once
	broken   chan struct{}
	sendOnce sync.Once
}

func newMemStream() *memStream {
	return &memStream{toWorker: make(chan ipc.HostMsg, 64), toHost: make(chan ipc.WorkerMsg, 64), broken: make(chan struct{})}
}

// breakIt ends the stream for both sides, as a dead connection does.
func (s *memStream) breakIt() { s.once.Do(func() { close(s.broken) }) }

func (s *memStream) Send(m ipc.HostMsg) error {
	select {
	case <-s.broken:
		return errors.New("stream broken")
	case s.toWorker <- m:
		return nil
	}
}

func (s *memStream) Recv() (ipc.WorkerMsg, error) {
	select {
	case m := <-s.toHost:
		return m, nil
	case <-s.broken:
		select {
		case m := <-s.toHost:
			return m, nil
		default:
		}
		return nil, errors.New("stream broken: connection reset")
	}
}

func (s *memStream) CloseSend() error {
	s.sendOnce.Do(func() { close(s.toWorker) })
	return nil
}

// memRemote is the command's side: its worker runs play in a goroutine.
type memRemote struct {
	s     *memStream
	done  chan struct{}
	beats chan ipc.Heartbeat
	once  sync.Once
}

func (c *memRemote) Pid() int { return 4242 }
func (c *memRemote) Attempt(context.Context) (attemptStream, error) {
	return c.s, nil
}
func (c *memRemote) Beats(context.Context, time.Duration) (<-chan ipc.Heartbeat, error) {
	return c.beats, nil
}
func (c *memRemote) Kill()                          { c.stop() }
func (c *memRemote) Shutdown()                      { c.stop() }
func (c *memRemote) Done() <-chan struct{}          { return c.done }
func (c *memRemote) ProcessState() *os.ProcessState { return nil }
func (c *memRemote) stop() {
	c.once.Do(func() {
		c.s.breakIt()
		close(c.done)
	})
}

// remotePlay is the worker's view of its stream.
type remotePlay struct {
	t    *testing.T
	s    *memStream
	run  ipc.AttemptSpec
	seq  uint64
	base []byte // the workspace as shipped
}

// next is the host's next message.
func (p *remotePlay) next() ipc.HostMsg {
	select {
	case m, ok := <-p.s.toWorker:
		if !ok {
			return nil
		}
		return m
	case <-p.s.broken:
		return nil
	}
}

// append sends entries as the next batch (seq bumped unless given) and
// returns the host's answer.
func (p *remotePlay) append(a ipc.Append, entries ...session.Entry) ipc.Appended {
	_, lines, err := session.EncodeEntries(entries...)
	if err != nil {
		p.t.Error(err)
		return ipc.Appended{}
	}
	if a.Seq == 0 {
		p.seq++
		a.Seq = p.seq
	}
	if a.AttemptID == "" {
		a.AttemptID = p.run.AttemptID
	}
	if a.Epoch == 0 {
		a.Epoch = p.run.Remote.Epoch
	}
	if a.Lines == nil {
		a.Lines = lines
	}
	p.s.toHost <- a
	m, _ := p.next().(ipc.Appended)
	return m
}

// execRig launches remote children in a real repository and INK_HOME,
// their workers played in memory; it is also their Workspace.
type execRig struct {
	t       *testing.T
	repo    string
	home    string
	applied [][]byte
	packed  []byte
	mu      sync.Mutex
}

func (r *execRig) Pack(_ context.Context, rec worktree.Record, w io.Writer, includes bool) ([]string, error) {
	r.packed = []byte("baseline of " + rec.Path)
	_, err := w.Write(r.packed)
	return []string{".env"}, err
}

func (r *execRig) Apply(_ context.Context, _ worktree.Record, rd io.Reader) error {
	b, err := io.ReadAll(rd)
	if bytes.HasPrefix(b, []byte("bad")) {
		return errors.New("not a bundle")
	}
	r.mu.Lock()
	r.applied = append(r.applied, b)
	r.mu.Unlock()
	return err
}

func newExecRig(t *testing.T) *execRig {
	return &execRig{t: t, repo: gitRepo(t), home: t.TempDir()}
}

// gitRepo makes a repository with one commit in a temporary directory and
// returns its path (symlinks resolved, as git reports it).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"-c", "user.name=t", "-c", "user.email=t@ink.invalid", "commit", "-q", "-m", "first"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// childSpec makes the worktree of a new child in the rig's repository and
// returns the spec of its first attempt, remote, and its transcript path.
func (r *execRig) childSpec() ipc.AttemptSpec {
	r.t.Helper()
	ctx := context.Background()
	repo, err := worktree.Detect(ctx, r.repo)
	if err != nil {
		r.t.Fatal(err)
	}
	child := session.NewID()
	rec, err := worktree.CreateFor(ctx, repo, r.home, child, os.Getpid(), worktree.Origin{})
	if err != nil {
		r.t.Fatal(err)
	}
	path := session.ChildPath(session.MainPath(r.home, r.repo, session.NewID()), child)
	return ipc.AttemptSpec{
		InkHome: r.home, Transcript: path, AttemptID: session.NewID(), SessionID: child, Label: "main/1",
		Binding: model.Binding{Provider: "script", Model: "/s.yaml"}, Cwd: rec.Path, Root: rec.Path, Prompt: "work remotely", Depth: 1,
		HeartbeatInterval: 25 * time.Millisecond,
		Create:            &session.Header{Type: "session", Version: session.Version, ID: child, CreatedAt: time.Now().UTC(), Cwd: rec.Path},
		Remote:            &ipc.RemoteSpec{Workspace: &ipc.RemoteWorkspace{Path: rec.Path, Baseline: rec.Baseline, Branch: rec.Branch}},
	}
}

// launcher is the rig's Launcher, its workers playing play in memory.
func (r *execRig) launcher(play func(p *remotePlay)) *Launcher {
	l := New(Config{Command: "worker", Workspace: r})
	l.start = func(ctx context.Context, cfg ipc.ExecConfig) (remoteClient, error) {
		c := &memRemote{s: newMemStream(), done: make(chan struct{}), beats: make(chan ipc.Heartbeat, 1)}
		go func() {
			p := &remotePlay{t: r.t, s: c.s}
			run, _ := p.next().(ipc.Run)
			p.run = run.Spec
			for {
				chunk, ok := p.next().(ipc.WorkspaceChunk)
				if !ok {
					break
				}
				p.base = append(p.base, chunk.Data...)
				if chunk.Last {
					break
				}
			}
			play(p)
		}()
		return c, nil
	}
	return l
}

// run launches a new child on a worker playing play, as the supervisor
// would: it receives until the outcome, acknowledges it and closes the
// worker. It returns the outcome (or the stream's error) and the spec.
func (r *execRig) run(play func(p *remotePlay)) (ipc.Outcome, error, ipc.AttemptSpec) {
	r.t.Helper()
	spec := r.childSpec()
	w, err := r.launcher(play).Launch(context.Background(), spec)
	if err != nil {
		r.t.Fatalf("Launch: %v", err)
	}
	defer w.Close()
	for {
		m, err := w.Recv()
		if err != nil {
			return ipc.Outcome{}, err, spec
		}
		if out, ok := m.(ipc.Outcome); ok {
			if err := w.Send(ipc.Ack{}); err != nil {
				r.t.Errorf("Ack: %v", err)
			}
			return out, nil, spec
		}
	}
}

// transcript reads the child's transcript.
func (r *execRig) transcript(spec ipc.AttemptSpec) *session.Transcript {
	r.t.Helper()
	tr, err := session.Open(spec.Transcript)
	if err != nil {
		r.t.Fatal(err)
	}
	return tr
}

func assistantSays(text string) session.Entry {
	m := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: text}}}
	return session.Entry{Message: &m}
}

// TestExecLauncherCompletes: the host takes the lease, writes the start
// and prompt, sends an attempt that names no path of its own but the
// worktree's, ships the workspace, writes each batch through the fence
// after the snapshot it needs, answers a re-sent batch once, and the
// child's answer comes back as from a local worker.
func TestExecLauncherCompletes(t *testing.T) {
	t.Parallel()
	r := newExecRig(t)
	var sawSpec ipc.AttemptSpec
	var resent, second ipc.Appended
	out, err, spec := r.run(func(p *remotePlay) {
		sawSpec = p.run
		call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "ls", Args: []byte(`{}`)}}}
		p.append(ipc.Append{}, session.Entry{Message: &call})
		p.s.toHost <- ipc.WorkspaceDelta{Seq: 1, Data: []byte("snap"), Last: false}
		p.s.toHost <- ipc.WorkspaceDelta{Seq: 1, Data: []byte("shot 1"), Last: true}
		result := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c1", ToolName: "ls", Content: "README"}}}
		_, lines, _ := session.EncodeEntries(session.Entry{Message: &result})
		second = p.append(ipc.Append{Durable: true, Snapshot: 1, Lines: lines})
		resent = p.append(ipc.Append{Seq: second.Seq, Durable: true, Snapshot: 1, Lines: lines})
		u := model.Usage{Input: 10, Output: 2}
		life := p.run.Remote.Lifetime.WithEnded(p.run.Remote.LifetimeEnded).With(&u)
		p.append(ipc.Append{Durable: true}, assistantSays("all seen"),
			session.Entry{Attempt: &session.AttemptEntry{Phase: session.PhaseEnd, AttemptID: p.run.AttemptID, Epoch: p.run.Remote.Epoch, Status: session.StatusCompleted, Turns: 2, Usage: &u, FinalText: "all seen", FinalTextLen: 8, Lifetime: &life}})
		p.s.toHost <- ipc.Outcome{Status: session.StatusCompleted, Text: "all seen", Turns: 2, Usage: u, AttemptID: p.run.AttemptID, Epoch: p.run.Remote.Epoch}
		if _, ok := p.next().(ipc.Ack); !ok {
			t.Error("no Ack after the outcome")
		}
	})
	if err != nil || out.Status != session.StatusCompleted || out.Text != "all seen" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if sawSpec.InkHome != "" || sawSpec.Transcript != "" || sawSpec.Create != nil || sawSpec.Remote == nil || sawSpec.Remote.Epoch == 0 ||
		len(sawSpec.Remote.History) != 1 || sawSpec.Remote.History[0].Message.Text() != "work remotely" {
		t.Errorf("the worker got %+v", sawSpec)
	}
	if string(r.packed) == "" || !strings.HasSuffix(string(r.packed), sawSpec.Remote.Workspace.Path) {
		t.Errorf("shipped %q for the worktree %s", r.packed, sawSpec.Remote.Workspace.Path)
	}
	if len(r.applied) != 1 || string(r.applied[0]) != "snapshot 1" {
		t.Errorf("applied %q, want the one snapshot", r.applied)
	}
	if resent.Seq != second.Seq || resent.Fenced || len(resent.Offsets) != 1 || resent.Offsets[0] != second.Offsets[0] {
		t.Errorf("a re-sent batch was answered %+v, first %+v", resent, second)
	}
	tr := r.transcript(spec)
	end, ok := tr.LastAttemptEnd()
	if !ok || end.Status != session.StatusCompleted || len(tr.Messages) != 4 || tr.Torn != nil {
		t.Fatalf("transcript: %d messages, end %+v (%v)", len(tr.Messages), end, ok)
	}
	if st, err := lease.Probe(tr.Path); err != nil || st.State != lease.Free {
		t.Errorf("the transcript's lease after the attempt: %+v, %v", st, err)
	}
}

// TestExecLauncherFencesABadBatch: a batch under another epoch is refused
// as fenced and written nowhere; the worker stops; the host records the
// end it never wrote, and the child can be resumed.
func TestExecLauncherFencesABadBatch(t *testing.T) {
	t.Parallel()
	r := newExecRig(t)
	var refused ipc.Appended
	out, err, spec := r.run(func(p *remotePlay) {
		refused = p.append(ipc.Append{Epoch: p.run.Remote.Epoch + 7}, assistantSays("stale"))
		p.s.toHost <- ipc.Outcome{Status: session.StatusCrash, Reason: refused.Error, AttemptID: p.run.AttemptID, Epoch: p.run.Remote.Epoch}
		p.next()
	})
	if !refused.Fenced || !strings.Contains(refused.Error, "epoch") {
		t.Errorf("the stale batch was answered %+v", refused)
	}
	if err != nil || out.Status != session.StatusCrash || !strings.Contains(out.Reason, "fenced") {
		t.Errorf("outcome %+v, %v", out, err)
	}
	tr := r.transcript(spec)
	for _, m := range tr.Messages {
		if strings.Contains(m.Text(), "stale") {
			t.Errorf("the fenced batch was written: %q", m.Text())
		}
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != session.StatusInterrupted {
		t.Errorf("end %+v (%v), want the host's interrupted end", end, ok)
	}
}

// TestExecLauncherLosesItsStream: a stream that breaks before the worker
// recorded its end leaves an interrupted attempt, its end written by the
// host; a snapshot that cannot be applied closes the fence first.
func TestExecLauncherLosesItsStream(t *testing.T) {
	t.Parallel()
	r := newExecRig(t)
	var afterBad ipc.Appended
	_, err, spec := r.run(func(p *remotePlay) {
		p.append(ipc.Append{}, assistantSays("working"))
		p.s.toHost <- ipc.WorkspaceDelta{Seq: 1, Data: []byte("bad bundle"), Last: true}
		afterBad = p.append(ipc.Append{Durable: true, Snapshot: 1}, assistantSays("after the snapshot"))
		p.s.breakIt()
	})
	if !afterBad.Fenced || !strings.Contains(afterBad.Error, "could not be applied") {
		t.Errorf("a batch after an unapplied snapshot was answered %+v", afterBad)
	}
	if err == nil {
		t.Fatal("the broken stream went unnoticed")
	}
	end, ok := r.transcript(spec).LastAttemptEnd()
	if !ok || end.Status != session.StatusInterrupted || !strings.Contains(end.Reason, "snapshot 1") {
		t.Errorf("end %+v (%v), want interrupted naming the snapshot", end, ok)
	}
}

// TestExecLauncherRefusesAndFails: a transcript whose lease another holder
// has is refused before any worker runs; a command that cannot start
// records the attempt's end and says why.
func TestExecLauncherRefusesAndFails(t *testing.T) {
	t.Parallel()
	r := newExecRig(t)
	ctx := context.Background()
	spec := r.childSpec()
	path, child := spec.Transcript, spec.SessionID
	if err := os.MkdirAll(strings.TrimSuffix(path, "/"+child+".jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := lease.Acquire(path, lease.Owner{AttemptID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{Command: "worker", Workspace: r})
	w, err := l.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := w.Recv(); err != nil || out.(ipc.Outcome).Status != session.StatusRefused || out.(ipc.Outcome).Code != session.CodeStillRunning {
		t.Errorf("a held transcript: %+v, %v", out, err)
	}
	if w.Pid() != 0 || w.Beats() != nil || w.Send(ipc.Ack{}) != nil {
		t.Error("a refused attempt has a process")
	}
	if _, exited := w.Exit(0); !exited {
		t.Error("a refused attempt's worker has not exited")
	}
	w.Kill()
	if _, err := w.Recv(); err != io.EOF {
		t.Errorf("after the refusal: %v", err)
	}
	_ = held.Release()

	l.start = func(context.Context, ipc.ExecConfig) (remoteClient, error) {
		return nil, errors.New("ssh: connect to host buildbox: Connection refused")
	}
	if _, err := l.Launch(ctx, spec); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Fatalf("Launch = %v", err)
	}
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != session.StatusInterrupted || !strings.Contains(end.Reason, "could not start: ssh") {
		t.Errorf("end %+v (%v), want the failed start recorded", end, ok)
	}
	bad := spec
	bad.Remote = nil
	if _, err := l.Launch(ctx, bad); err == nil || !strings.Contains(err.Error(), "needs its worktree") {
		t.Errorf("a remote attempt without a workspace: %v", err)
	}
}

// TestExecLauncherRecordsBudget: under a budget the host records in the
// lease record it holds for a remote worker what is left of the tree's
// budget — at launch, then as each Budget message says — as a local
// worker records it in its own, so `ink status` shows it.
func TestExecLauncherRecordsBudget(t *testing.T) {
	t.Parallel()
	r := newExecRig(t)
	spec := r.childSpec()
	spec.Budget, spec.BudgetRemaining = 100_000, 90_000
	told := make(chan ipc.Budget, 1)
	w, err := r.launcher(func(p *remotePlay) {
		b, _ := p.next().(ipc.Budget)
		told <- b
		p.s.toHost <- ipc.Outcome{Status: session.StatusCompleted, Text: "done", AttemptID: p.run.AttemptID, Epoch: p.run.Remote.Epoch}
		p.next()
	}).Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	recorded := func(want int64) {
		t.Helper()
		var got *lease.Budget
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			st, err := lease.Probe(spec.Transcript)
			if err != nil {
				t.Fatal(err)
			}
			if st.Meta != nil && st.Meta.Budget != nil {
				if got = st.Meta.Budget; *got == (lease.Budget{Limit: 100_000, Remaining: want}) {
					return
				}
			}
		}
		t.Fatalf("the lease record's budget is %+v, want %d of 100000 left", got, want)
	}
	recorded(90_000)
	if err := w.Send(ipc.Budget{Remaining: 70_000}); err != nil {
		t.Fatal(err)
	}
	if b := <-told; b.Remaining != 70_000 {
		t.Errorf("the worker was told %+v", b)
	}
	recorded(70_000)
	if out, err := w.Recv(); err != nil || out.(ipc.Outcome).Status != session.StatusCompleted {
		t.Fatalf("outcome %+v, %v", out, err)
	}
}
