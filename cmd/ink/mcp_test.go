package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/session"
)

// mcpServer is a running `ink mcp` subprocess with a go-sdk client
// session over its stdin and stdout.
type mcpServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	cs     *mcp.ClientSession
	stderr syncBuffer
	done   chan struct{}

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

// startMCP starts `ink mcp ARGS` in the working directory and initializes
// a client session with it. The process and its group are killed by pid
// when the test ends.
func (e *env) startMCP(args ...string) *mcpServer {
	e.t.Helper()
	s := &mcpServer{done: make(chan struct{})}
	s.cmd = exec.Command(inkBin, append([]string{"mcp"}, args...)...)
	s.cmd.Dir, s.cmd.Env, s.cmd.Stderr = e.dir, e.vars, &s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s.stdin = stdin
	pid := s.cmd.Process.Pid
	go func() { s.cmd.Wait(); close(s.done) }()
	e.t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
		<-s.done
		if e.t.Failed() {
			e.t.Logf("ink mcp stderr:\n%s", s.stderr.String())
		}
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "ink-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, req.Params)
			s.mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		e.t.Fatalf("connect to ink mcp: %v\nstderr:\n%s", err, s.stderr.String())
	}
	s.cs = cs
	e.t.Cleanup(func() { cs.Close() })
	return s
}

// call calls tool with args and returns the result's text.
func (s *mcpServer) call(t *testing.T, tool string, args any) (string, *mcp.CallToolResult) {
	t.Helper()
	return s.callWith(t, context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
}

func (s *mcpServer) callWith(t *testing.T, ctx context.Context, p *mcp.CallToolParams) (string, *mcp.CallToolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s: %v\nstderr:\n%s", p.Name, err, s.stderr.String())
	}
	return resultText(res), res
}

// resultText joins a result's text contents.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var childIDRe = regexp.MustCompile(`child session id: ([a-z0-9-]+)`)

// childIDOf is the child id a task result names.
func childIDOf(t *testing.T, text string) string {
	t.Helper()
	m := childIDRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no child session id in:\n%s", text)
	}
	return m[1]
}

// mcpSession is the one MCP session transcript of e's directory.
func (e *env) mcpSession(t *testing.T) *session.Transcript {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("want one session in %s, got %d (%v)", e.dir, len(list), err)
	}
	tr, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// childTranscript opens the transcript of childID anywhere in INK_HOME.
