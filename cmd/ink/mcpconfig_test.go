package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// codexServerKeys are the keys Codex documents for one stdio server of
// [mcp_servers.<name>] (its config reference; Codex refuses unknown keys).
var codexServerKeys = []string{
	"command", "args", "env", "env_vars", "cwd", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec",
	"enabled", "required", "supports_parallel_tool_calls", "default_tools_approval_mode", "enabled_tools",
	"disabled_tools", "tools",
}

// codexApprovalModes are the values of approval_mode and
// default_tools_approval_mode.
var codexApprovalModes = []string{"auto", "prompt", "approve"}

// codexConfig is what `ink mcp config codex` prints, parsed as Codex parses
// config.toml.
type codexConfig struct {
	MCPServers map[string]struct {
		Command  string   `toml:"command"`
		Args     []string `toml:"args"`
		EnvVars  []string `toml:"env_vars"`
		Timeout  int64    `toml:"tool_timeout_sec"`
		Parallel bool     `toml:"supports_parallel_tool_calls"`
		Tools    map[string]struct {
			ApprovalMode string `toml:"approval_mode"`
		} `toml:"tools"`
	} `toml:"mcp_servers"`
}

// TestMCPConfigCodex: `ink mcp config codex -- FLAGS` prints one
// [mcp_servers.ink] table, no top-level key, that parses as TOML with only
// keys Codex documents: this binary by its absolute path, `mcp` and the
// flags, env_vars naming the provider variables and INK_* settings that are
// set (never a key's value), a tool timeout beyond the children's, and an
// approval mode that lets task run. A server started with only what that
// table passes (and the few variables Codex always passes) finds its model
// and runs a child; without the key it still answers, saying why.
func TestMCPConfigCodex(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply { return oaiText("the child answered", 40, 4) })
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1", "INK_RESPONSE_HEADER_TIMEOUT=90s")
	p, code := e.run("mcp", "config", "codex", "--", "--task-timeout", "20m", "--max-parallel", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	out := p.snapshot()
	if strings.Contains(out, fakeOpenAIKey) {
		t.Fatalf("the snippet holds the key:\n%s", out)
	}
	var raw map[string]any
	md, err := toml.Decode(out, &raw)
	if err != nil {
		t.Fatalf("the snippet is not TOML: %v\n%s", err, out)
	}
	if len(raw) != 1 || raw["mcp_servers"] == nil || len(raw["mcp_servers"].(map[string]any)) != 1 {
		t.Fatalf("want exactly one [mcp_servers.ink] table and no top-level key:\n%s", out)
	}
	for _, k := range md.Keys() {
		if len(k) == 3 && !slices.Contains(codexServerKeys, k[2]) {
			t.Errorf("key %s is not one Codex documents for a server", k)
		}
	}
	if lines := strings.Count(out, "\n["); strings.HasPrefix(out, "[mcp_servers.ink]\n") == false || lines != 0 {
		t.Errorf("want one table header, [mcp_servers.ink], first:\n%s", out)
	}
	var cfg codexConfig
	if _, err := toml.Decode(out, &cfg); err != nil {
		t.Fatal(err)
	}
	ink := cfg.MCPServers["ink"]
	if want, _ := filepath.EvalSymlinks(inkBin); !filepath.IsAbs(ink.Command) || ink.Command != want {
		t.Errorf("command = %q, want this binary %q", ink.Command, want)
	}
	if !slices.Equal(ink.Args, []string{"mcp", "--task-timeout", "20m", "--max-parallel", "3"}) {
		t.Errorf("args = %q", ink.Args)
	}
	for _, want := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "INK_HOME", "INK_RESPONSE_HEADER_TIMEOUT"} {
		if !slices.Contains(ink.EnvVars, want) {
			t.Errorf("env_vars %q lacks %s", ink.EnvVars, want)
		}
	}
	for _, v := range ink.EnvVars {
		if v == "HOST_SECRET" || v == "PATH" {
			t.Errorf("env_vars passes %s, which ink mcp does not need", v)
		}
	}
	if ink.Timeout < 20*60 || !ink.Parallel {
		t.Errorf("tool_timeout_sec = %d (the children's timeout is 20m), supports_parallel_tool_calls = %v", ink.Timeout, ink.Parallel)
	}
	if m := ink.Tools["task"].ApprovalMode; m != "approve" || !slices.Contains(codexApprovalModes, m) {
		t.Errorf("task's approval_mode = %q, want approve", m)
	}

	// Started as Codex starts it: the variables of env_vars and the few
	// Codex always passes, nothing else.
	values := map[string]string{}
	for _, kv := range e.vars {
		k, v, _ := strings.Cut(kv, "=")
		values[k] = v
	}
	env := []string{"HOME=" + values["HOME"], "PATH=" + values["PATH"], "LANG=C.UTF-8"}
	for _, k := range ink.EnvVars {
		env = append(env, k+"="+values[k])
	}
	codex := *e
	codex.vars = env
	s := codex.startMCP(ink.Args[1:]...)
	text, res := s.call(t, "task", map[string]any{"prompt": "answer please"})
	if res.IsError || !strings.HasPrefix(text, "the child answered") {
		t.Fatalf("a server started with the snippet's variables:\n%s\nstderr:\n%s", text, s.stderr.String())
	}
	if reqs := srv.requests(); len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer "+fakeOpenAIKey {
		t.Fatalf("the provider got %d requests", len(reqs))
	}
	// INK_HOME passed too: the session is where ink's other commands look.
	if _, err := os.Stat(filepath.Join(e.home, "sessions")); err != nil {
		t.Errorf("the server's session is not under INK_HOME: %v", err)
	}
	if _, err := os.Stat(filepath.Join(values["HOME"], ".ink")); err == nil {
		t.Errorf("the server wrote ~/.ink, not INK_HOME")
	}

	// Without the key, as Codex would start it before env_vars listed it.
	bare := *e
	bare.vars = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "OPENAI_API_KEY=") })
	s = bare.startMCP(ink.Args[1:]...)
	if init := s.cs.InitializeResult(); !strings.Contains(init.Instructions, "no model to run") {
		t.Errorf("instructions of a server without a model: %q", init.Instructions)
	}
	text, res = s.call(t, "task", map[string]any{"prompt": "answer please"})
	if !res.IsError || !strings.Contains(text, "no model to run") || !strings.Contains(text, "OPENAI_API_KEY") {
		t.Errorf("a task call of a server without a model: isError %v\n%s", res.IsError, text)
	}
	if !strings.Contains(s.stderr.String(), "no model to run") {
		t.Errorf("stderr does not say why:\n%s", s.stderr.String())
	}
}

