package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// The tests in this file feed ink inputs past each of its bounds — a
// reply of 10,000 tool calls, a 100 MB reply, two 50 MB profile files, a
// transcript with a 30 MB line — and check that every process stays in
// bounded memory, that the message names the bound, and that nothing the
// user had is lost.

const mib = 1 << 20

// peakFileVar, set in the environment of this test binary, makes it run
// its arguments as a command and write the command's peak resident set to
// the file it names (see runMeasured).
const peakFileVar = "INK_TEST_PEAK_FILE"

// runMeasured runs argv, waits for it and writes the largest resident set
// of it and of every process it waited for (wait4's rusage, in KiB) to
// path; it returns argv's exit code. The measured process must be started
// by a small process: an exec'ed process's peak starts at the peak of the
// process that started it, and this test binary's is large.
func runMeasured(path string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, peakFileVar+"=") })
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		return 1
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if werr := os.WriteFile(path, []byte(strconv.FormatInt(int64(ru.Maxrss), 10)), 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "measure:", werr)
		return 1
	}
	return max(cmd.ProcessState.ExitCode(), 0)
}

// measured is an ink process started through runMeasured.
type measured struct {
	*proc
	peakFile string
}

// runMeasuredInk runs ink with args to the end, measured, and returns its
// exit code.
func (e *env) runMeasuredInk(args ...string) (measured, int) {
	e.t.Helper()
	m := measured{peakFile: filepath.Join(e.t.TempDir(), "peak")}
	vars := e.vars
	e.vars = append(slices.Clone(vars), peakFileVar+"="+m.peakFile)
	m.proc = e.startExe(os.Args[0], append([]string{inkBin}, args...)...)
	e.vars = vars
	return m, m.wait(e.t, 3*time.Minute)
}

