package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// The test binary doubles as the worker and as a host: TestMain looks at
// roleEnv and, when it is set, plays that role instead of running tests.
const (
	roleEnv           = "INK_IPC_TEST_ROLE"
	logEnv            = "INK_IPC_TEST_LOG"
	pidFileEnv        = "INK_IPC_TEST_PIDFILE"
	connectTimeoutEnv = "INK_IPC_TEST_CONNECT_TIMEOUT"
	socketDirEnv      = "INK_IPC_TEST_SOCKETDIR"
	markerEnv         = "INK_IPC_TEST_MARKER"
	hostModeEnv       = "INK_IPC_TEST_HOST_MODE"
	// hostOnlyEnv is set in the test process only; a worker must not see it.
	hostOnlyEnv = "INK_IPC_TEST_HOST_ONLY"
)

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		_ = os.Setenv(hostOnlyEnv, "leaked")
		os.Exit(m.Run())
	case "worker":
		runWorker(ProtocolVersion, ProtocolVersion)
	case "worker-next":
		runWorker(ProtocolVersion+1, ProtocolVersion+1)
	case "worker-info-next":
		runWorker(ProtocolVersion, ProtocolVersion+1)
	case "mute":
		writePidFile()
		time.Sleep(time.Minute)
	case "exit":
		// The floor for spawn benchmarks: start and exit at once.
	case "crash-early":
		fmt.Fprintln(os.Stderr, "panic: worker could not open its transcript")
		os.Exit(3)
	case "host":
		runHost()
	case "remote-worker":
		writePidFile()
		if err := ServeRemote(echoHandler{}, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "remote-worker-other-version":
		fmt.Printf("%s %d v0.0.1-elsewhere\n", remoteGreeting, ProtocolVersion)
	case "remote-worker-chatty":
		fmt.Println("Welcome to buildbox! Last login: yesterday")
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", roleEnv, role)
		os.Exit(2)
	}
	os.Exit(0)
}

func writePidFile() {
	if p := os.Getenv(pidFileEnv); p != "" {
		_ = os.WriteFile(p, []byte(fmt.Sprint(os.Getpid())), 0o600)
	}
}

// runWorker serves the echo handler, logging to the file named by logEnv.
func runWorker(handshakeVersion, infoVersion int) {
	writePidFile()
	logger := slog.New(slog.DiscardHandler)
	if p := os.Getenv(logEnv); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	timeout := defaultConnectTimeout
	if d, err := time.ParseDuration(os.Getenv(connectTimeoutEnv)); err == nil {
		timeout = d
	}
	serve(echoHandler{}, logger, serveOptions{
		handshakeVersion: handshakeVersion,
		infoVersion:      infoVersion,
		connectTimeout:   timeout,
	})
}

// workerReport is what the echo handler tells the host about its process.
type workerReport struct {
	Pid        int    `json:"pid"`
	Pgid       int    `json:"pgid"`
	Sid        int    `json:"sid"`
	Stdin      string `json:"stdin"`
	HostOnly   string `json:"hostOnly"`
	Cookie     bool   `json:"cookie"`
	SocketDir  string `json:"socketDir"`
	AllowedEnv string `json:"allowedEnv"`
	ChildPid   int    `json:"childPid,omitempty"`
}

func report() workerReport {
	pgid, sid := procGroupAndSession(os.Getpid())
	stdin, _ := os.Readlink("/proc/self/fd/0")
	return workerReport{
		Pid:        os.Getpid(),
		Pgid:       pgid,
		Sid:        sid,
		Stdin:      stdin,
		HostOnly:   os.Getenv(hostOnlyEnv),
		Cookie:     IsWorkerProcess(),
		SocketDir:  os.Getenv("PLUGIN_UNIX_SOCKET_DIR"),
		AllowedEnv: os.Getenv("INK_IPC_TEST_ALLOWED"),
	}
}

// echoHandler plays a worker. The Run spec's Label is the mode and its
// Prompt the payload.
type echoHandler struct{}

func (echoHandler) Attempt(stream *WorkerStream) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	run, ok := first.(Run)
	if !ok {
		return errors.New("first message is not Run")
	}
	mode, payload := run.Spec.Label, []byte(run.Spec.Prompt)
	switch mode {
	case "roundtrip":
		return roundTrip(stream, payload)
	case "big":
		if err := stream.Send(note(1, string(payload))); err != nil {
			return err
		}
		return stream.Send(outcome("completed", fmt.Sprintf("received %d bytes", len(payload))))
	case "spawn":
		return spawn(stream, string(payload))
	case "hold":
		return hold(stream, string(payload))
	case "panic":
		panic("transcript torn at line 12")
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
}

// note is a warning event carrying text.
func note(seq uint64, text string) Event {
	return Event{Seq: seq, Body: event.Warning{Text: text}}
}

