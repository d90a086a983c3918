package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// The tests in this file run ink against local httptest servers that speak
// the providers' real wire formats (OpenAI Chat Completions SSE, Anthropic
// Messages SSE). Every agent, the main one and each child, is its own
// worker process: the requests the servers see come from those processes.

// Values that must never be written anywhere under INK_HOME.
const (
	fakeOpenAIKey    = "sk-test-openai-4f1b9c0e7d2a-never-on-disk"
	fakeAnthropicKey = "sk-ant-test-9a8b7c6d5e4f-never-on-disk"
	hostSecret       = "host-secret-3e5f7a9b-must-not-leak"
)

// seen is one request a fake provider received.
type seen struct {
	path   string
	header http.Header
	body   []byte
}

// reply is what a fake provider answers: a JSON body (with status, 200 by
// default), or the SSE events of a stream; cut drops the connection after the events,
// before the stream's end.
type reply struct {
	status int
	header http.Header
	body   string
	events []sseEvent
	cut    bool
	// stream, when set, writes the body of a stream itself, after any
	// events: for bodies too large to hold. It stops when a write fails.
	stream func(w io.Writer) error
}

// sseEvent is one server-sent event; name is "" for OpenAI's data-only
// events.
type sseEvent struct {
	name string
	data string
}

// fakeProvider is an httptest server that records every request and
// answers each with decide(n, request), n counting from 1.
type fakeProvider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []seen
	decide func(n int, r seen) reply
}

func newFakeProvider(t *testing.T, decide func(n int, r seen) reply) *fakeProvider {
	t.Helper()
	f := &fakeProvider{decide: decide}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seen{path: r.URL.Path, header: r.Header.Clone(), body: body}
	f.mu.Lock()
	f.reqs = append(f.reqs, s)
	n := len(f.reqs)
	f.mu.Unlock()
	rep := f.decide(n, s)
	for k, vs := range rep.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.body != "" || (rep.status != 0 && rep.status != http.StatusOK) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cmp.Or(rep.status, http.StatusOK))
		io.WriteString(w, rep.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, ev := range rep.events {
		if ev.name != "" {
			fmt.Fprintf(w, "event: %s\n", ev.name)
		}
		fmt.Fprintf(w, "data: %s\n\n", ev.data)
		if fl != nil {
			fl.Flush()
		}
	}
	if rep.stream != nil {
		rep.stream(w)
	}
	if rep.cut {
		// Abort the connection mid-response, as a dropped network would.
		panic(http.ErrAbortHandler)
	}
}

// requests returns what the server received so far.
func (f *fakeProvider) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// badRequest is the answer to a request the test did not expect; ink
// reports it and the test fails on the outcome.
func badRequest(why string) reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "fake server: " + why, "type": "invalid_request_error"}})
	return reply{status: http.StatusBadRequest, body: string(b)}
}

// closedPort returns a loopback address nothing listens on, so that a probe
// of a local server (Ollama, vLLM) can never reach a real one.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// providerEnv is newEnv with no provider configured except what the test
// adds, local servers pointed at a closed port, and a host secret that no
// worker may see.
func providerEnv(t *testing.T, vars ...string) *env {
	t.Helper()
	e := newEnv(t)
	dead := closedPort(t)
	e.vars = append(e.vars, "OLLAMA_HOST="+dead, "VLLM_BASE_URL=http://"+dead+"/v1", "HOST_SECRET="+hostSecret)
	e.vars = append(e.vars, vars...)
	return e
}

// assertNoSecret fails if any file under dir holds one of the secrets.
func assertNoSecret(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no files under %s: nothing was checked", dir)
	}
}

// ---- OpenAI Chat Completions ------------------------------------------------

type oaiRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []oaiMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// text is the message's content, a string or an array of text parts.
func (m oaiMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func parseOAI(t *testing.T, s seen) oaiRequest {
	t.Helper()
	var r oaiRequest
	if err := json.Unmarshal(s.body, &r); err != nil {
		t.Fatalf("request body is not Chat Completions JSON: %v\n%s", err, s.body)
	}
	return r
}

func (r oaiRequest) toolNames() []string {
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Function.Name)
	}
	slices.Sort(names)
	return names
}

