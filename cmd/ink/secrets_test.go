package main

import (
	"fmt"
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