func (e *env) childTranscript(t *testing.T, childID string) *session.Transcript {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.home, "sessions", "*", "*", "children", childID+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("child transcript %s: found %v", childID, matches)
	}
	tr, err := session.Open(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// attemptSpan is one attempt of a child as its transcript records it.
type attemptSpan struct {
	pid        int
	start, end time.Time
	status     session.Status
	reason     string
}

// lastAttempt is the newest attempt recorded in a child's transcript.
func lastAttempt(t *testing.T, tr *session.Transcript) attemptSpan {
	t.Helper()
	var sp attemptSpan
	for _, a := range tr.Attempts() {
		switch a.Phase {
		case session.PhaseStart:
			sp = attemptSpan{pid: a.Pid, start: a.Time}
		case session.PhaseEnd:
			sp.end, sp.status, sp.reason = a.Time, a.Status, a.Reason
		}
	}
	return sp
}

// assertOverlap checks that the children ran as distinct worker processes
// at the same time: every attempt started before any ended.
func assertOverlap(t *testing.T, spans []attemptSpan) {
	t.Helper()
	pids := map[int]bool{}
	var lastStart, firstEnd time.Time
	for i, sp := range spans {
		pids[sp.pid] = true
		if sp.status != "completed" {
			t.Fatalf("child %d ended %s", i, sp.status)
		}
		if i == 0 || sp.start.After(lastStart) {
			lastStart = sp.start
		}
		if i == 0 || sp.end.Before(firstEnd) {
			firstEnd = sp.end
		}
	}
	if len(pids) != len(spans) {
		t.Fatalf("children did not run in %d distinct worker processes: pids %v", len(spans), pids)
	}
	if !lastStart.Before(firstEnd) {
		t.Fatalf("children did not run at once: the last started at %s, after the first ended at %s", lastStart.Format(time.StampMicro), firstEnd.Format(time.StampMicro))
	}
}

// treeOf lists every file under dir with its size and modification time.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		lines = append(lines, fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

const mcpScript = `rules:
  - when: {user: "^child one"}
    reply: {text: "report one", delay: 1s, usage: {input: 100, output: 10}}
  - when: {user: "^child two"}
    reply: {text: "report two", delay: 1s, usage: {input: 200, output: 20}}
  - when: {user: "^child three"}
    reply: {text: "report three", delay: 1s, usage: {input: 300, output: 30}}
  - when: {user: "^slow", turn: 1}
    reply: {calls: [{tool: bash, args: {command: "echo step"}}]}
  - when: {user: "^slow"}
    reply: {text: "slow report", delay: 60s}
  - when: {user: "^quick"}
    reply: {text: "quick report"}
  - when: {user: "^two turns", turn: 1}
    reply: {calls: [{tool: bash, args: {command: "sleep 0.5; echo step"}}]}
  - when: {user: "^two turns"}
    reply: {text: "done in two turns", delay: 500ms}
  - when: {user: "^go on"}
    reply: {text: "continued to the end"}
  - when: {user: "^commit", turn: 1}
    reply: {calls: [{tool: bash, args: {command: "echo from-child > child.txt && git add child.txt && git commit -qm 'child work' && echo committed"}}]}
  - when: {user: "^commit", tool: bash, result: "committed"}
    reply: {text: "committed child.txt"}
  - when: {user: "^commit"}
    reply: {text: "the commit failed"}
`

// TestMCPInitializeAndTools: the server introduces itself, lists every tool
// with a schema and a description, and annotates them honestly: task,
// task_cancel and worktree_merge change things; the others only read.
func TestMCPInitializeAndTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	init := s.cs.InitializeResult()
	if init == nil || init.ServerInfo == nil || init.ServerInfo.Name != "ink" || !strings.Contains(init.Instructions, "background") {
		t.Fatalf("initialize result = %+v", init)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{
		"task": false, "task_status": true, "task_wait": true, "task_cancel": false,
		"worktrees_list": true, "worktree_diff": true, "worktree_merge": false, "agents_list": true,
	}
	seen := map[string]bool{}
	for _, tool := range list.Tools {
		want, ok := readOnly[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		seen[tool.Name] = true
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint != want {
			t.Errorf("%s: annotations %+v, want readOnlyHint %v", tool.Name, tool.Annotations, want)
		}
		if len(tool.Description) < 60 {
			t.Errorf("%s: description too thin: %q", tool.Name, tool.Description)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		var sc struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(schema, &sc); err != nil || sc.Type != "object" {
			t.Errorf("%s: input schema %s", tool.Name, schema)
		}
		if tool.Name == "task" {
			for _, p := range []string{"prompt", "agent", "timeoutMs", "worktree", "resume", "background", "tasks"} {
				if _, ok := sc.Properties[p]; !ok {
					t.Errorf("task schema lacks %q: %s", p, schema)
				}
			}
			for _, w := range []string{"tasks", "background", "task_wait", "resume"} {
				if !strings.Contains(tool.Description, w) {
					t.Errorf("task description does not mention %s", w)
				}
			}
		}
	}
	if len(seen) != len(readOnly) {
		t.Fatalf("tools = %v, want %v", seen, readOnly)
	}
}

// TestMCPBlockingTask: a task call returns the child's answer with ink's
// task result text; the MCP session records the call and its result with
// the TaskRecord, and the child's transcript lives under it.
func TestMCPBlockingTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	text, res := s.call(t, "task", map[string]any{"prompt": "quick look"})
	if res.IsError || !strings.HasPrefix(text, "quick report") || !strings.Contains(text, "continue it with task({resume:") {
		t.Fatalf("task result (isError %v):\n%s", res.IsError, text)
	}
	id := childIDOf(t, text)
	tr := e.mcpSession(t)
	var call, result bool
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			call = call || (c.Name == "task" && m.Model == "mcp" && strings.Contains(string(c.Args), "quick look"))
		}
		for _, r := range session.TaskRecordsOf(m) {
			result = result || (r.ChildID == id && r.Status == "completed" && r.Launched)
		}
	}
	if !call || !result {
		t.Fatalf("the MCP session does not record the call (%v) and its result with a TaskRecord (%v): %+v", call, result, tr.Messages)
	}
	ctr := e.childTranscript(t, id)
	if ctr.Header.Parent != tr.Header.ID || lastAttempt(t, ctr).status != "completed" {
		t.Fatalf("child %s: parent %s, last attempt %+v", id, ctr.Header.Parent, lastAttempt(t, ctr))
	}
}