func (r oaiRequest) last() oaiMessage {
	if len(r.Messages) == 0 {
		return oaiMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// oaiChunk renders one chat.completion.chunk.
func oaiChunk(delta map[string]any, finish any) sseEvent {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1764460800, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
	return sseEvent{data: string(b)}
}

// oaiEnd is the usage chunk (stream_options.include_usage) and [DONE].
func oaiEnd(in, out int) []sseEvent {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1764460800, "model": "test-model",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return []sseEvent{{data: string(b)}, {data: "[DONE]"}}
}

// oaiText streams text in a few pieces.
func oaiText(text string, in, out int) reply {
	evs := []sseEvent{oaiChunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, piece := range splitEvery(text, 7) {
		evs = append(evs, oaiChunk(map[string]any{"content": piece}, nil))
	}
	evs = append(evs, oaiChunk(map[string]any{}, "stop"))
	return reply{events: append(evs, oaiEnd(in, out)...)}
}

// oaiCall streams one tool call whose arguments arrive in many small
// fragments, the way OpenAI sends them.
func oaiCall(id, name string, args any, in, out int) reply {
	raw, _ := json.Marshal(args)
	evs := []sseEvent{
		oaiChunk(map[string]any{"role": "assistant", "content": nil}, nil),
		oaiChunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": ""},
		}}}, nil),
	}
	for _, piece := range splitEvery(string(raw), 5) {
		evs = append(evs, oaiChunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "function": map[string]any{"arguments": piece},
		}}}, nil))
	}
	evs = append(evs, oaiChunk(map[string]any{}, "tool_calls"))
	return reply{events: append(evs, oaiEnd(in, out)...)}
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

const (
	childPrompt = "count the widgets in the inventory"
	// probeCommand shows whether the child's bash sees the host secret (it
	// must not). That the provider variables reach the child's worker shows
	// in its requests: they carry the key and reach OPENAI_BASE_URL.
	probeCommand = `echo "secret=[$HOST_SECRET] home=[${INK_HOME:+set}]"`
	probeSeen    = "secret=[] home=[set]"
)

// delegating is the conversation of the OpenAI end-to-end test: the main
// agent (the one with the task tool) delegates; the child runs one bash
// command and reports; the main agent's answer quotes the child.
func delegating(t *testing.T) func(n int, s seen) reply {
	return func(n int, s seen) reply {
		var r oaiRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			return badRequest("body is not JSON")
		}
		isMain := slices.Contains(r.toolNames(), "task")
		last := r.last()
		switch {
		case isMain && last.Role == "user":
			return oaiCall("call_task_1", "task", map[string]any{"prompt": childPrompt}, 900, 40)
		case isMain && last.Role == "tool":
			return oaiText("Summary: "+firstLine(last.text()), 1100, 30)
		case !isMain && last.Role == "user":
			return oaiCall("call_bash_1", "bash", map[string]any{"command": probeCommand}, 700, 25)
		case !isMain && last.Role == "tool":
			return oaiText("widgets: 7 ("+firstLine(last.text())+")", 800, 20)
		}
		return badRequest(fmt.Sprintf("unexpected request %d (last role %q)", n, last.Role))
	}
}