func outcome(status session.Status, text string) Outcome {
	return Outcome{Status: status, Text: text, Turns: 1, AttemptID: "att-1", Epoch: 3, Usage: model.Usage{Input: 120, Output: 8}}
}

// roundTrip reports the worker's process, asks the host for a task and
// echoes the answer's record status in an event and its content in the
// outcome; then it waits for the host's Ack.
func roundTrip(stream *WorkerStream, args []byte) error {
	rep, _ := json.Marshal(report())
	if err := stream.Send(note(1, string(rep))); err != nil {
		return err
	}
	if err := stream.Send(TaskRequest{CorrelationID: "c1", ToolCallID: "call-1", Args: args}); err != nil {
		return err
	}
	msg, err := stream.Recv()
	if err != nil {
		return err
	}
	ans, ok := msg.(TaskAnswer)
	if !ok || ans.CorrelationID != "c1" || ans.Record == nil {
		return fmt.Errorf("expected the answer to c1 with a record, got %#v", msg)
	}
	if err := stream.Send(Event{Seq: 2, Body: event.ToolEnd{ID: "call-1", Name: "task", IsError: ans.Record.Status != session.StatusCompleted}}); err != nil {
		return err
	}
	if err := stream.Send(outcome("completed", "answered: "+ans.Content)); err != nil {
		return err
	}
	if m, err := stream.Recv(); err != nil || m != (Ack{}) {
		return fmt.Errorf("expected Ack after the outcome, got %#v, %v", m, err)
	}
	return nil
}

// spawn starts a long sleep in the worker's process group and waits for the
// stream to end. With payload "hold-stderr" the sleep also keeps the
// worker's original stderr open, as a careless grandchild would.
func spawn(stream *WorkerStream, payload string) error {
	cmd := exec.Command("sleep", "300")
	if payload == "hold-stderr" {
		cmd.Stderr = os.NewFile(2, "original-stderr")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	rep := report()
	rep.ChildPid = cmd.Process.Pid
	data, _ := json.Marshal(rep)
	if err := stream.Send(note(1, string(data))); err != nil {
		return err
	}
	<-stream.Context().Done()
	return stream.Context().Err()
}

// hold waits for the stream to end, then does what a worker does after
// losing its host, noting each step in the marker file.
func hold(stream *WorkerStream, marker string) error {
	note := func(s string) {
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			_, _ = f.WriteString(s + "\n")
			_ = f.Close()
		}
	}
	note("started")
	<-stream.Context().Done()
	note("ctx done: " + stream.Context().Err().Error())
	// Stray output well beyond a pipe's buffer must neither block nor kill.
	chunk := strings.Repeat("stray output from the worker\n", 10_000)
	_, _ = io.WriteString(os.Stdout, chunk)
	_, _ = io.WriteString(os.Stderr, chunk)
	log.Print("standard log line after the host died")
	_, _ = os.NewFile(2, "original-stderr").WriteString("direct write to the original stderr\n")
	note("finished")
	return stream.Context().Err()
}

// runHost starts a worker, opens an attempt in "hold" mode (unless
// hostModeEnv is "idle"), prints the worker's pid and then waits to be
// killed.
func runHost() {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{
		roleEnv + "=worker",
		logEnv + "=" + os.Getenv(logEnv),
		"PATH=" + os.Getenv("PATH"),
	}
	ctx := context.Background()
	c, err := Start(ctx, ClientConfig{Cmd: cmd, SocketDir: os.Getenv(socketDirEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
	if os.Getenv(hostModeEnv) == "idle" {
		fmt.Println(c.Pid())
		select {}
	}
	stream, err := c.Attempt(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
	if err := stream.Send(runMsg("hold", os.Getenv(markerEnv))); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
	fmt.Println(c.Pid())
	_, _ = stream.Recv()
	select {}
}

// procState returns the state letter and process group of pid from
// /proc/<pid>/stat, and false if there is no such process.
func procState(pid int) (state byte, pgid int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	var ppid int
	if _, err := fmt.Sscanf(s[i+2:], "%c %d %d", &state, &ppid, &pgid); err != nil {
		return 0, 0, false
	}
	return state, pgid, true
}

// procGroupAndSession returns the process group and session of pid.
func procGroupAndSession(pid int) (pgid, sid int) {
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return 0, 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	var state byte
	var ppid int
	_, _ = fmt.Sscanf(s[i+2:], "%c %d %d %d", &state, &ppid, &pgid, &sid)
	return pgid, sid
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	state, _, ok := procState(pid)
	return ok && state != 'Z'
}

// groupMembers lists the live processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		state, g, ok := procState(pid)
		if ok && g == pgid && state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// IsWorkerProcess reports whether this process was started by an ink host
// as a worker, i.e. whether the magic cookie is in its environment. [Serve]
// removes the cookie from the environment once it has been checked, so that
// processes the worker starts do not inherit it; after that
// IsWorkerProcess returns false.
func IsWorkerProcess() bool {
	return os.Getenv(MagicCookieKey) == MagicCookieValue
}