// TestMCPConcurrentCalls: three task calls made at once by the client run
// as three worker processes at the same time.
func TestMCPConcurrentCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	texts := make([]string, 3)
	var wg sync.WaitGroup
	for i, p := range []string{"child one", "child two", "child three"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": p}})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			texts[i] = resultText(res)
		}()
	}
	wg.Wait()
	var spans []attemptSpan
	for i, want := range []string{"report one", "report two", "report three"} {
		if !strings.HasPrefix(texts[i], want) {
			t.Fatalf("call %d returned:\n%s", i, texts[i])
		}
		spans = append(spans, lastAttempt(t, e.childTranscript(t, childIDOf(t, texts[i]))))
	}
	assertOverlap(t, spans)
}

// TestMCPBatch: one task call with tasks of three runs them at once and
// returns every result in order; the session records one call whose
// result carries the three TaskRecords.
func TestMCPBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	text, res := s.call(t, "task", map[string]any{"tasks": []map[string]any{{"prompt": "child one"}, {"prompt": "child two"}, {"prompt": "child three"}}})
	if res.IsError {
		t.Fatalf("batch failed:\n%s", text)
	}
	i1, i2, i3 := strings.Index(text, "report one"), strings.Index(text, "report two"), strings.Index(text, "report three")
	if i1 < 0 || i2 < i1 || i3 < i2 || !strings.Contains(text, "── task 2 of 3") {
		t.Fatalf("results not all there in order:\n%s", text)
	}
	ids := childIDRe.FindAllStringSubmatch(text, -1)
	if len(ids) != 3 {
		t.Fatalf("want three child ids in:\n%s", text)
	}
	var spans []attemptSpan
	for _, m := range ids {
		spans = append(spans, lastAttempt(t, e.childTranscript(t, m[1])))
	}
	assertOverlap(t, spans)
	tr := e.mcpSession(t)
	calls, recs := 0, 0
	for _, m := range tr.Messages {
		calls += len(m.ToolCalls)
		recs += len(m.TaskRecords)
	}
	if calls != 1 || recs != 3 {
		t.Fatalf("the session holds %d calls and %d taskRecords, want one call whose result carries 3", calls, recs)
	}
}

// TestMCPBackgroundWait: background: true answers at once with the child's
// id; task_status shows it; task_wait returns its result and records it.
func TestMCPBackgroundWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	text, res := s.call(t, "task", map[string]any{"prompt": "two turns please", "background": true})
	if res.IsError || !strings.Contains(text, "started in the background") {
		t.Fatalf("background start:\n%s", text)
	}
	id := childIDOf(t, text)
	status, res := s.call(t, "task_status", map[string]any{"ids": []string{id}})
	if res.IsError || !strings.Contains(status, id) || !strings.Contains(status, "background") {
		t.Fatalf("task_status:\n%s", status)
	}
	var sc struct {
		Children []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"children"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &sc) != nil || len(sc.Children) != 1 || sc.Children[0].ID != id {
		t.Fatalf("task_status structured content = %s", raw)
	}
	waited, res := s.call(t, "task_wait", map[string]any{})
	if res.IsError || !strings.Contains(waited, "done in two turns") || !strings.Contains(waited, id) {
		t.Fatalf("task_wait:\n%s", waited)
	}
	tr := e.mcpSession(t)
	found := false
	for _, m := range tr.Messages {
		if len(m.Results) == 1 && m.Results[0].ToolName == "task_wait" {
			for _, r := range session.TaskRecordsOf(m) {
				found = found || (r.ChildID == id && r.Status == "completed")
			}
		}
	}
	if !found {
		t.Fatalf("the task_wait result in the session carries no record of %s", id)
	}
	again, _ := s.call(t, "task_wait", map[string]any{})
	if !strings.Contains(again, "no background child to wait for") {
		t.Fatalf("a second task_wait with nothing left:\n%s", again)
	}
}