// TestProviderOpenAIEndToEnd: `ink run --model openai/test-model` against a
// Chat Completions server found through OPENAI_BASE_URL. The main agent
// calls task, the child (its own worker process on the same binding) runs
// bash and answers, and the main agent's answer uses it. The server sees
// the right tools, tool calls and tool results, and the key; no file under
// INK_HOME holds the key; the child's bash never sees a variable outside
// the worker allowlist.
func TestProviderOpenAIEndToEnd(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, delegating(t))
	base := srv.srv.URL + "/v1"
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+base)
	p, code := e.run("run", "--json", "--model", "openai/test-model", "how many widgets are there?")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	runEnd := ofType(evs, "run.end")
	want := "Summary: widgets: 7 (" + probeSeen + ")"
	if len(runEnd) != 1 || runEnd[0]["status"] != "completed" || runEnd[0]["text"] != want {
		t.Fatalf("run.end = %v, want completed with text %q", runEnd, want)
	}
	starts := ofType(evs, "task.start")
	if len(starts) != 1 {
		t.Fatalf("want one task.start, got %v", starts)
	}
	if pid := starts[0]["pid"].(float64); int(pid) == p.cmd.Process.Pid || pid <= 0 {
		t.Fatalf("the child did not run in its own process: pid %v", pid)
	}
	// Usage from the final chunks is counted per agent.
	usage, _ := runEnd[0]["usage"].(map[string]any)
	if m, _ := usage["main"].(map[string]any); m["input"] != 2000.0 || m["output"] != 70.0 {
		t.Errorf("main usage = %v, want 2000 in / 70 out", usage["main"])
	}

	// What the server saw: four streamed requests with the key, in order
	// main, child, child, main.
	reqs := srv.requests()
	if len(reqs) != 4 {
		t.Fatalf("the server got %d requests, want 4", len(reqs))
	}
	var parsed []oaiRequest
	for i, s := range reqs {
		if s.path != "/v1/chat/completions" {
			t.Errorf("request %d went to %s", i+1, s.path)
		}
		if got := s.header.Get("Authorization"); got != "Bearer "+fakeOpenAIKey {
			t.Errorf("request %d Authorization = %q, want the bearer key", i+1, got)
		}
		r := parseOAI(t, s)
		if r.Model != "test-model" || !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
			t.Errorf("request %d: model %q stream %v stream_options %+v", i+1, r.Model, r.Stream, r.StreamOptions)
		}
		parsed = append(parsed, r)
	}
	// An agent that may delegate also follows its children.
	allTools := []string{"bash", "edit", "find", "grep", "ls", "read", "task", "task_cancel", "task_status", "task_wait", "write"}
	childTools := []string{"bash", "edit", "find", "grep", "ls", "read", "write"}
	for i, wantTools := range [][]string{allTools, childTools, childTools, allTools} {
		if got := parsed[i].toolNames(); !slices.Equal(got, wantTools) {
			t.Errorf("request %d tools = %v, want %v", i+1, got, wantTools)
		}
		for _, tl := range parsed[i].Tools {
			if tl.Type != "function" || !json.Valid(tl.Function.Parameters) || len(tl.Function.Parameters) < 2 {
				t.Errorf("request %d tool %s: type %q parameters %s", i+1, tl.Function.Name, tl.Type, tl.Function.Parameters)
			}
		}
	}
	if parsed[0].last().Role != "user" || !strings.Contains(parsed[0].last().text(), "how many widgets") {
		t.Errorf("main's first request does not end with the user prompt: %+v", parsed[0].last())
	}
	if parsed[1].last().Role != "user" || parsed[1].last().text() != childPrompt {
		t.Errorf("child's first request does not carry the task prompt: %+v", parsed[1].last())
	}
	if parsed[0].Messages[0].Role != "system" || parsed[1].Messages[0].Role != "system" ||
		parsed[1].Messages[0].text() == parsed[0].Messages[0].text() {
		t.Errorf("the child's system prompt should be the main one plus the subagent suffix")
	}
	// The tool call and its result made the round trip, for the child's
	// bash call and for the main agent's task call.
	checkRoundTrip := func(r oaiRequest, callID, tool, argKey, argWant, resultPrefix string) {
		t.Helper()
		n := len(r.Messages)
		if n < 2 {
			t.Fatalf("request too short: %+v", r.Messages)
		}
		call, res := r.Messages[n-2], r.Messages[n-1]
		if call.Role != "assistant" || len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != callID || call.ToolCalls[0].Function.Name != tool {
			t.Fatalf("assistant message with the %s call not sent back: %+v", tool, call)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(call.ToolCalls[0].Function.Arguments), &args); err != nil || args[argKey] != argWant {
			t.Errorf("%s arguments sent back as %q, want %s=%q", tool, call.ToolCalls[0].Function.Arguments, argKey, argWant)
		}
		if res.Role != "tool" || res.ToolCallID != callID || !strings.HasPrefix(res.text(), resultPrefix) {
			t.Errorf("%s result sent as %+v (text %q), want tool_call_id %s and text starting %q", tool, res, res.text(), callID, resultPrefix)
		}
	}
	checkRoundTrip(parsed[2], "call_bash_1", "bash", "command", probeCommand, probeSeen)
	checkRoundTrip(parsed[3], "call_task_1", "task", "prompt", childPrompt, "widgets: 7 ("+probeSeen+")")

	// The launch record names the endpoint, never the key.
	mainPath := runEnd[0]["transcript"].(string)
	tr, err := session.Open(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	var rec session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			if rec, err = session.ParseTaskRecord(m.TaskRecord); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantBinding := model.Binding{Provider: "openai", Model: "test-model", BaseURL: base}
	if rec.Binding == nil || *rec.Binding != wantBinding || rec.Status != "completed" || rec.Transcript == nil {
		t.Fatalf("TaskRecord %+v, want binding %+v and completed", rec, wantBinding)
	}
	child, err := session.Open(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}
	if child.Header.Launch == nil || child.Header.Launch.Binding != wantBinding {
		t.Fatalf("launch record binding = %+v, want %+v", child.Header.Launch, wantBinding)
	}
	assertNoSecret(t, e.home, fakeOpenAIKey, hostSecret)
	for name, out := range map[string]string{"stdout": p.snapshot(), "stderr": p.stderr.String()} {
		if strings.Contains(out, fakeOpenAIKey) {
			t.Errorf("%s shows the key", name)
		}
	}
}

