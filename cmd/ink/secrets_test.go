package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSecretsNeverLeave plants a fake key for every provider and a proxy
// password, then runs a child whose bash reads its parent's environment, the
// supervisor's environment and its own. No key may reach a file under
// INK_HOME, a request the model server received (beyond the child's own key
// in its Authorization header), stdout or stderr; the proxy password, which
// bash does see, is redacted with a warning.
func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	const proxyPassword = "proxy-pass-7c1d2e3f4a5b"
	keys := map[string]string{
		"ANTHROPIC_API_KEY":  fakeAnthropicKey,
		"OPENAI_API_KEY":     fakeOpenAIKey,
		"DEEPSEEK_API_KEY":   "sk-test-deepseek-5e6f7a8b9c0d-never",
		"OPENROUTER_API_KEY": "sk-or-test-1a2b3c4d5e6f-never",
		"VLLM_API_KEY":       "vllm-test-0f9e8d7c6b5a-never",
	}
	var supervisor atomic.Int64
	srv := newFakeProvider(t, func(n int, s seen) reply {
		switch n {
		case 1:
			cmd := fmt.Sprintf("echo PARENT; tr '\\0' '\\n' < /proc/$PPID/environ; echo SUPERVISOR; tr '\\0' '\\n' < /proc/%d/environ; echo OWN; env", supervisor.Load())
			return oaiCall("call_env", "bash", map[string]any{"command": cmd}, 100, 10)
		case 2:
			return oaiText("looked at every environment", 200, 10)
		}
		return badRequest("unexpected request")
	})
	vars := []string{"OPENAI_BASE_URL=" + srv.srv.URL + "/v1", "HTTPS_PROXY=http://alice:" + proxyPassword + "@proxy.invalid:3128"}
	for k, v := range keys {
		vars = append(vars, k+"="+v)
	}
	e := providerEnv(t, vars...)
	p := e.start("task", "--json", "--model", "openai/test-model", "look at the environment")
	supervisor.Store(int64(p.cmd.Process.Pid))
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}

	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("the server got %d requests, want 2", len(reqs))
	}
	result := parseOAI(t, reqs[1]).last().text()
	for _, want := range []string{"PARENT", "SUPERVISOR", "OWN", "PATH=", "[redacted:HTTPS_PROXY password]"} {
		if !strings.Contains(result, want) {
			t.Fatalf("the bash result lacks %q, so the test proved nothing:\n%s", want, result)
		}
	}
	// The keys were never there to redact: the worker's and the tool's
	// environments hold none and the supervisor scrubbed its own.
	for name := range keys {
		if strings.Contains(result, "[redacted:"+name+"]") {
			t.Errorf("%s reached a process bash could read (it was redacted, but it must not be there at all):\n%s", name, result)
		}
	}
	secrets := []string{proxyPassword, hostSecret}
	for _, v := range keys {
		secrets = append(secrets, v)
	}
	for i, r := range reqs {
		for _, s := range secrets {
			if strings.Contains(string(r.body), s) {
				t.Errorf("request %d's body holds the secret %q", i+1, s)
			}
			for name, vs := range r.header {
				if s != fakeOpenAIKey && strings.Contains(strings.Join(vs, " "), s) {
					t.Errorf("request %d's header %s holds the secret %q", i+1, name, s)
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(p.stdout.String(), s) || strings.Contains(p.stderr.String(), s) {
			t.Errorf("stdout or stderr holds the secret %q", s)
		}
	}
	assertNoSecret(t, e.home, secrets...)
	warned := false
	for _, ev := range ofType(events(t, p.stdout.Bytes()), "warning") {
		if text, _ := ev["text"].(string); strings.Contains(text, "redacted HTTPS_PROXY password") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning event said a secret was redacted:\n%s", p.stdout.String())
	}
}

// TestSecretNamesAndBase64Redacted: a cloud key in the supervisor's
// environment, under a name other than a provider's, that a child reads out
// of a file in the project — as it is, and base64-encoded by bash at each of
// the three alignments — and that the model then repeats in its answer. No
// form of it reaches a file under INK_HOME, a --json event, stderr or the
// MCP reply; the transcript shows where each was redacted.
func TestSecretNamesAndBase64Redacted(t *testing.T) {
	t.Parallel()
	keys := map[string]string{
		"AWS_SECRET_ACCESS_KEY": "q7Zp2Lx9/Vt4Rk8Wm3Nc6Yb1Hd5Gf0Js+AeEXAMPL",
		"STORAGE_ACCESS_KEY":    "st0rage-Acc3ss-9f8e7d6c5b4a3",
		"SERVICE_CREDENTIALS":   "svc-cred-1a2b3c4d5e6f7a8b9c0d",
	}
	e := newEnv(t)
	for k, v := range keys {
		e.vars = append(e.vars, k+"="+v)
	}
	file := "[default]\naws_secret_access_key = " + keys["AWS_SECRET_ACCESS_KEY"] + "\nstorage = " + keys["STORAGE_ACCESS_KEY"] + "\nservice = " + keys["SERVICE_CREDENTIALS"] + "\n"
	e.write("creds.ini", file)
	// The forms a reader would find: every key as it is, and the part of
	// each encoding that only the key decides (a character short at each
	// end, to stay clear of the characters it shares with its neighbours).
	forms := map[string]string{}
	for name, v := range keys {
		forms[name] = v
		off := strings.Index(file, v)
		for skip := range 3 {
			enc := base64.StdEncoding.EncodeToString([]byte(file[skip:]))
			start, end := (8*(off-skip)+5)/6+1, 8*(off-skip+len(v))/6-1
			forms[fmt.Sprintf("%s base64 at %d", name, skip)] = enc[start:end]
		}
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("x" + keys["AWS_SECRET_ACCESS_KEY"]))
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply: {calls: [{tool: bash, args: {command: "cat creds.ini; for skip in 1 2 3; do tail -c +$skip creds.ini | base64 -w0; echo; done"}}]}
  - when: {tool: bash, result: "redacted"}
    reply: {text: "found `+keys["AWS_SECRET_ACCESS_KEY"]+` and `+b64+`"}
  - reply: {text: "the key was shown in clear"}
`)
	check := func(where, text string) {
		t.Helper()
		for name, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s holds %s (%q)", where, name, f)
			}
		}
	}

	p, code := e.run("task", "--json", "--model", "script:"+script, "read the credentials")
	if code != 0 {
		t.Fatalf("ink task: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.snapshot(), p.stderr.String())
	}
	check("a --json event", p.stdout.String())
	check("stderr of ink task", p.stderr.String())
	if !strings.Contains(p.stdout.String(), "[redacted:AWS_SECRET_ACCESS_KEY]") {
		t.Fatalf("the answer does not show the redaction, so the test proved nothing:\n%s", p.stdout.String())
	}
	warned := map[string]bool{}
	for _, ev := range ofType(events(t, p.stdout.Bytes()), "warning") {
		text, _ := ev["text"].(string)
		for name := range keys {
			if strings.Contains(text, "redacted") && strings.Contains(text, name) {
				warned[name] = true
			}
		}
	}
	if len(warned) != len(keys) {
		t.Errorf("warnings named only %v of the three keys:\n%s", warned, p.stdout.String())
	}

	s := e.startMCP("--model", "script:"+script)
	text, res := s.call(t, "task", map[string]any{"prompt": "read the credentials"})
	reply, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	check("the MCP reply", string(reply))
	if res.IsError || !strings.Contains(text, "found [redacted:AWS_SECRET_ACCESS_KEY] and ") {
		t.Fatalf("MCP reply:\n%s", text)
	}
	s.cs.Close()

	// Each transcript holds the bash result with the four forms of every
	// key redacted.
	var all strings.Builder
	filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			check(path, string(data))
			all.Write(data)
		}
		return nil
	})
	for name := range keys {
		if n := strings.Count(all.String(), "[redacted:"+name+"]"); n < 8 {
			t.Errorf("[redacted:%s] appears %d times under INK_HOME, want at least 8 (four forms in each of two runs)", name, n)
		}
	}
}
