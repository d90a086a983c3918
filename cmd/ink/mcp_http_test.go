package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/session"
)

// initializeBody is an MCP initialize request, the first a client sends.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// rawMCP sends one raw HTTP request to an `ink mcp --http` server, as curl
// would, and returns its status and body.
func rawMCP(t *testing.T, method, url string, headers map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(initializeBody)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v // net/http sends the request's Host, not a header
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(data)
}

// homeTree lists every file and directory under dir, with each file's size
// and modification time.
func homeTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		line := p + "/"
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			line = fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestMCPHTTPAuth attacks a real `ink mcp --http` as a local process or a
// web page would: without the token, with a wrong one, and from a foreign
// Origin (with and without the token), on every method. Each gets 401 or
// 403, and none opens a session or writes a file under INK_HOME. A client
// that sends the token it printed works; the token file is the owner's
// alone while the server runs and is gone when it stops.
func TestMCPHTTPAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript+`  - when: {user: "^read the token", turn: 1}
    reply: {calls: [{tool: bash, args: {command: "cat \"$INK_HOME\"/mcp/*.token"}}]}
  - when: {user: "^read the token"}
    reply: {text: "read it"}
`)
	p := e.start("mcp", "--model", "script:"+script, "--http", "127.0.0.1:0")
	url, token := httpServerOf(t, p)
	if n := strings.Count(p.stderr.String(), token); n != 1 {
		t.Fatalf("the token was printed %d times, want once:\n%s", n, p.stderr.String())
	}
	var port int
	fmt.Sscanf(url, "http://127.0.0.1:%d/", &port)
	tokenPath := filepath.Join(e.home, "mcp", fmt.Sprintf("%d.token", port))
	fi, err := os.Stat(tokenPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v, %v; want mode 0600", tokenPath, fi, err)
	}
	if data, _ := os.ReadFile(tokenPath); strings.TrimSpace(string(data)) != token {
		t.Fatalf("token file holds %q, want the printed token", data)
	}

	before := homeTree(t, e.home)
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		code    int
	}{
		{"no token", "POST", nil, 401},
		{"no token, SSE stream", "GET", nil, 401},
		{"no token, delete a session", "DELETE", map[string]string{"Mcp-Session-Id": "LLGZ2J7L2MH7Z7LFJ4R5CKLASA"}, 401},
		{"wrong token", "POST", map[string]string{"Authorization": "Bearer " + wrong}, 401},
		{"token as basic auth", "POST", map[string]string{"Authorization": "Basic " + token}, 401},
		{"foreign origin", "POST", map[string]string{"Origin": "http://evil.example"}, 403},
		{"foreign origin with the token", "POST", map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer " + token}, 403},
		{"loopback page with the token", "GET", map[string]string{"Origin": "http://localhost:3000", "Authorization": "Bearer " + token}, 403},
		{"DNS rebinding with the token", "POST", map[string]string{"Host": "evil.example:" + fmt.Sprint(port), "Authorization": "Bearer " + token}, 403},
	} {
		code, body := rawMCP(t, tc.method, url, tc.headers)
		if code != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.code)
		}
		if strings.Contains(body, "protocolVersion") || strings.Contains(body, token) {
			t.Errorf("%s: the refusal answered or showed the token: %q", tc.name, body)
		}
	}
	if after := homeTree(t, e.home); after != before {
		log, _ := os.ReadFile(filepath.Join(e.home, "logs", "ink.log"))
		t.Fatalf("refused requests changed INK_HOME:\nbefore:\n%s\nafter:\n%s\n%s", before, after, log)
	}
	if list, err := session.ListSessions(e.home, e.dir); err != nil || len(list) != 0 {
		t.Fatalf("refused requests opened %d sessions (%v)", len(list), err)
	}

	// The printed token works, for curl and for an SDK client.
	if code, body := rawMCP(t, "POST", url, map[string]string{"Authorization": "Bearer " + token}); code != 200 || !strings.Contains(body, "protocolVersion") {
		t.Fatalf("initialize with the token: %d %q", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := connectHTTP(t, ctx, url, token)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "quick look"}})
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "quick report") {
		t.Fatalf("task with the token: %v\n%v", err, res)
	}
	// A child that reads the token file sees it redacted, like any secret.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task", Arguments: map[string]any{"prompt": "read the token"}})
	if err != nil || res.IsError {
		t.Fatalf("task reading the token: %v\n%v", err, res)
	}
	children, _ := filepath.Glob(filepath.Join(e.home, "sessions", "*", "*", "children", childIDOf(t, resultText(res))+".jsonl"))
	if len(children) != 1 {
		t.Fatalf("child transcripts: %v", children)
	}
	tr, err := os.ReadFile(children[0])
	if err != nil || !strings.Contains(string(tr), "[redacted:ink mcp token]") {
		t.Fatalf("the child's bash result does not show the token redacted (%v):\n%s", err, tr)
	}
	cs.Close()
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("ink mcp --http exited %d after SIGTERM\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
		t.Fatalf("the token file outlived its server: %v", err)
	}
	assertNoSecret(t, e.home, token)
}