// TestProviderBaseURLAndRetry: --base-url points the generic
// OpenAI-compatible path at a server that needs no key; the child inherits
// the endpoint; a 429 with Retry-After is retried and the retry surfaces as
// a warning event of the child in --json.
func TestProviderBaseURLAndRetry(t *testing.T) {
	t.Parallel()
	var limited sync.Once
	srv := newFakeProvider(t, func(n int, s seen) reply {
		var r oaiRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			return badRequest("body is not JSON")
		}
		if slices.Contains(r.toolNames(), "task") {
			if r.last().Role == "tool" {
				return oaiText("child said: "+firstLine(r.last().text()), 50, 5)
			}
			return oaiCall("call_1", "task", map[string]any{"prompt": "ping"}, 50, 5)
		}
		rep := reply{}
		limited.Do(func() {
			rep = reply{status: http.StatusTooManyRequests, header: http.Header{"Retry-After": {"1"}},
				body: `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`}
		})
		if rep.status != 0 {
			return rep
		}
		return oaiText("pong", 20, 2)
	})
	base := srv.srv.URL + "/v1"
	e := providerEnv(t)
	p, code := e.run("run", "--json", "--model", "openai/local-model", "--base-url", base, "ping the child")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	if got := ofType(evs, "run.end")[0]["text"]; got != "child said: pong" {
		t.Fatalf("answer = %q", got)
	}
	var retries []map[string]any
	for _, w := range ofType(evs, "warning") {
		if s, _ := w["text"].(string); strings.Contains(s, "429") && strings.Contains(s, "retrying") {
			retries = append(retries, w)
		}
	}
	if len(retries) != 1 || retries[0]["agent"] != "main/1" {
		t.Fatalf("want one retry warning from main/1, got %v (all warnings %v)", retries, ofType(evs, "warning"))
	}
	reqs := srv.requests()
	if len(reqs) != 4 {
		t.Fatalf("the server got %d requests, want 4 (main, child 429, child retry, main)", len(reqs))
	}
	for i, s := range reqs {
		if s.path != "/v1/chat/completions" || s.header.Get("Authorization") != "" {
			t.Errorf("request %d: path %s, Authorization %q (no key was configured)", i+1, s.path, s.header.Get("Authorization"))
		}
		if r := parseOAI(t, s); r.Model != "local-model" {
			t.Errorf("request %d model %q", i+1, r.Model)
		}
	}
	rec := onlyTaskRecord(t, ofType(evs, "run.end")[0]["transcript"].(string))
	if want := (model.Binding{Provider: "openai", Model: "local-model", BaseURL: base}); rec.Binding == nil || *rec.Binding != want {
		t.Fatalf("child binding = %+v, want %+v", rec.Binding, want)
	}
}

// onlyTaskRecord returns the TaskRecord of the single task call in the
// main transcript at path.
func onlyTaskRecord(t *testing.T, path string) session.TaskRecord {
	t.Helper()
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	if len(recs) != 1 {
		t.Fatalf("want one TaskRecord in %s, got %d", path, len(recs))
	}
	return recs[0]
}

