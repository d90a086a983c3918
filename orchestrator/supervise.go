package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/ipc/pb"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// agentRun is one agent (main or child) during one attempt.
type agentRun struct {
	label      string
	sessionID  string
	transcript string
	depth      int
	binding    model.Binding
	system     string
	files      []session.FileRef // the instruction files in system, for launch records
	tools      []string
	cwd, root  string
	agent      string

	// onLaunch, when set, runs once before the first child is launched,
	// after every rejection check passed (a shell parent writes its
	// session only then, so a rejected `ink task` leaves no file).
	onLaunch func() error

	mu       sync.Mutex
	children int // child ordinal for labels
}

func (ar *agentRun) nextChildLabel() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.children++
	return fmt.Sprintf("%s/%d", ar.label, ar.children)
}

// attemptResult is how a worker's attempt ended, as the orchestrator saw it.
type attemptResult struct {
	Status    string
	Reason    string
	Text      string
	Turns     int
	Usage     model.Usage
	AttemptID string
	Epoch     int64
	Pid       int
	// Launched is false when no worker process ever started.
	Launched bool
}

// runAttempt starts a worker for spec and supervises it to the end: it
// forwards events, answers task requests, cancels on ctx or timeout, kills
// after the grace, and detects a hung or dead worker. onStart is called with
// the worker's pid once it is up.
func (o *Orchestrator) runAttempt(ctx context.Context, ar *agentRun, spec ipc.AttemptSpec, timeout time.Duration, onStart func(pid int)) attemptResult {
	res := attemptResult{AttemptID: spec.AttemptID}
	o.arm(&spec)
	specJSON, err := json.Marshal(spec)
	if err != nil {
		res.Status, res.Reason = ipc.StatusCrash, fmt.Sprintf("encode attempt: %v", err)
		return res
	}
	cmd := exec.Command(o.cfg.Exe, "worker")
	cmd.Env = append(workerEnv(o.cfg.Environ), "INK_WORKER_LOG="+filepath.Join(o.cfg.InkHome, "logs", ar.sessionID+".log"))
	cmd.Dir = ar.cwd
	c, err := ipc.Start(ctx, ipc.ClientConfig{Cmd: cmd, SocketDir: filepath.Join(o.cfg.InkHome, "run"), Logger: o.cfg.Logger})
	if err != nil {
		res.Status, res.Reason = ipc.StatusCrash, fmt.Sprintf("could not start the worker: %v", err)
		return res
	}
	defer c.Kill()
	if !o.track(c) {
		res.Status, res.Reason = ipc.StatusAborted, "killed by the user before it started"
		return res
	}
	defer o.untrack(c)
	res.Launched, res.Pid = true, c.Pid()
	if onStart != nil {
		onStart(res.Pid)
	}

	streamCtx, stopStream := context.WithCancel(context.Background())
	defer stopStream()
	stream, err := c.Attempt(streamCtx)
	if err != nil {
		res.Status, res.Reason = ipc.StatusCrash, fmt.Sprintf("worker stream: %v", err)
		return res
	}
	var sendMu sync.Mutex
	send := func(m *pb.HostMsg) {
		sendMu.Lock()
		defer sendMu.Unlock()
		if err := stream.Send(m); err != nil {
			o.cfg.Logger.Debug("Send to worker failed", "agent", ar.label, "err", err)
		}
	}
	send(&pb.HostMsg{Msg: &pb.HostMsg_Run{Run: &pb.Run{Spec: specJSON}}})

	msgs := make(chan *pb.WorkerMsg)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-streamCtx.Done():
				return
			}
		}
	}()

	childCtx, cancelChildren := context.WithCancelCause(context.Background())
	defer cancelChildren(nil)
	var tasks sync.WaitGroup
	defer tasks.Wait()

	var timeoutC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	hung := time.NewTicker(o.cfg.HeartbeatInterval)
	defer hung.Stop()
	var grace <-chan time.Time
	cancelStatus, cancelReason := "", ""
	cancel := func(status, reason string) {
		if cancelStatus != "" {
			return
		}
		cancelStatus, cancelReason = status, reason
		send(&pb.HostMsg{Msg: &pb.HostMsg_Cancel{Cancel: &pb.Cancel{Status: status, Reason: reason}}})
		cancelChildren(errors.New(reason))
		grace = time.After(o.cfg.Grace)
	}
	done := ctx.Done()
	labels := map[string]string{}

	for {
		select {
		case m := <-msgs:
			switch {
			case m.GetEvent() != nil:
				o.forward(ar, m.GetEvent())
				labelTaskCalls(ar, m.GetEvent(), labels)
			case m.GetTask() != nil:
				req := m.GetTask()
				// Labels follow the order of the calls in the assistant
				// message, whatever order the requests arrive in.
				label, ok := labels[req.GetToolCallId()]
				if !ok {
					label = ar.nextChildLabel()
				}
				tasks.Add(1)
				go func() {
					defer tasks.Done()
					ans := o.handleTask(childCtx, ar, req, label)
					ans.CorrelationId = req.GetCorrelationId()
					send(&pb.HostMsg{Msg: &pb.HostMsg_Answer{Answer: ans}})
				}()
			case m.GetOutcome() != nil:
				out := m.GetOutcome()
				res.Status, res.Reason, res.Text = out.GetStatus(), out.GetReason(), out.GetText()
				res.Turns, res.Epoch = int(out.GetTurns()), out.GetEpoch()
				if u := out.GetUsage(); u != nil {
					res.Usage = model.Usage{Input: u.GetInput(), Output: u.GetOutput(), CacheRead: u.GetCacheRead(), CacheWrite: u.GetCacheWrite(), Incomplete: u.GetIncomplete()}
				}
				cancelChildren(errors.New("the parent attempt ended"))
				return res
			}
		case err := <-recvErr:
			cancelChildren(errors.New("the parent worker died"))
			res.Status, res.Reason = ipc.StatusCrash, o.deathReason(c, cmd, err)
			if cancelStatus != "" {
				res.Status = cancelStatus
			}
			return res
		case <-done:
			done = nil
			cancel(ipc.StatusAborted, "cancelled by the user")
		case <-timeoutC:
			cancel(ipc.StatusTimeout, fmt.Sprintf("timed out after %s", timeout))
		case <-grace:
			c.Kill()
			res.Status = cancelStatus
			res.Reason = fmt.Sprintf("%s; the worker did not stop within %s of the cancel, so its process group was killed", cancelReason, o.cfg.Grace)
			return res
		case <-hung.C:
			st, err := lease.Probe(spec.Transcript)
			if err == nil && st.State == lease.Hung && cancelStatus == "" {
				o.emit(ar.label, ar.sessionID, "warning", map[string]any{"text": fmt.Sprintf("worker pid %d is hung (heartbeat %s ago); cancelling it", res.Pid, st.HeartbeatAge.Round(time.Millisecond))})
				cancel(ipc.StatusCrash, fmt.Sprintf("the worker hung (no heartbeat for %s)", st.HeartbeatAge.Round(time.Millisecond)))
			}
		}
	}
}