// TestMCPHTTPTokenFile: --token-file gives the token (never printed, never
// copied under INK_HOME); a file others can read, a short token,
// --allow-remote without --token-file and --token-file without --http are
// refused before anything is written.
func TestMCPHTTPTokenFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	token := "tok-" + strings.Repeat("9f8e7d6c", 5)
	good := filepath.Join(t.TempDir(), "token")
	open := filepath.Join(t.TempDir(), "open")
	short := filepath.Join(t.TempDir(), "short")
	for path, body := range map[string]string{good: token + "\n", open: token, short: "hunter2-hunter2"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(open, 0o644)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--http", "127.0.0.1:0", "--token-file", open}, "chmod 600"},
		{[]string{"--http", "127.0.0.1:0", "--token-file", short}, "at least 32"},
		{[]string{"--http", "127.0.0.1:0", "--token-file", filepath.Join(e.dir, "missing")}, "no such file"},
		{[]string{"--http", "0.0.0.0:0", "--allow-remote"}, "--token-file FILE"},
		{[]string{"--token-file", good}, "go with --http"},
	} {
		p, code := e.run(append([]string{"mcp", "--model", "script:" + script}, tc.args...)...)
		if code != 2 || !strings.Contains(p.stderr.String(), tc.says) {
			t.Errorf("ink mcp %v: exit %d, want 2 saying %q:\n%s", tc.args, code, tc.says, p.stderr.String())
		}
	}
	if _, err := os.Stat(e.home); !os.IsNotExist(err) {
		t.Fatalf("refused invocations wrote INK_HOME:\n%s", homeTree(t, e.home))
	}

	p := e.start("mcp", "--model", "script:"+script, "--http", "127.0.0.1:0", "--token-file", good)
	var url string
	eventually(t, func() bool {
		out := p.stderr.String()
		if i := strings.Index(out, "listening on "); i >= 0 && strings.Contains(out, "with the token of "+good) {
			url = strings.Fields(out[i+len("listening on "):])[0]
			return true
		}
		return false
	})
	if code, _ := rawMCP(t, "POST", url, map[string]string{"Authorization": "Bearer " + token[:len(token)-1]}); code != 401 {
		t.Fatalf("a token one character short: %d, want 401", code)
	}
	if code, body := rawMCP(t, "POST", url, map[string]string{"Authorization": "Bearer " + token}); code != 200 || !strings.Contains(body, "protocolVersion") {
		t.Fatalf("initialize with the file's token: %d %q", code, body)
	}
	if strings.Contains(p.stderr.String(), token) {
		t.Fatalf("the server printed the token of --token-file:\n%s", p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(e.home, "mcp")); !os.IsNotExist(err) {
		t.Fatalf("with --token-file the server still wrote a token under INK_HOME: %v", err)
	}
}