// TestMCPCancel: task_cancel stops a background child; its transcript
// records aborted, and it resumes to the end afterwards.
func TestMCPCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	text, _ := s.call(t, "task", map[string]any{"prompt": "slow work", "background": true})
	id := childIDOf(t, text)
	eventually(t, func() bool {
		st, _ := s.call(t, "task_status", map[string]any{"ids": []string{id}})
		return strings.Contains(st, "running for")
	})
	stopped, res := s.call(t, "task_cancel", map[string]any{"id": id})
	if res.IsError || !strings.Contains(stopped, "stopped") || !strings.Contains(stopped, "aborted") {
		t.Fatalf("task_cancel:\n%s", stopped)
	}
	if sp := lastAttempt(t, e.childTranscript(t, id)); sp.status != "aborted" || !strings.Contains(sp.reason, "task_cancel") {
		t.Fatalf("cancelled child recorded %+v", sp)
	}
	resumed, res := s.call(t, "task", map[string]any{"prompt": "go on", "resume": id})
	if res.IsError || !strings.HasPrefix(resumed, "continued to the end") {
		t.Fatalf("resume after cancel:\n%s", resumed)
	}
}

// TestMCPWorktree: a worktree child commits on its branch; worktree_diff
// shows the change and worktree_merge brings it into the main checkout.
func TestMCPWorktree(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"README": "hello\n"})
	script := e.wtOutside("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	text, res := s.call(t, "task", map[string]any{"prompt": "commit something", "worktree": true})
	if res.IsError || !strings.HasPrefix(text, "committed child.txt") {
		t.Fatalf("worktree task:\n%s", text)
	}
	id := childIDOf(t, text)
	list, _ := s.call(t, "worktrees_list", nil)
	if !strings.Contains(list, id) || !strings.Contains(list, "work-present") {
		t.Fatalf("worktrees_list:\n%s", list)
	}
	diff, res := s.call(t, "worktree_diff", map[string]any{"id": id})
	if res.IsError || !strings.Contains(diff, "child.txt") || !strings.Contains(diff, "+from-child") {
		t.Fatalf("worktree_diff:\n%s", diff)
	}
	merged, res := s.call(t, "worktree_merge", map[string]any{"id": id})
	if res.IsError || !strings.Contains(merged, "merged ink/"+id+" into main") {
		t.Fatalf("worktree_merge:\n%s", merged)
	}
	if data, err := os.ReadFile(filepath.Join(e.dir, "child.txt")); err != nil || string(data) != "from-child\n" {
		t.Fatalf("child.txt in the main checkout after the merge: %q, %v", data, err)
	}
	// Everything in it merged, the worktree and its branch are gone, so a
	// second merge finds nothing to merge.
	if !strings.Contains(merged, "removed the worktree") {
		t.Fatalf("worktree_merge does not say the merged worktree was removed:\n%s", merged)
	}
	again, res := s.call(t, "worktree_merge", map[string]any{"id": id})
	if !res.IsError || !strings.Contains(again, "no worktree for child") {
		t.Fatalf("second merge:\n%s", again)
	}
}

// TestMCPProgress: a client that gives a progress token receives progress
// notifications naming the child's turn and tool while it runs.
func TestMCPProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	p := &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "two turns please"}}
	p.SetProgressToken("progress-1")
	text, res := s.callWith(t, context.Background(), p)
	if res.IsError {
		t.Fatalf("task:\n%s", text)
	}
	// Notifications are handled by the client on a goroutine of their own,
	// so the last may arrive just after the call's result.
	var all string
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		var msgs []string
		last := 0.0
		for _, n := range s.progress {
			if n.ProgressToken != "progress-1" {
				t.Fatalf("notification for token %v", n.ProgressToken)
			}
			if n.Progress <= last {
				t.Fatalf("progress did not increase: %v after %v", n.Progress, last)
			}
			last = n.Progress
			msgs = append(msgs, n.Message)
		}
		all = strings.Join(msgs, "\n")
		return strings.Contains(all, "completed after 2 turns")
	})
	if !strings.Contains(all, "turn 1") || !strings.Contains(all, "running bash") {
		t.Fatalf("progress messages do not follow the child:\n%s", all)
	}
}