// TestMCPConfigOthers: the Claude Code command, the Cursor entry and the
// generic mcp.json entry start this binary with the flags; Claude Code,
// which starts its servers with its own environment, is given the INK_*
// settings by value and no key; Cursor and mcp.json name keys by the
// reference each expands. No output holds a key. Bad input is refused.
func TestMCPConfigOthers(t *testing.T) {
	t.Parallel()
	e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey)
	bin, _ := filepath.EvalSymlinks(inkBin)

	p, code := e.run("mcp", "config", "claude", "--", "--task-timeout", "20m")
	line := strings.TrimSpace(p.snapshot())
	if code != 0 || !strings.HasPrefix(line, "claude mcp add --transport stdio --scope user --env INK_HOME="+e.home+" ink -- "+bin+" mcp --task-timeout 20m") ||
		strings.Contains(line, "ANTHROPIC_API_KEY") || strings.Count(line, "\n") != 0 {
		t.Errorf("claude: exit %d\n%s\n%s", code, line, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "Claude Code starts ink with its own environment, so ANTHROPIC_API_KEY, OLLAMA_HOST, VLLM_BASE_URL reach ink when Claude Code runs where they are set") {
		t.Errorf("claude notes:\n%s", p.stderr.String())
	}

	for client, ref := range map[string]string{"cursor": "${env:ANTHROPIC_API_KEY}", "json": "${ANTHROPIC_API_KEY}"} {
		p, code := e.run("mcp", "config", client, "--", "--model", "anthropic/claude-sonnet-4-5")
		var cfg struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if code != 0 || json.Unmarshal(p.stdout.Bytes(), &cfg) != nil || len(cfg.MCPServers) != 1 {
			t.Errorf("%s: exit %d\n%s\n%s", client, code, p.snapshot(), p.stderr.String())
			continue
		}
		if strings.Contains(p.snapshot()+p.stderr.String(), fakeAnthropicKey) {
			t.Errorf("%s: the output holds the key", client)
		}
		ink := cfg.MCPServers["ink"]
		if ink.Command != bin || !slices.Equal(ink.Args, []string{"mcp", "--model", "anthropic/claude-sonnet-4-5"}) ||
			ink.Env["ANTHROPIC_API_KEY"] != ref || ink.Env["INK_HOME"] != e.home {
			t.Errorf("%s: %+v", client, ink)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "config"}, "give one client"},
		{[]string{"mcp", "config", "vim"}, `unknown client "vim"`},
		{[]string{"mcp", "config", "codex", "--model", "x"}, "flags for the server go after --"},
		{[]string{"mcp", "config", "codex", "--", "--modle", "x"}, "unknown flag: --modle"},
		{[]string{"mcp", "config", "codex", "--", "--http", "8765"}, "over stdio"},
		{[]string{"mcp", "config", "codex", "--", "extra"}, "takes no arguments"},
	} {
		p, code := e.run(tc.args...)
		if code != exitUsage || !strings.Contains(p.stderr.String(), tc.want) || p.snapshot() != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, p.snapshot(), p.stderr.String(), tc.want)
		}
	}
	if entries, _ := os.ReadDir(e.home); len(entries) != 0 {
		t.Errorf("ink mcp config wrote under INK_HOME: %v", entries)
	}
}