// deathReason explains a worker whose stream broke before its outcome,
// naming the signal that killed it when there was one.
func (o *Orchestrator) deathReason(c *ipc.Client, cmd *exec.Cmd, streamErr error) string {
	deadline := time.Now().Add(3 * time.Second)
	for !c.Exited() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.Exited() && cmd.ProcessState != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				return fmt.Sprintf("the worker process (pid %d) was killed by signal %s", cmd.ProcessState.Pid(), unix.SignalName(ws.Signal()))
			case ws.Exited():
				return fmt.Sprintf("the worker process (pid %d) exited with status %d before reporting an outcome", cmd.ProcessState.Pid(), ws.ExitStatus())
			}
		}
	}
	if p, err := os.FindProcess(c.Pid()); err == nil && p.Signal(syscall.Signal(0)) != nil {
		return fmt.Sprintf("the worker process (pid %d) died: %v", c.Pid(), streamErr)
	}
	return fmt.Sprintf("lost the worker's stream: %v", streamErr)
}

// forward re-emits a worker event under the agent's label.
func (o *Orchestrator) forward(ar *agentRun, ev *pb.Event) {
	fields := map[string]any{}
	if len(ev.GetData()) > 0 {
		if err := json.Unmarshal(ev.GetData(), &fields); err != nil {
			fields = map[string]any{"raw": string(ev.GetData())}
		}
	}
	fields["workerSeq"] = ev.GetSeq()
	o.emit(ar.label, ar.sessionID, ev.GetType(), fields)
}

// labelTaskCalls gives each task call of an assistant message its child
// label, in call order. The worker streams the message before it runs the
// calls, so the labels are known before the task requests arrive.
func labelTaskCalls(ar *agentRun, ev *pb.Event, labels map[string]string) {
	if ev.GetType() != "message" {
		return
	}
	var body struct {
		Message model.Message `json:"message"`
	}
	if json.Unmarshal(ev.GetData(), &body) != nil || body.Message.Role != model.RoleAssistant {
		return
	}
	for _, c := range body.Message.ToolCalls {
		if c.Name == "task" {
			labels[c.ID] = ar.nextChildLabel()
		}
	}
}