// TestMCPDisconnect: a client that goes away mid-task leaves its children
// recorded interrupted / host lost, the server exits, and a child resumes
// from the shell.
func TestMCPDisconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	bg, _ := s.call(t, "task", map[string]any{"prompt": "slow background", "background": true})
	bgID := childIDOf(t, bg)
	go s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "slow foreground"}})
	var fgID string
	eventually(t, func() bool {
		st, _ := s.call(t, "task_status", nil)
		if strings.Count(st, "running for") < 2 {
			return false
		}
		for _, l := range strings.Split(st, "\n") {
			if strings.HasPrefix(l, "- ") && !strings.Contains(l, bgID) {
				fgID = strings.Fields(l)[1]
			}
		}
		return true
	})
	// The client goes away: the server's stdin closes.
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatalf("ink mcp did not exit after its client went away\nstderr:\n%s", s.stderr.String())
	}
	// Nobody pressed Ctrl-C: the client hung up.
	if strings.Contains(s.stderr.String(), "Ctrl-C") {
		t.Errorf("ink mcp speaks of Ctrl-C when its client hangs up:\n%s", s.stderr.String())
	}
	for _, id := range []string{bgID, fgID} {
		sp := lastAttempt(t, e.childTranscript(t, id))
		if sp.status != "interrupted" || sp.reason != "host lost" {
			t.Fatalf("child %s recorded %+v, want interrupted / host lost", id, sp)
		}
		// The worker records its end, then ends what it started and exits:
		// on a loaded machine the exit may follow its server's by a moment.
		if !gone(sp.pid, 10*time.Second) {
			t.Fatalf("worker %d of child %s outlived its server by 10 s", sp.pid, id)
		}
	}
	p, code := e.run("task", "--model", "script:"+script, "--resume", fgID, "go on")
	if code != 0 || !strings.HasPrefix(p.stdout.String(), "continued to the end") {
		t.Fatalf("shell resume exited %d:\n%s\n%s", code, p.stdout.String(), p.stderr.String())
	}
}

