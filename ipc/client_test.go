package ipc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/ipc/internal/pb"
	"github.com/inkdev/ink/session"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testWorker describes a worker the test starts.
type testWorker struct {
	cmd     *exec.Cmd
	logPath string
	pidFile string
}

// newWorkerCmd builds the command that re-runs the test binary in role,
// with an explicit environment.
func newWorkerCmd(t *testing.T, role string, extraEnv ...string) testWorker {
	t.Helper()
	dir := t.TempDir()
	w := testWorker{
		logPath: filepath.Join(dir, "worker.log"),
		pidFile: filepath.Join(dir, "worker.pid"),
	}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append([]string{
		roleEnv + "=" + role,
		logEnv + "=" + w.logPath,
		pidFileEnv + "=" + w.pidFile,
		"PATH=" + os.Getenv("PATH"),
	}, extraEnv...)
	t.Cleanup(func() {
		if pid := readPid(w.pidFile); pid > 0 {
			killGroup(pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return w
}

func readPid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// startWorker starts an echo worker and kills it in Cleanup.
func startWorker(t *testing.T, socketDir string, logger *slog.Logger, extraEnv ...string) (*Client, testWorker) {
	t.Helper()
	w := newWorkerCmd(t, "worker", extraEnv...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, ClientConfig{Cmd: w.cmd, SocketDir: socketDir, Logger: logger})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(c.Kill)
	return c, w
}

// runMsg is a Run whose spec tells the echo worker its mode and payload.
func runMsg(mode, payload string) Run {
	return Run{Spec: AttemptSpec{Label: mode, Prompt: payload}}
}

func recvMsg(t *testing.T, stream *HostStream) WorkerMsg {
	t.Helper()
	msg, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return msg
}

func TestStartInfoAndAttemptRoundTrip(t *testing.T) {
	t.Parallel()
	c, w := startWorker(t, filepath.Join(t.TempDir(), "run"), nil, "INK_IPC_TEST_ALLOWED=yes")

	info := c.Info()
	if info.ProtocolVersion != ProtocolVersion {
		t.Errorf("Info protocol = %d, want %d", info.ProtocolVersion, ProtocolVersion)
	}
	if info.Pid != c.Pid() || c.Pid() <= 0 {
		t.Errorf("Info pid = %d, Client.Pid = %d; want the same positive pid", info.Pid, c.Pid())
	}
	if info.InkVersion == "" {
		t.Error("Info ink version is empty")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.Attempt(ctx)
	if err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	if err := stream.Send(runMsg("roundtrip", `{"prompt":"find the login tests"}`)); err != nil {
		t.Fatalf("Send Run: %v", err)
	}

	ev, ok := recvMsg(t, stream).(Event)
	w1, isWarning := ev.Body.(event.Warning)
	if !ok || ev.Seq != 1 || !isWarning {
		t.Fatalf("first message = %#v, want warning event seq 1", ev)
	}
	var rep workerReport
	if err := json.Unmarshal([]byte(w1.Text), &rep); err != nil {
		t.Fatalf("event text: %v", err)
	}
	t.Run("worker process", func(t *testing.T) {
		if rep.Pid != c.Pid() {
			t.Errorf("worker reports pid %d, Client.Pid is %d", rep.Pid, c.Pid())
		}
		if rep.Sid != rep.Pid || rep.Pgid != rep.Pid {
			t.Errorf("worker sid=%d pgid=%d, want both = its pid %d (own session)", rep.Sid, rep.Pgid, rep.Pid)
		}
		if rep.Stdin != os.DevNull {
			t.Errorf("worker stdin is %q, want %s", rep.Stdin, os.DevNull)
		}
		if rep.HostOnly != "" {
			t.Errorf("worker sees the host-only variable %s=%q; the host environment leaked", hostOnlyEnv, rep.HostOnly)
		}
		if rep.AllowedEnv != "yes" {
			t.Errorf("worker lost the allowlisted variable: got %q", rep.AllowedEnv)
		}
		if rep.Cookie || rep.SocketDir != "" {
			t.Errorf("worker still has handshake variables (cookie=%v, socket dir=%q) for its children to inherit", rep.Cookie, rep.SocketDir)
		}
	})

	task, ok := recvMsg(t, stream).(TaskRequest)
	if !ok || task.CorrelationID != "c1" || task.ToolCallID != "call-1" ||
		string(task.Args) != `{"prompt":"find the login tests"}` {
		t.Fatalf("second message = %#v, want task request c1 for call-1 with the args", task)
	}
	rec := &session.TaskRecord{Version: 1, AttemptID: session.NewID(), TaskToolCallID: "call-1", ParentSessionID: session.NewID(),
		ChildID: session.NewID(), Launched: true, Cwd: "/work", Status: session.StatusCompleted, Turns: 1}
	if err := stream.Send(TaskAnswer{CorrelationID: "c1", Content: "login_test.go", Record: rec}); err != nil {
		t.Fatalf("Send answer: %v", err)
	}
	ev, ok = recvMsg(t, stream).(Event)
	if end, isEnd := ev.Body.(event.ToolEnd); !ok || ev.Seq != 2 || !isEnd || end.IsError {
		t.Fatalf("third message = %#v, want event seq 2 saying the record arrived as completed", ev)
	}
	out, ok := recvMsg(t, stream).(Outcome)
	if !ok || out.Status != "completed" || out.Text != "answered: login_test.go" ||
		out.Usage.Input != 120 || out.Epoch != 3 {
		t.Fatalf("last message = %#v, want the completed outcome", out)
	}
	if err := stream.Send(Ack{}); err != nil {
		t.Fatalf("Send Ack: %v", err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("Recv after outcome = %v, want io.EOF", err)
	}

	pid := c.Pid()
	c.Kill()
	if !c.Exited() {
		t.Error("Exited() = false after Kill")
	}
	if alive(pid) {
		t.Errorf("worker %d still alive after Kill", pid)
	}
	logText, _ := os.ReadFile(w.logPath)
	if !strings.Contains(string(logText), `msg="plugin address"`) || !strings.Contains(string(logText), "logger=plugin") {
		t.Errorf("go-plugin's own log lines are not in the worker's log:\n%s", logText)
	}
}

func TestLargeMessagesBothWays(t *testing.T) {
	t.Parallel()
	c, _ := startWorker(t, filepath.Join(t.TempDir(), "run"), nil)
	raw := make([]byte, 15<<19) // 7.5 MiB, 10 MiB in base64
	_, _ = rand.Read(raw)
	payload := base64.StdEncoding.EncodeToString(raw)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.Attempt(ctx)
	if err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	if err := stream.Send(runMsg("big", payload)); err != nil {
		t.Fatalf("Send 10 MiB Run: %v", err)
	}
	ev, _ := recvMsg(t, stream).(Event)
	if w, ok := ev.Body.(event.Warning); !ok || w.Text != payload {
		t.Fatalf("worker's 10 MiB event does not carry the payload back")
	}
	out, _ := recvMsg(t, stream).(Outcome)
	if want := "received 10485760 bytes"; out.Text != want {
		t.Fatalf("outcome text = %q, want %q", out.Text, want)
	}
}

func TestWorkerCrashMidAttempt(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _ := startWorker(t, filepath.Join(t.TempDir(), "run"), logger)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.Attempt(ctx)
	if err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	if err := stream.Send(runMsg("panic", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil || err == io.EOF {
		t.Fatalf("Recv after the worker crashed = %v, want a transport error", err)
	}
	if !eventually(2*time.Second, c.Exited) {
		t.Fatal("Exited() still false 2 s after the worker crashed")
	}
	if !eventually(2*time.Second, func() bool { return strings.Contains(logs.String(), "panic: transcript torn at line 12") }) {
		t.Errorf("the worker's panic is not in the host log:\n%s", logs.String())
	}
}

func TestOversizedMessageIsRefused(t *testing.T) {
	t.Parallel()
	c, _ := startWorker(t, filepath.Join(t.TempDir(), "run"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.Attempt(ctx)
	if err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	err = stream.Send(runMsg("big", strings.Repeat("x", MaxMessageSize)))
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("sending more than %d bytes: err = %v, want ResourceExhausted", MaxMessageSize, err)
	}
	if _, err := c.worker.Info(ctx, &pb.InfoRequest{}); err != nil {
		t.Errorf("the worker is unusable after a refused message: %v", err)
	}
}

func TestSocketDirectoryIsPrivate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, run string)
	}{
		{"created by Start", func(*testing.T, string) {}},
		{"existing with wide permissions", func(t *testing.T, run string) {
			if err := os.Mkdir(run, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(run, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := filepath.Join(shortTempDir(t), "run")
			tt.prepare(t, run)
			c, _ := startWorker(t, run, nil)

			sock := c.socketPath()
			if filepath.Dir(filepath.Dir(sock)) != run {
				t.Fatalf("socket %s is not in a directory of its own under %s", sock, run)
			}
			assertPrivateDir(t, run)
			assertPrivateDir(t, filepath.Dir(sock))
			fi, err := os.Lstat(sock)
			if err != nil || fi.Mode().Type() != os.ModeSocket {
				t.Fatalf("socket %s: %v, mode %v", sock, err, fi.Mode())
			}

			c.Kill()
			if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
				t.Errorf("worker socket directory %s left behind after Kill (%v)", filepath.Dir(sock), err)
			}
			if _, err := os.Stat(run); err != nil {
				t.Errorf("the shared socket directory %s must stay: %v", run, err)
			}
		})
	}
}

// shortTempDir returns a fresh directory with a path short enough for
// sockets (t.TempDir paths often are not), removed in Cleanup.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func assertPrivateDir(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s has mode %v, want a 0700 directory", dir, fi.Mode())
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
		t.Errorf("%s is owned by uid %d, want %d", dir, uid, os.Geteuid())
	}
}

func TestLongSocketDirFallsBackToTempDir(t *testing.T) {
	t.Parallel()
	long := filepath.Join(t.TempDir(), strings.Repeat("deep-directory-", 8), "run")
	c, _ := startWorker(t, long, nil)

	sock := c.socketPath()
	if len(sock) > maxSocketPath {
		t.Fatalf("socket path %s is %d bytes, over %d", sock, len(sock), maxSocketPath)
	}
	base := filepath.Dir(filepath.Dir(sock))
	if !strings.HasPrefix(filepath.Base(base), fallbackPrefix) {
		t.Fatalf("socket %s is not in a fresh %s* directory", sock, fallbackPrefix)
	}
	assertPrivateDir(t, base)
	if _, err := os.Stat(long); !os.IsNotExist(err) {
		t.Errorf("the too-long directory %s was created (%v)", long, err)
	}

	c.Kill()
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("fallback socket directory %s left behind after Kill (%v)", base, err)
	}
}

func TestKillLeavesNoProcess(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"child in group", "hold-stderr"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c, _ := startWorker(t, filepath.Join(t.TempDir(), "run"), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stream, err := c.Attempt(ctx)
			if err != nil {
				t.Fatalf("Attempt: %v", err)
			}
			if err := stream.Send(runMsg("spawn", mode)); err != nil {
				t.Fatal(err)
			}
			var rep workerReport
			ev, _ := recvMsg(t, stream).(Event)
			w, _ := ev.Body.(event.Warning)
			if err := json.Unmarshal([]byte(w.Text), &rep); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(rep.ChildPid, syscall.SIGKILL) })
			if !alive(rep.ChildPid) || len(groupMembers(c.Pid())) < 2 {
				t.Fatalf("setup: worker %d and its child %d should both be running", c.Pid(), rep.ChildPid)
			}

			pid := c.Pid()
			var wg sync.WaitGroup
			for range 3 { // concurrent and repeated calls are safe
				wg.Add(1)
				go func() { defer wg.Done(); c.Kill() }()
			}
			killed := make(chan struct{})
			go func() { wg.Wait(); c.Kill(); close(killed) }()
			select {
			case <-killed:
			case <-time.After(10 * time.Second):
				t.Fatalf("Kill still blocked after 10 s; processes in group %d: %v", pid, groupMembers(pid))
			}

			if !eventually(2*time.Second, func() bool { return len(groupMembers(pid)) == 0 }) {
				t.Fatalf("processes left in the worker's group %d after Kill: %v", pid, groupMembers(pid))
			}
			if alive(pid) || alive(rep.ChildPid) {
				t.Errorf("worker %d or its child %d still alive", pid, rep.ChildPid)
			}
			if !c.Exited() {
				t.Error("Exited() = false after Kill")
			}
		})
	}
}