// TestProviderRejectedKey: with no --model, ink picks OpenAI because only
// its key is set; the server rejects the key with 401; ink exits 1 with a
// message naming OPENAI_API_KEY, does not retry, and never shows the key.
func TestProviderRejectedKey(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(int, seen) reply {
		return reply{status: http.StatusUnauthorized,
			body: `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	p, code := e.run("run", "hello")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	stderr := p.stderr.String()
	if !strings.Contains(stderr, "set OPENAI_API_KEY to a valid key") || !strings.Contains(stderr, "401") {
		t.Fatalf("stderr does not say to fix OPENAI_API_KEY:\n%s", stderr)
	}
	if strings.Contains(stderr, fakeOpenAIKey) || strings.Contains(p.snapshot(), fakeOpenAIKey) {
		t.Fatalf("the key is shown:\n%s", stderr)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("a rejected key was retried: %d requests", len(reqs))
	}
	if r := parseOAI(t, reqs[0]); r.Model == "" {
		t.Fatalf("the default choice sent no model: %s", reqs[0].body)
	}
	assertNoSecret(t, e.home, fakeOpenAIKey)
}

// ---- Anthropic Messages -----------------------------------------------------

type antRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

func (r antRequest) toolNames() []string {
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// antEvent renders one named Messages stream event.
func antEvent(v map[string]any) sseEvent {
	b, _ := json.Marshal(v)
	return sseEvent{name: v["type"].(string), data: string(b)}
}

// antStream wraps content events in message_start … message_stop.
func antStream(stop string, in, out int, content ...sseEvent) reply {
	evs := []sseEvent{antEvent(map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-test", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1},
	}})}
	evs = append(evs, sseEvent{name: "ping", data: `{"type":"ping"}`})
	evs = append(evs, content...)
	evs = append(evs,
		antEvent(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}}),
		antEvent(map[string]any{"type": "message_stop"}),
	)
	return reply{events: evs}
}

func antText(text string, in, out int) reply {
	evs := []sseEvent{antEvent(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})}
	for _, piece := range splitEvery(text, 6) {
		evs = append(evs, antEvent(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": piece}}))
	}
	evs = append(evs, antEvent(map[string]any{"type": "content_block_stop", "index": 0}))
	return antStream("end_turn", in, out, evs...)
}

func antToolUse(id, name string, input any, in, out int) reply {
	raw, _ := json.Marshal(input)
	evs := []sseEvent{antEvent(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})}
	for _, piece := range splitEvery(string(raw), 4) {
		evs = append(evs, antEvent(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}))
	}
	evs = append(evs, antEvent(map[string]any{"type": "content_block_stop", "index": 0}))
	return antStream("tool_use", in, out, evs...)
}

// TestProviderAnthropicEndToEnd: the same delegation on anthropic/… through
// ANTHROPIC_BASE_URL: the main agent's tool_use of task reaches a child
// worker on the same binding, and its tool_result comes back to the model.
func TestProviderAnthropicEndToEnd(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply {
		var r antRequest
		if err := json.Unmarshal(s.body, &r); err != nil || len(r.Messages) == 0 {
			return badRequest("body is not a Messages request")
		}
		last := r.Messages[len(r.Messages)-1]
		isMain := slices.Contains(r.toolNames(), "task")
		switch {
		case isMain && len(last.Content) > 0 && last.Content[0].Type == "tool_result":
			var text string
			var blocks []struct{ Text string }
			if json.Unmarshal(last.Content[0].Content, &text) != nil && json.Unmarshal(last.Content[0].Content, &blocks) == nil && len(blocks) > 0 {
				text = blocks[0].Text
			}
			return antText("The scout says: "+firstLine(text), 600, 12)
		case isMain:
			return antToolUse("toolu_task_1", "task", map[string]any{"prompt": "name the entry point"}, 500, 20)
		default:
			return antText("main.go is the entry point", 300, 8)
		}
	})
	e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey, "ANTHROPIC_BASE_URL="+srv.srv.URL)
	p, code := e.run("run", "--json", "--model", "anthropic/claude-test", "where does it start?")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	runEnd := ofType(evs, "run.end")[0]
	if runEnd["text"] != "The scout says: main.go is the entry point" {
		t.Fatalf("answer = %q", runEnd["text"])
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("the server got %d requests, want 3", len(reqs))
	}
	var parsed []antRequest
	for i, s := range reqs {
		// The SDK sends the key as x-api-key or as a bearer token.
		keySent := s.header.Get("X-Api-Key") == fakeAnthropicKey || s.header.Get("Authorization") == "Bearer "+fakeAnthropicKey
		if s.path != "/v1/messages" || !keySent || s.header.Get("Anthropic-Version") == "" {
			t.Errorf("request %d: path %s, key sent %v, anthropic-version %q", i+1, s.path, keySent, s.header.Get("Anthropic-Version"))
		}
		var r antRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Model != "claude-test" || !r.Stream || r.MaxTokens <= 0 || len(r.System) == 0 {
			t.Errorf("request %d: model %q stream %v max_tokens %d system %s", i+1, r.Model, r.Stream, r.MaxTokens, r.System)
		}
		parsed = append(parsed, r)
	}
	if !slices.Contains(parsed[0].toolNames(), "task") || slices.Contains(parsed[1].toolNames(), "task") {
		t.Errorf("tools: main %v, child %v", parsed[0].toolNames(), parsed[1].toolNames())
	}
	for _, tl := range parsed[0].Tools {
		if !json.Valid(tl.InputSchema) || !bytes.Contains(tl.InputSchema, []byte(`"object"`)) {
			t.Errorf("tool %s input_schema %s", tl.Name, tl.InputSchema)
		}
	}
	final := parsed[2].Messages
	if len(final) < 3 {
		t.Fatalf("final main request has %d messages", len(final))
	}
	use, res := final[len(final)-2], final[len(final)-1]
	if use.Role != "assistant" || len(use.Content) != 1 || use.Content[0].Type != "tool_use" || use.Content[0].ID != "toolu_task_1" ||
		!bytes.Contains(use.Content[0].Input, []byte("name the entry point")) {
		t.Errorf("tool_use not sent back: %+v", use)
	}
	if res.Role != "user" || len(res.Content) != 1 || res.Content[0].Type != "tool_result" || res.Content[0].ToolUseID != "toolu_task_1" ||
		!bytes.Contains(res.Content[0].Content, []byte("main.go is the entry point")) {
		t.Errorf("tool_result not sent back: %+v", res)
	}
	rec := onlyTaskRecord(t, runEnd["transcript"].(string))
	if want := (model.Binding{Provider: "anthropic", Model: "claude-test", BaseURL: srv.srv.URL}); rec.Binding == nil || *rec.Binding != want {
		t.Fatalf("child binding = %+v, want %+v", rec.Binding, want)
	}
	assertNoSecret(t, e.home, fakeAnthropicKey)
}

// TestProviderStreamCut: a child's stream is cut mid-reply by the server.
// The child ends as a crash with the provider's reason, its usage marked
// incomplete; the main agent gets the failure as the task result and
// answers; ink exits 0 since the main agent completed.
func TestProviderStreamCut(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply {
		var r oaiRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			return badRequest("body is not JSON")
		}
		if slices.Contains(r.toolNames(), "task") {
			if r.last().Role == "tool" {
				return oaiText("the child failed: "+firstLine(r.last().text()), 50, 5)
			}
			return oaiCall("call_1", "task", map[string]any{"prompt": "write a long report"}, 50, 5)
		}
		rep := oaiText("The first half of the report, and then", 40, 4)
		rep.events = rep.events[:3] // role chunk and two text pieces, no finish, no usage, no [DONE]
		rep.cut = true
		return rep
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	p, code := e.run("run", "--json", "--model", "openai/test-model", "report")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	end := ofType(evs, "task.end")
	if len(end) != 1 || end[0]["status"] != "crash" || !strings.Contains(fmt.Sprint(end[0]["reason"]), "cut") {
		t.Fatalf("task.end = %v, want a crash saying the stream was cut", end)
	}
	rec := onlyTaskRecord(t, ofType(evs, "run.end")[0]["transcript"].(string))
	if rec.Status != "crash" || rec.Usage == nil || !rec.Usage.Incomplete || !strings.Contains(rec.Reason, "cut") {
		t.Fatalf("TaskRecord status %q reason %q usage %+v, want crash, the cut, incomplete usage", rec.Status, rec.Reason, rec.Usage)
	}
	child, err := session.Open(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}
	if last, ok := child.LastAttemptEnd(); !ok || last.Status != "crash" || last.Usage == nil || !last.Usage.Incomplete {
		t.Fatalf("child's attempt end = %+v, want crash with incomplete usage", last)
	}
	// A reply cut after it began is not retried: what was shown stays shown.
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("the server got %d requests, want 3 (main, child once, main)", n)
	}
	if got := ofType(evs, "run.end")[0]["text"].(string); !strings.HasPrefix(got, "the child failed: ") {
		t.Fatalf("answer = %q", got)
	}
}

// TestProviderEndpointDrift: a child launched on one endpoint is not
// resumed on another (model-drift names both URLs, nothing changes), and
// is resumed on the same one, which then sees the child's history.
func TestProviderEndpointDrift(t *testing.T) {
	t.Parallel()
	answer := func(label string) func(int, seen) reply {
		return func(n int, s seen) reply {
			var r oaiRequest
			if err := json.Unmarshal(s.body, &r); err != nil {
				return badRequest("body is not JSON")
			}
			return oaiText(fmt.Sprintf("%s answer %d to %q after %d messages", label, n, r.last().text(), len(r.Messages)), 10, 2)
		}
	}
	first := newFakeProvider(t, answer("first"))
	second := newFakeProvider(t, answer("second"))
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+first.srv.URL+"/v1")
	p, code := e.run("task", "--model", "openai/test-model", "look around")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	rec := shellRecord(t, e)
	before, err := os.ReadFile(rec.Transcript.Path)
	if err != nil {
		t.Fatal(err)
	}

	e.vars = append(e.vars, "OPENAI_BASE_URL="+second.srv.URL+"/v1") // the last value wins
	p, code = e.run("task", "--model", "openai/test-model", "--resume", rec.ChildID, "go on")
	if code != 3 {
		t.Fatalf("resume on another endpoint: exit %d, want 3\nstderr:\n%s", code, p.stderr.String())
	}
	want := "model-drift: launched on openai/test-model at " + first.srv.URL + "/v1, would now run on openai/test-model at " + second.srv.URL + "/v1"
	if !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, p.stderr.String())
	}
	if after, _ := os.ReadFile(rec.Transcript.Path); !bytes.Equal(before, after) {
		t.Fatalf("a refused resume changed the child's transcript")
	}
	if n := len(second.requests()); n != 0 {
		t.Fatalf("the second endpoint got %d requests", n)
	}

	e.vars = append(e.vars, "OPENAI_BASE_URL="+first.srv.URL+"/v1")
	p, code = e.run("task", "--model", "openai/test-model", "--resume", rec.ChildID, "go on")
	if code != 0 {
		t.Fatalf("resume on the same endpoint: exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	if got := strings.TrimSpace(p.snapshot()); !strings.HasPrefix(got, `first answer 2 to "go on" after 4 messages`) {
		t.Fatalf("resumed answer = %q, want the first server's second answer over the whole history (system, prompt, answer, new prompt)", got)
	}
	assertNoSecret(t, e.home, fakeOpenAIKey)
}

// TestProviderProfileWithoutKey: a profile whose model: names a provider
// without its key is a task rejection that names the variable, before any
// child transcript or worker exists; the main agent sees it and goes on.
func TestProviderProfileWithoutKey(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply {
		var r oaiRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			return badRequest("body is not JSON")
		}
		if r.last().Role == "tool" {
			return oaiText("rejected: "+r.last().text(), 50, 5)
		}
		return oaiCall("call_1", "task", map[string]any{"prompt": "review the diff", "agent": "reviewer"}, 50, 5)
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	profile := filepath.Join(e.home, "agents", "reviewer.md")
	if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(profile, []byte("---\nname: reviewer\ndescription: Reviews diffs\nmodel: anthropic/claude-x\n---\nReview carefully.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, code := e.run("run", "--json", "--model", "openai/test-model", "review it")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	if n := len(ofType(evs, "task.start")); n != 0 {
		t.Fatalf("a child was started (%d task.start)", n)
	}
	answer := ofType(evs, "run.end")[0]["text"].(string)
	for _, want := range []string{`agent "reviewer"`, "ANTHROPIC_API_KEY is not set", "change the model: line of " + profile} {
		if !strings.Contains(answer, want) {
			t.Errorf("the rejection the model saw lacks %q: %s", want, answer)
		}
	}
	mainPath := ofType(evs, "run.end")[0]["transcript"].(string)
	rec := onlyTaskRecord(t, mainPath)
	if rec.Status != "rejected" || rec.Launched || rec.ChildID != "" {
		t.Fatalf("TaskRecord %+v, want a rejection with no child", rec)
	}
	if _, err := os.Stat(session.ChildrenDir(mainPath)); !os.IsNotExist(err) {
		t.Fatalf("a children directory was created: %v", err)
	}
}

// TestProviderPresets: the OpenAI-compatible presets reach their servers
// through their own variables: with no --model and no key, ink picks the
// first model of the Ollama at OLLAMA_HOST; ollama/… sends no key;
// deepseek/… sends DEEPSEEK_API_KEY to DEEPSEEK_BASE_URL.
func TestProviderPresets(t *testing.T) {
	t.Parallel()
	const deepseekKey = "sk-ds-test-5c1d-never-on-disk"
	srv := newFakeProvider(t, func(n int, s seen) reply {
		switch s.path {
		case "/api/tags":
			return reply{body: `{"models":[{"name":"qwen3:8b","model":"qwen3:8b"},{"name":"llama3.2:latest","model":"llama3.2:latest"}]}`}
		case "/v1/chat/completions", "/chat/completions":
			var r oaiRequest
			if err := json.Unmarshal(s.body, &r); err != nil {
				return badRequest("body is not JSON")
			}
			return oaiText("hello from "+r.Model, 10, 3)
		}
		return reply{status: http.StatusNotFound, body: `{"error":"not found"}`}
	})
	host := strings.TrimPrefix(srv.srv.URL, "http://")

	run := func(e *env, args ...string) string {
		t.Helper()
		p, code := e.run(args...)
		if code != 0 {
			t.Fatalf("ink %v: exit %d\nstderr:\n%s", args, code, p.stderr.String())
		}
		return strings.TrimSpace(p.snapshot())
	}
	e := providerEnv(t)
	e.vars = append(e.vars, "OLLAMA_HOST="+host) // the last value wins
	if got := run(e, "run", "hi"); got != "hello from qwen3:8b" {
		t.Fatalf("default choice answered %q, want the local Ollama's first model", got)
	}
	if got := run(e, "run", "--model", "ollama/llama3.2", "hi"); got != "hello from llama3.2" {
		t.Fatalf("ollama/llama3.2 answered %q", got)
	}
	d := providerEnv(t, "DEEPSEEK_API_KEY="+deepseekKey, "DEEPSEEK_BASE_URL="+srv.srv.URL+"/v1")
	if got := run(d, "run", "--model", "deepseek/deepseek-chat", "hi"); got != "hello from deepseek-chat" {
		t.Fatalf("deepseek/deepseek-chat answered %q", got)
	}
	var chats []seen
	for _, s := range srv.requests() {
		if strings.HasSuffix(s.path, "/chat/completions") {
			chats = append(chats, s)
		}
	}
	if len(chats) != 3 {
		t.Fatalf("want 3 chat requests, got %d", len(chats))
	}
	for i, want := range []string{"", "", "Bearer " + deepseekKey} {
		if got := chats[i].header.Get("Authorization"); got != want {
			t.Errorf("chat request %d Authorization = %q, want %q", i+1, got, want)
		}
	}
	assertNoSecret(t, d.home, deepseekKey)
}

// TestProviderContextLength: a server's context-length error ends the run
// as a crash (exit 1) whose message says the conversation is too long for
// the model, and is not retried.
func TestProviderContextLength(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(int, seen) reply {
		return reply{status: http.StatusBadRequest, body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	p, code := e.run("run", "--model", "openai/test-model", "hello")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "longer than the model's context window") {
		t.Fatalf("stderr does not say the context is too long:\n%s", p.stderr.String())
	}
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("a context-length error was retried: %d requests", n)
	}
}

// TestProviderRetriesExhausted: a server that keeps answering 503 is tried
// a bounded number of times, each retry a warning event; then the run ends
// as a crash (exit 1) with the provider's own message.
func TestProviderRetriesExhausted(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(int, seen) reply {
		return reply{status: http.StatusServiceUnavailable, header: http.Header{"Retry-After-Ms": {"50"}},
			body: `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`}
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	p, code := e.run("run", "--json", "--model", "openai/test-model", "hello")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	n := len(srv.requests())
	if n < 2 || n > 10 {
		t.Fatalf("the server got %d requests: retries should be bounded and happen", n)
	}
	var warnings int
	for _, w := range ofType(evs, "warning") {
		if s, _ := w["text"].(string); strings.Contains(s, "503") && strings.Contains(s, "retrying") {
			warnings++
		}
	}
	if warnings != n-1 {
		t.Fatalf("%d requests but %d retry warnings; want one warning per retry", n, warnings)
	}
	end := ofType(evs, "run.end")
	if len(end) != 1 || end[0]["status"] != "crash" {
		t.Fatalf("run.end = %v, want a crash", end)
	}
	reason := fmt.Sprint(end[0]["reason"])
	if !strings.Contains(reason, "currently overloaded") || !strings.Contains(reason, fmt.Sprintf("gave up after %d attempts", n)) {
		t.Fatalf("reason %q lacks the provider's message or the give-up note", reason)
	}
}

// TestRequestStaysSmall: the first request of an agent asked to say OK —
// its system prompt, its tools' schemas, the prompt — is no bigger than
// it was before the prompts grew: every byte of it is paid on every turn.
// A child that cannot delegate (`ink task`, `ink run --max-depth 0`)
// stays within 7.17 KB; a main agent that may delegate adds the task
// tools (task, task_status, task_wait, task_cancel) and the delegation
// section: 11.7 KB, held to 11.8 KB (paths in it vary in length).
func TestRequestStaysSmall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		limit int
	}{
		{"ink task", []string{"task"}, 7170},
		{"ink run --max-depth 0", []string{"run", "--max-depth", "0"}, 7170},
		{"ink run", []string{"run"}, 11800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeProvider(t, func(n int, s seen) reply { return antText("OK", 100, 1) })
			e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey, "ANTHROPIC_BASE_URL="+srv.srv.URL)
			p, code := e.run(append(tc.args, "--model", "anthropic/claude-test", "say OK")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			t.Logf("request body: %d bytes", len(reqs[0].body))
			if n := len(reqs[0].body); n > tc.limit {
				t.Errorf("the request for \"say OK\" is %d bytes, more than %d:\n%s", n, tc.limit, reqs[0].body)
			}
		})
	}
}