// TestMCPBadInput: bad arguments, unknown ids and the resume of a running
// child are tool errors with the command line's messages, and change no
// file.
func TestMCPBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"task", map[string]any{"prompt": "x", "bogus": 1}, `task: unknown argument "bogus"; task takes: prompt, agent, timeoutMs, worktree, resume, background`},
		{"task", map[string]any{"prompt": " "}, "task: prompt is blank"},
		{"task", map[string]any{"prompt": "x", "timeoutMs": 10}, "task: timeoutMs must be a whole number of milliseconds, at least 1000"},
		{"task", map[string]any{"prompt": "x", "agent": "nosuch"}, `task: unknown agent "nosuch"`},
		{"task", map[string]any{"prompt": "x", "resume": "../etc"}, "never paths"},
		{"task", map[string]any{"prompt": "x", "resume": "01nosuchchild"}, `cannot resume child "01nosuchchild": not-found`},
		{"task", map[string]any{"tasks": []map[string]any{{"prompt": "a"}, {}}}, "task: tasks[1]: prompt is required"},
		{"task_wait", map[string]any{"ids": []string{"01nosuchchild"}}, `task_wait: no child "01nosuchchild" was started here`},
		{"task_status", map[string]any{"id": "x"}, `task_status: unknown argument "id"`},
		{"task_cancel", map[string]any{"id": "01nosuchchild"}, `task_cancel: no child "01nosuchchild"`},
		{"worktree_diff", map[string]any{"id": "BAD ID"}, `worktree_diff: "BAD ID" is not a child id`},
		{"worktree_diff", map[string]any{"id": "01nosuchchild"}, `worktree_diff: no worktree for child "01nosuchchild"`},
		{"worktree_merge", map[string]any{}, "worktree_merge: id is required"},
		{"agents_list", map[string]any{"all": true}, `agents_list: unknown argument "all"; agents_list takes no arguments`},
	} {
		before := treeOf(t, filepath.Join(e.home, "sessions"))
		text, res := s.call(t, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: isError %v, text:\n%s\nwant %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
		if after := treeOf(t, filepath.Join(e.home, "sessions")); after != before {
			t.Errorf("%s %v changed files:\nbefore:\n%s\nafter:\n%s", tc.tool, tc.args, before, after)
		}
	}
	// A child still running in the background cannot be resumed.
	text, _ := s.call(t, "task", map[string]any{"prompt": "slow again", "background": true})
	id := childIDOf(t, text)
	before := treeOf(t, filepath.Join(e.home, "sessions"))
	refused, res := s.call(t, "task", map[string]any{"prompt": "go on", "resume": id})
	if !res.IsError || !strings.Contains(refused, "still-running") || !strings.Contains(refused, "task_wait") {
		t.Fatalf("resume of a running child:\n%s", refused)
	}
	// The running child writes its own transcript; nothing else changed.
	after := treeOf(t, filepath.Join(e.home, "sessions"))
	keep := func(tree string) string {
		var out []string
		for _, l := range strings.Split(tree, "\n") {
			if !strings.Contains(l, id) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if keep(after) != keep(before) {
		t.Fatalf("the refused resume changed files:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	s.call(t, "task_cancel", map[string]any{"id": id})
}

// eventually polls cond until it holds, for up to a minute.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMCPHTTP: over --http the server listens on loopback, serves a
// session like stdio does, and a client that ends its session (DELETE)
// leaves its children interrupted / host lost. An address beyond loopback
// is refused unless --allow-remote says so.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:80"} {
		p, code := e.run("mcp", "--model", "script:"+script, "--http", addr)
		if code != 2 || !strings.Contains(p.stderr.String(), "beyond this machine") || !strings.Contains(p.stderr.String(), "--allow-remote") {
			t.Fatalf("--http %s: exit %d\n%s", addr, code, p.stderr.String())
		}
	}
	p := e.start("mcp", "--model", "script:"+script, "--http", "127.0.0.1:0")
	url, token := httpServerOf(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url, token)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "quick look"}})
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "quick report") {
		t.Fatalf("task over HTTP: %v\n%v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "slow over http", "background": true}})
	if err != nil {
		t.Fatal(err)
	}
	id := childIDOf(t, resultText(res))
	eventually(t, func() bool {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_status", Arguments: map[string]any{}})
		return err == nil && strings.Contains(resultText(r), "running for")
	})
	cs.Close() // sends DELETE: the session ends
	eventually(t, func() bool {
		tr, err := session.Open(filepath.Join(session.ChildrenDir(e.mcpSessionPath(t)), id+".jsonl"))
		return err == nil && lastAttempt(t, tr).status != ""
	})
	if sp := lastAttempt(t, e.childTranscript(t, id)); sp.status != "interrupted" || sp.reason != "host lost" {
		t.Fatalf("child of the deleted session recorded %+v", sp)
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("ink mcp --http exited %d after SIGTERM\n%s", code, p.stderr.String())
	}
}

// httpServerOf waits for `ink mcp --http` to say where it listens and
// returns its URL and the token it printed.
func httpServerOf(t *testing.T, p *proc) (url, token string) {
	t.Helper()
	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+/).*\n.*until it stops:\n([0-9a-f]{64})\n`)
	eventually(t, func() bool {
		m := re.FindStringSubmatch(p.stderr.String())
		if m != nil {
			url, token = m[1], m[2]
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("ink mcp --http exited before it listened:\n%s", p.stderr.String())
		default:
		}
		return false
	})
	return url, token
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects a go-sdk client to url with token, as a client
// configured with an Authorization header does; it closes with the test.
func connectHTTP(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "ink-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpSessionPath is the path of the one session of e's directory.
func (e *env) mcpSessionPath(t *testing.T) string {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("want one session, got %d (%v)", len(list), err)
	}
	return list[0].Path
}

// TestMCPClientCancel: a client that cancels a task call (its context ends,
// so the go-sdk sends notifications/cancelled) aborts that call's child,
// which records why and stays resumable; the session goes on.
func TestMCPClientCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "slow foreground"}})
		done <- err
	}()
	var id string
	eventually(t, func() bool {
		st, _ := s.call(t, "task_status", nil)
		if m := regexp.MustCompile(`- ([a-z0-9]+) \(mcp/1\): running for`).FindStringSubmatch(st); m != nil {
			id = m[1]
		}
		return id != ""
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	// The call returned at once on the client's side; the child stops on
	// the server's.
	eventually(t, func() bool {
		st, _ := s.call(t, "task_status", map[string]any{"ids": []string{id}})
		return strings.Contains(st, "aborted after")
	})
	if sp := lastAttempt(t, e.childTranscript(t, id)); sp.status != "aborted" || sp.reason != "cancelled by the MCP client" {
		t.Fatalf("child of the cancelled call recorded %+v", sp)
	}
	resumed, res := s.call(t, "task", map[string]any{"prompt": "go on", "resume": id})
	if res.IsError || !strings.HasPrefix(resumed, "continued to the end") {
		t.Fatalf("resume after a client cancel:\n%s", resumed)
	}
}