// startHost runs the test binary as a host that starts a worker, and
// returns the host command and the worker's pid. Both are killed in Cleanup.
func startHost(t *testing.T, dir string, env ...string) (*exec.Cmd, int) {
	t.Helper()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append([]string{
		roleEnv + "=host",
		socketDirEnv + "=" + filepath.Join(dir, "run"),
		"PATH=" + os.Getenv("PATH"),
	}, env...)
	var hostErr syncBuffer
	host.Stderr = &hostErr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("host did not report its worker: %v; host stderr: %s", err, hostErr.String())
	}
	workerPid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("host printed %q, want a pid", line)
	}
	t.Cleanup(func() { killGroup(workerPid); _ = syscall.Kill(workerPid, syscall.SIGKILL) })
	return host, workerPid
}

func TestWorkerNoticesHostDeath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	workerLog := filepath.Join(dir, "worker.log")
	host, workerPid := startHost(t, dir, logEnv+"="+workerLog, markerEnv+"="+marker)

	readMarker := func() string { data, _ := os.ReadFile(marker); return string(data) }
	if !eventually(5*time.Second, func() bool { return strings.Contains(readMarker(), "started") }) {
		t.Fatalf("worker never started the attempt; marker %q", readMarker())
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*time.Second, func() bool { return strings.Contains(readMarker(), "ctx done") }) {
		t.Fatalf("the worker's stream context was not done within 2 s of host death; marker %q", readMarker())
	}
	if !eventually(2*time.Second, func() bool { return strings.Contains(readMarker(), "finished") }) {
		t.Fatalf("the worker blocked or died writing output after host death; marker %q", readMarker())
	}
	if !eventually(2*time.Second, func() bool { return !alive(workerPid) }) {
		t.Fatalf("worker %d still running after its attempt ended with the host gone", workerPid)
	}
	logText, _ := os.ReadFile(workerLog)
	for _, want := range []string{"stray output from the worker", "standard log line after the host died"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("worker log lacks %q", want)
		}
	}
}