// peakRSS returns the largest resident set, in bytes, of the measured ink
// process, of every process it waited for (its workers), and of every
// worker that logged its own peak with its attempt's end under home.
func peakRSS(t *testing.T, m measured, home string) int64 {
	t.Helper()
	raw, err := os.ReadFile(m.peakFile)
	if err != nil {
		t.Fatalf("no peak measured: %v", err)
	}
	kb, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	peak := kb * 1024
	logs, _ := filepath.Glob(filepath.Join(home, "logs", "*.log"))
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Msg     string `json:"msg"`
				PeakRSS int64  `json:"peakRSS"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "Attempt end" {
				peak = max(peak, line.PeakRSS)
			}
		}
		f.Close()
	}
	return peak
}

// assertPeak fails when the peak resident set of m and its workers passed
// limit.
func assertPeak(t *testing.T, m measured, home string, limit int64) {
	t.Helper()
	peak := peakRSS(t, m, home)
	t.Logf("peak resident set: %d MiB", peak/mib)
	if peak > limit {
		t.Errorf("a process reached %d MiB; the bound should hold it under %d MiB", peak/mib, limit/mib)
	}
}

// transcriptResults returns every tool result of the transcript at path
// and the number of tool calls it holds.
func transcriptResults(t *testing.T, path string) ([]model.ToolResult, int) {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []model.ToolResult
	calls := 0
	for _, m := range tr.Messages {
		calls += len(m.ToolCalls)
		out = append(out, m.Results...)
	}
	return out, calls
}

// TestBoundCallsPerTurn: a model that answers every turn with 10,000 tool
// calls gets at most 64 of them run a turn, the rest answered with an
// error that names the per-turn call bound, for as many turns as its cap
// allows; every call has its result.
func TestBoundCallsPerTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var calls strings.Builder
	for range 10000 {
		calls.WriteString("        - {tool: ls, args: {path: \".\"}}\n")
	}
	script := e.write("calls.yaml", "rules:\n  - reply:\n      text: \"working\"\n      calls:\n"+calls.String())
	p, code := e.runMeasuredInk("run", "--json", "--max-turns", "2", "--model", "script:"+script, "list everything")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "the reply made 10000 tool calls: ink takes the first 64 and answered the other 9936 with an error (per-turn call bound)") {
		t.Errorf("stderr does not name the per-turn call bound:\n%.2000s", p.stderr.String())
	}
	runEnd := ofType(events(t, p.stdout.Bytes()), "run.end")[0]
	results, made := transcriptResults(t, runEnd["transcript"].(string))
	ran, bounded := 0, 0
	for _, r := range results {
		switch {
		case !r.IsError:
			ran++
		case strings.Contains(r.Content, "per-turn call bound"):
			bounded++
		}
	}
	// Two turns run 64 calls each; the third, the wrap-up, runs none.
	if made != 30000 || len(results) != made || ran != 128 || bounded != 3*(10000-64) {
		t.Errorf("%d calls, %d results, %d ran, %d answered with the bound", made, len(results), ran, bounded)
	}
	assertPeak(t, p, e.home, 400*mib)
}

// antBigText streams a text reply of size bytes, generated as it goes, in
// deltas of 16 KiB; it stops early when the client goes away.
func antBigText(size int) reply {
	r := antStream("end_turn", 10, 10)
	head, tail := r.events[:2], r.events[2:]
	r.events = append(head, antEvent(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}))
	delta := antEvent(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": strings.Repeat("w", 16<<10)}})
	frame := []byte(fmt.Sprintf("event: %s\ndata: %s\n\n", delta.name, delta.data))
	r.stream = func(w io.Writer) error {
		for sent := 0; sent < size; sent += 16 << 10 {
			if _, err := w.Write(frame); err != nil {
				return err
			}
		}
		for _, ev := range append([]sseEvent{antEvent(map[string]any{"type": "content_block_stop", "index": 0})}, tail...) {
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
				return err
			}
		}
		return nil
	}
	return r
}

// TestBoundHugeReply: a model that streams a 100 MB answer is stopped at
// the reply bound: one request (no retry), a failure that names the bound,
// the prompt and the first 8 MiB of the answer kept once in the
// transcript, and every process in bounded memory.
func TestBoundHugeReply(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply { return antBigText(100 * mib) })
	e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey, "ANTHROPIC_BASE_URL="+srv.srv.URL)
	p, code := e.runMeasuredInk("run", "--json", "--model", "anthropic/claude-test", "write everything you know")
	if code == 0 {
		t.Fatalf("exit 0 for a reply past the bound\nstderr:\n%s", p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "the model's reply passed ink's reply bound of 8 MiB") {
		t.Errorf("stderr does not name the reply bound:\n%.2000s", p.stderr.String())
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("the server got %d requests; a reply past the bound is not retried", n)
	}
	runEnd := ofType(events(t, p.stdout.Bytes()), "run.end")[0]
	path := runEnd["transcript"].(string)
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 2 || tr.Messages[0].Text() != "write everything you know" || len(tr.Messages[1].Text()) != model.MaxReplyBytes {
		t.Fatalf("transcript holds %d messages", len(tr.Messages))
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > model.MaxReplyBytes+256<<10 {
		t.Errorf("the transcript is %d bytes: the reply is stored more than once", fi.Size())
	}
	assertPeak(t, p, e.home, 220*mib)
}

// writeBig writes a file of header followed by filler up to size bytes,
// without holding it in memory.
func writeBig(t *testing.T, path, header string, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(header)
	line := strings.Repeat("Remember this. ", 64) + "\n"
	for n := len(header); n < size; n += len(line) {
		w.WriteString(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// fileSum fingerprints a file: its size and SHA-256.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d %x", n, h.Sum(nil))
}

// TestBoundProfileFiles: two 50 MB profile files are skipped, by `ink
// agents ls` and by `ink task`, with a note that names the profile-file
// bound; both commands stay in bounded memory, the profile beside them
// loads, and the files are left as they were.
func TestBoundProfileFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.home, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var huge []string
	for _, name := range []string{"archivist", "librarian"} {
		path := filepath.Join(dir, name+".md")
		writeBig(t, path, "---\nname: "+name+"\ndescription: knows everything\n---\n", 50*mib)
		huge = append(huge, path)
	}
	if err := os.WriteFile(filepath.Join(dir, "scout.md"), []byte("---\nname: scout\ndescription: finds things\n---\nYou find things.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sums := []string{fileSum(t, huge[0]), fileSum(t, huge[1])}
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"done\"}\n")

	for _, args := range [][]string{{"agents", "ls"}, {"task", "--model", "script:" + script, "say done"}} {
		p, code := e.runMeasuredInk(args...)
		out := p.stdout.String() + p.stderr.String()
		if code != 0 {
			t.Fatalf("ink %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		for _, path := range huge {
			if !strings.Contains(out, path+": the file is 50.0 MiB, over ink's profile-file bound of 1 MiB, so ink skipped it") {
				t.Errorf("ink %s does not name the bound for %s:\n%.3000s", args[0], path, out)
			}
		}
		if args[0] == "agents" && !strings.Contains(p.stdout.String(), "scout") {
			t.Errorf("the small profile is not listed:\n%s", p.stdout.String())
		}
		assertPeak(t, p, e.home, 150*mib)
	}
	for i, path := range huge {
		if got := fileSum(t, path); got != sums[i] {
			t.Errorf("%s changed", path)
		}
	}
}

// TestBoundResumeHugeLine: a session whose transcript holds a 30 MB line
// (a reply from before ink bounded replies) is continued: the model gets
// that message clipped, with a note that names the resume line bound, and
// answers; the warning names the bound; the line stays in the transcript
// byte for byte; and every process stays in bounded memory.
func TestBoundResumeHugeLine(t *testing.T) {
	t.Parallel()
	const window = 2 * mib // a request body past this is refused as too long
	srv := newFakeProvider(t, func(n int, s seen) reply {
		if len(s.body) > window {
			return reply{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 10000000 tokens > 200000 maximum"}}`}
		}
		if bytes.Contains(s.body, []byte("Context compaction")) {
			return antText("summary of the earlier work", 100, 10)
		}
		return antText(fmt.Sprintf("answer %d", n), 100, 10)
	})
	e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey, "ANTHROPIC_BASE_URL="+srv.srv.URL)
	p, code := e.run("run", "--json", "--model", "anthropic/claude-test", "start")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	runEnd := ofType(events(t, p.stdout.Bytes()), "run.end")[0]
	path, id := runEnd["transcript"].(string), runEnd["session"].(string)

	huge := strings.Repeat("0123456789abcdef", 30*mib/16)
	w, err := session.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []model.Message{model.UserText("write it all out"), {Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: huge}}}} {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	huge = ""
	before := fileSum(t, path)
	// The logs so far are of the first run; only the resume's count.
	if err := os.RemoveAll(filepath.Join(e.home, "logs")); err != nil {
		t.Fatal(err)
	}

	m, code := e.runMeasuredInk("run", "--json", "--session", id, "--model", "anthropic/claude-test", "go on")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstderr:\n%s", code, m.stderr.String())
	}
	if !strings.Contains(m.stderr.String(), "is 30.0 MiB, over ink's resume line bound of 8 MiB") {
		t.Errorf("stderr does not name the resume line bound:\n%.2000s", m.stderr.String())
	}
	if text := ofType(events(t, m.stdout.Bytes()), "run.end")[0]["text"]; text != "answer 2" {
		t.Errorf("answer = %q; want the model's answer to the resumed session", text)
	}
	reqs := srv.requests()
	last := reqs[len(reqs)-1].body
	if len(last) > window || !bytes.Contains(last, []byte("over ink's resume line bound of 8 MiB; the transcript keeps it whole")) {
		t.Errorf("the resumed request is %d bytes and lacks the note", len(last))
	}
	// The transcript grew, and still holds every byte it had.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var size int
	fmt.Sscan(before, &size)
	if h := sha256.Sum256(data[:size]); fmt.Sprintf("%d %x", size, h) != before || len(data) == size {
		t.Error("the resumed session changed what the transcript held, or wrote nothing")
	}
	assertPeak(t, m, e.home, 180*mib)
}