// TestMCPUnexpandedReference: a client that passes a key as the text of a
// reference (${ANTHROPIC_API_KEY}) gets a server that says so on every
// call, rather than a provider's rejection of a strange key; ink doctor
// says so too.
func TestMCPUnexpandedReference(t *testing.T) {
	t.Parallel()
	e := providerEnv(t, "ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY}")
	s := e.startMCP()
	text, res := s.call(t, "task", map[string]any{"prompt": "hello"})
	if !res.IsError || !strings.Contains(text, `ANTHROPIC_API_KEY is the text "${ANTHROPIC_API_KEY}"`) || !strings.Contains(text, "without expanding it") {
		t.Fatalf("isError %v:\n%s", res.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(e.home, "sessions")); err == nil {
		t.Errorf("a server that runs nothing wrote sessions")
	}
	p, _ := e.run("doctor")
	if !strings.Contains(p.snapshot(), `ink mcp: ✗ started here, it would answer every tool call with: ANTHROPIC_API_KEY is the text "${ANTHROPIC_API_KEY}"`) {
		t.Errorf("ink doctor does not say what ink mcp would:\n%s", p.snapshot())
	}
}

// TestREADMEMCPConfigExamples: every `$ ink mcp config …` example of the
// README prints what the README shows, run as it says they ran: with
// ANTHROPIC_API_KEY set and INK_HOME=/home/you/ink-home, ink installed as
// /home/you/go/bin/ink.
func TestREADMEMCPConfigExamples(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := filepath.EvalSymlinks(inkBin)
	e := newEnv(t)
	inkHome := filepath.Join(t.TempDir(), "ink-home")
	e.vars = slices.DeleteFunc(e.vars, func(kv string) bool { return strings.HasPrefix(kv, "INK_HOME=") })
	e.vars = append(e.vars, "INK_HOME="+inkHome, "ANTHROPIC_API_KEY="+fakeAnthropicKey)
	shown := strings.NewReplacer(bin, "/home/you/go/bin/ink", inkHome, "/home/you/ink-home")
	clients := map[string]bool{}
	for _, block := range strings.Split(string(readme), "```console\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		command, want, _ := strings.Cut(block, "\n")
		args, ok := strings.CutPrefix(command, "$ ink mcp config ")
		if !ok {
			continue
		}
		words := append([]string{"mcp", "config"}, strings.Fields(args)...)
		clients[words[2]] = true
		p, code := e.run(words...)
		if got := shown.Replace(p.snapshot()); code != 0 || got != want {
			t.Errorf("README's `%s`: exit %d, prints\n%s\nthe README shows\n%s\nstderr:\n%s", command, code, got, want, p.stderr.String())
		}
	}
	for _, c := range []string{"claude", "codex", "cursor"} {
		if !clients[c] {
			t.Errorf("the README shows no `ink mcp config %s` example", c)
		}
	}
}

// TestMCPConfigRefusesGoRunBinary: a binary that `go run` built lives
// where Go does not keep it, so `ink mcp config` refuses to write it into a
// client's configuration and says to install ink.
func TestMCPConfigRefusesGoRunBinary(t *testing.T) {
	t.Parallel()
	for layout, rel := range goRunLayouts {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			e := providerEnv(t, "ANTHROPIC_API_KEY="+fakeAnthropicKey)
			p := e.startExe(goRunCopy(t, t.TempDir(), rel), "mcp", "config", "codex")
			if code := p.wait(t, time.Minute); code != exitUsage || p.snapshot() != "" ||
				!strings.Contains(p.stderr.String(), "built by `go run`") || !strings.Contains(p.stderr.String(), "go install") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, p.snapshot(), p.stderr.String())
			}
		})
	}
}