func TestIdleWorkerExitsWhenHostDies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	workerLog := filepath.Join(dir, "worker.log")
	host, workerPid := startHost(t, dir, logEnv+"="+workerLog, hostModeEnv+"=idle")
	if !alive(workerPid) {
		t.Fatalf("setup: worker %d is not running", workerPid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually(2*time.Second, func() bool { return !alive(workerPid) }) {
		t.Fatalf("worker %d without an attempt still running 2 s after its host died", workerPid)
	}
	logText, _ := os.ReadFile(workerLog)
	if !strings.Contains(string(logText), "ink host gone") {
		t.Errorf("worker log does not say why it exited:\n%s", logText)
	}
}

func TestProtocolMismatch(t *testing.T) {
	t.Parallel()
	// The workers speak ProtocolVersion+1 (roles "worker-next" and
	// "worker-info-next").
	next := ProtocolVersion + 1
	for _, role := range []string{"worker-next", "worker-info-next"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			w := newWorkerCmd(t, role)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := Start(ctx, ClientConfig{Cmd: w.cmd, SocketDir: filepath.Join(t.TempDir(), "run")})
			if err == nil {
				c.Kill()
				t.Fatalf("Start accepted a worker of protocol %d", next)
			}
			var mismatch *ProtocolMismatchError
			if !errors.As(err, &mismatch) || mismatch.Worker != next || mismatch.Host != ProtocolVersion {
				t.Fatalf("Start error = %v, want a ProtocolMismatchError{Worker: %d, Host: %d}", err, next, ProtocolVersion)
			}
			want := fmt.Sprintf("ink worker speaks protocol %d, this ink speaks %d: the ink binary changed underneath; reinstall ink or rerun the same binary", next, ProtocolVersion)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Start error = %q, want it to say %q", err, want)
			}
			pid := readPid(w.pidFile)
			if pid <= 0 || !eventually(2*time.Second, func() bool { return !alive(pid) }) {
				t.Errorf("the refused worker (pid %d) is still running", pid)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		role    string
		cmd     func() *exec.Cmd
		timeout time.Duration // ctx timeout; 0 for none
		start   time.Duration // StartTimeout
		want    []string
		logged  string
	}{
		{
			name: "not an ink binary", cmd: func() *exec.Cmd { return exec.Command("/bin/echo", "hello") },
			want: []string{`/bin/echo printed "hello" instead of the ink worker handshake`, "reinstall ink"},
		},
		{
			name: "binary missing", cmd: func() *exec.Cmd { return exec.Command("/nonexistent/ink", "worker") },
			want: []string{"/nonexistent/ink", "no such file or directory"},
		},
		{
			name: "worker crashes before the handshake", role: "crash-early",
			want: []string{"exited (exit status 3) before completing the ink worker handshake",
				"its stderr ended with:\n\tpanic: worker could not open its transcript"},
			logged: "worker could not open its transcript",
		},
		{
			name: "worker never answers", role: "mute", start: 300 * time.Millisecond,
			want: []string{"did not complete the ink worker handshake within 300ms"},
		},
		{
			name: "caller gives up", role: "mute", timeout: 300 * time.Millisecond,
			want: []string{context.DeadlineExceeded.Error()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cmd *exec.Cmd
			var w testWorker
			if tt.cmd != nil {
				cmd = tt.cmd()
			} else {
				w = newWorkerCmd(t, tt.role)
				cmd = w.cmd
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			var logs syncBuffer
			run := filepath.Join(t.TempDir(), "run")
			began := time.Now()
			c, err := Start(ctx, ClientConfig{
				Cmd: cmd, SocketDir: run, StartTimeout: tt.start,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err == nil {
				c.Kill()
				t.Fatal("Start succeeded")
			}
			t.Logf("Start error:\n%v", err)
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Start error = %q, want it to contain %q", err, want)
				}
			}
			if time.Since(began) > 5*time.Second {
				t.Errorf("Start took %v to fail", time.Since(began))
			}
			if tt.logged != "" && !strings.Contains(logs.String(), tt.logged) {
				t.Errorf("the worker's stderr line %q is not in the host log:\n%s", tt.logged, logs.String())
			}
			if pid := readPid(w.pidFile); pid > 0 && !eventually(2*time.Second, func() bool { return !alive(pid) }) {
				t.Errorf("worker %d still running after Start failed", pid)
			}
			if entries, _ := os.ReadDir(run); len(entries) != 0 {
				t.Errorf("socket directories left behind: %v", entries)
			}
		})
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	withStdout := exec.Command("/bin/true")
	withStdout.Stdout = io.Discard
	started := exec.Command("/bin/true")
	if err := started.Run(); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  ClientConfig
		want string
	}{
		{"no command", ClientConfig{}, "Cmd is nil"},
		{"stdout taken", ClientConfig{Cmd: withStdout}, "must not set Stdout"},
		{"command already run", ClientConfig{Cmd: started}, "already started"},
		{"socket dir is a file", ClientConfig{Cmd: exec.Command("/bin/true"), SocketDir: notDir}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Start(context.Background(), tt.cfg)
			if err == nil {
				c.Kill()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestWorkerWithoutHostExits plays a host that dies between the handshake
// and connecting: the worker must give up rather than linger.
func TestWorkerWithoutHostExits(t *testing.T) {
	t.Parallel()
	sockDir := t.TempDir()
	w := newWorkerCmd(t, "worker",
		connectTimeoutEnv+"=300ms",
		MagicCookieKey+"="+MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_UNIX_SOCKET_DIR="+sockDir,
	)
	var stdout, stderr syncBuffer
	w.cmd.Stdout, w.cmd.Stderr = &stdout, &stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker exited with %v, want a clean exit", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("worker still running 5 s after nobody connected")
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], fmt.Sprintf("1|%d|unix|%s", ProtocolVersion, sockDir)) || !strings.HasSuffix(lines[0], "|grpc|") {
		t.Errorf("worker stdout = %q, want exactly one gRPC handshake line on a socket in %s", stdout.String(), sockDir)
	}
	if stderr.String() != "" {
		t.Errorf("worker wrote to stderr: %q", stderr.String())
	}
	logText, _ := os.ReadFile(w.logPath)
	if !strings.Contains(string(logText), "ink host never connected") {
		t.Errorf("worker log does not say why it exited:\n%s", logText)
	}
}
