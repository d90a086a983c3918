package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// putProfileFile writes body to path, creating its directory.
func putProfileFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameSave replaces path the way many editors save: write a temp file
// beside it, then rename it over the original.
func renameSave(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	putProfileFile(t, tmp, body)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// launchRecordOf opens a child transcript and returns its header's launch record.
func launchRecordOf(t *testing.T, transcript string) *session.LaunchRecord {
	t.Helper()
	tr, err := session.Open(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.Launch == nil {
		t.Fatalf("%s has no launch record", transcript)
	}
	return tr.Header.Launch
}

// gateCall is a bash command that waits until the file name exists in the
// working directory, so the test decides when the main agent goes on.
func gateCall(name string) string {
	return `{tool: bash, args: {command: "while [ ! -e ` + name + ` ]; do sleep 0.05; done; echo open", timeout: 120}}`
}

// TestProfileHotReload: editing a profile while `ink run` is live changes
// what the next task gets, without a restart (an editor's rename-save
// included); a broken save keeps the last good version and emits a warning
// event naming the file, the line and the reason.
func TestProfileHotReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	profile := filepath.Join(e.home, "agents", "scout.md")
	v1 := "---\nname: scout\ndescription: finds code\ntools: read\n---\nFind it.\n"
	v2 := "---\nname: scout\ndescription: finds code faster\ntools: [grep, ls]\n---\nFind it fast.\n"
	broken := "---\nname: scout\ndescription: finds code\ntimeout: soon\n---\nFind it.\n"
	putProfileFile(t, profile, v1)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "first", agent: scout}}]}
  - when: {depth: 0, turn: 2}
    reply: {calls: [`+gateCall("gate1")+`]}
  - when: {depth: 0, turn: 3}
    reply: {calls: [{tool: task, args: {prompt: "second", agent: scout}}]}
  - when: {depth: 0, turn: 4}
    reply: {calls: [`+gateCall("gate2")+`]}
  - when: {depth: 0, turn: 5}
    reply: {calls: [{tool: task, args: {prompt: "third", agent: scout}}]}
  - when: {depth: 0}
    reply: {text: "three scouts ran"}
  - when: {depth: 1, agent: scout}
    reply: {text: "scouted"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "scout three times")
	taskEnd := func(n int) { t.Helper(); waitEventCount(t, p, "task.end", n) }

	// 1. Edit while the first child has ended and the main agent waits:
	// rename-save a new version, plus a broken file beside it whose warning
	// proves the watcher reloaded after the new version was in place.
	taskEnd(1)
	renameSave(t, profile, v2)
	putProfileFile(t, filepath.Join(e.home, "agents", "zz-notes.md"), "just notes\n")
	waitFor(t, p, func(m map[string]any) bool {
		text, _ := m["text"].(string)
		return m["type"] == "warning" && strings.Contains(text, "zz-notes.md:1: no frontmatter")
	})
	e.write("gate1", "")

	// 2. A broken save of the profile itself: the last good version stays,
	// and a warning says so.
	taskEnd(2)
	renameSave(t, profile, broken)
	warn := waitFor(t, p, func(m map[string]any) bool {
		text, _ := m["text"].(string)
		return m["type"] == "warning" && strings.Contains(text, "scout.md")
	})
	if want := "agent file " + profile + ":4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got \"soon\"; keeping the previous version"; warn["text"] != want {
		t.Errorf("warning %q,\nwant %q", warn["text"], want)
	}
	e.write("gate2", "")

	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	ends := ofType(evs, "task.end")
	if len(ends) != 3 {
		t.Fatalf("want 3 task.end events, got %d", len(ends))
	}
	want := []struct{ sha, tools string }{{sha256Hex(v1), "read"}, {sha256Hex(v2), "grep,ls"}, {sha256Hex(v2), "grep,ls"}}
	for i, end := range ends {
		if end["status"] != "completed" {
			t.Fatalf("child %d: %v", i+1, end)
		}
		l := launchRecordOf(t, end["transcript"].(string))
		if l.Agent == nil || l.Agent.Name != "scout" || l.Agent.Source != profile {
			t.Fatalf("child %d: launch agent %+v, want scout from %s", i+1, l.Agent, profile)
		}
		if l.Agent.RoleSHA256 != want[i].sha || strings.Join(l.Tools, ",") != want[i].tools {
			t.Errorf("child %d ran with roleSha256 %s tools %v, want %s %s", i+1, l.Agent.RoleSHA256, l.Tools, want[i].sha, want[i].tools)
		}
	}
	if got := ofType(evs, "run.end")[0]["text"]; got != "three scouts ran" {
		t.Fatalf("run.end text %q", got)
	}
	// The broken file was never replaced by ink.
	if data, _ := os.ReadFile(profile); string(data) != broken {
		t.Fatalf("ink changed the profile file")
	}
}

// TestProfileToolsAndModel: a profile's tools narrow the child's pool (the
// launch record lists them, and a tool outside them does not exist in the
// child's worker), and a profile model other than the main agent's — here
// another script, read from the profile's directory — is recorded in the
// launch record and is what the child runs on.
func TestProfileToolsAndModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agentsDir := filepath.Join(e.home, "agents")
	putProfileFile(t, filepath.Join(agentsDir, "auditor.md"), "---\nname: auditor\ndescription: audits code\ntools: Read, Grep, WebFetch\nmodel: script:auditor.yaml\n---\nAudit it.\n")
	putProfileFile(t, filepath.Join(agentsDir, "auditor.yaml"), `rules:
  - when: {turn: 1}
    reply: {calls: [{tool: bash, args: {command: "echo escaped > escaped.txt"}}]}
  - when: {result: "unknown tool bash; available: read, grep"}
    reply: {text: "auditor model here: bash is not mine"}
  - reply: {text: "auditor model here: unexpected"}
`)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "audit", agent: auditor}}]}
  - when: {depth: 0, result: "auditor model here: bash is not mine"}
    reply: {text: "the auditor ran on its own model with its own tools"}
  - when: {depth: 0}
    reply: {text: "unexpected task result"}
  - reply: {text: "the main script answered a child"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "audit")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	if got := ofType(evs, "run.end")[0]["text"]; got != "the auditor ran on its own model with its own tools" {
		t.Fatalf("run.end text %q\nstderr:\n%s", got, p.stderr.String())
	}
	l := launchRecordOf(t, ofType(evs, "task.end")[0]["transcript"].(string))
	if strings.Join(l.Tools, ",") != "grep,read" {
		t.Errorf("launch tools %v, want [grep read]", l.Tools)
	}
	if want := filepath.Join(agentsDir, "auditor.yaml"); l.Binding.Provider != "script" || l.Binding.Model != want {
		t.Errorf("launch binding %+v, want script:%s", l.Binding, want)
	}
	if l.Agent == nil || l.Agent.Name != "auditor" {
		t.Errorf("launch agent %+v", l.Agent)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "escaped.txt")); err == nil {
		t.Fatalf("the child ran bash, which its profile does not list")
	}
}

// TestProfileTimeout: a profile's timeout: applies when the call gives
// none: the child is stopped, the TaskRecord says timeout with the
// profile's limit, and `ink task` exits 124.
func TestProfileTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	putProfileFile(t, filepath.Join(e.home, "agents", "slow.md"), "---\nname: slow\ndescription: takes its time\ntimeout: 1\n---\n")
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"too late\", delay: 60s}\n")
	p, code := e.run("task", "--json", "--task-timeout", "10m", "--agent", "slow", "--model", "script:"+script, "take your time")
	if code != 124 {
		t.Fatalf("exit %d, want 124\nstderr:\n%s", code, p.stderr.String())
	}
	rec := shellRecord(t, e)
	if rec.Status != "timeout" || rec.TimeoutMs != 1000 || rec.Agent != "slow" {
		t.Fatalf("TaskRecord %+v, want a timeout after the profile's 1000 ms", rec)
	}
}

// TestProfileRejections: a profile whose model script does not exist, or
// an agent nobody defined, is bad input found before anything is written:
// exit 2, a message that says what to fix or lists the closest names, and
// no session written.
func TestProfileRejections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	putProfileFile(t, filepath.Join(e.home, "agents", "lost.md"), "---\nname: lost\ndescription: no model\nmodel: script:nowhere.yaml\n---\n")
	putProfileFile(t, filepath.Join(e.home, "agents", "delegator.md"), "---\nname: delegator\ndescription: hands work on\n---\n")
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"ran\"}\n")
	for _, c := range []struct {
		agent string
		want  []string
	}{
		{"lost", []string{`agent "lost": model script:nowhere.yaml: no such script file`, "fix the model: line of " + filepath.Join(e.home, "agents", "lost.md")}},
		{"nobody", []string{`unknown agent "nobody"; available agents: delegator, lost`}},
		{"delegater", []string{`unknown agent "delegater"; did you mean "delegator"?; available agents: delegator, lost`}},
	} {
		p, code := e.run("task", "--agent", c.agent, "--model", "script:"+script, "go")
		if code != 2 {
			t.Fatalf("--agent %s: exit %d, want 2\nstderr:\n%s", c.agent, code, p.stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(p.stderr.String(), w) {
				t.Errorf("--agent %s: stderr lacks %q:\n%s", c.agent, w, p.stderr.String())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, "sessions")); err == nil {
		t.Fatalf("a rejected task left a session behind")
	}
}

// TestClaudeCodeAgents installs agents the way Claude Code users do — in
// subdirectories of ~/.claude/agents, one through a symlinked checkout,
// with a name that holds spaces, Claude Code's tool names and a model
// alias — and runs tasks with them on the script model: each runs (never
// refused), with the tools ink has, on the parent's model with a note when
// nothing maps its alias, and on the mapped model once models.yaml maps
// it. Skipped files are warned about once, with one summary line per run.
func TestClaudeCodeAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := filepath.Join(filepath.Dir(e.home), "home")
	claude := filepath.Join(home, ".claude", "agents")
	putProfileFile(t, filepath.Join(claude, "collection", "testing", "pytest.md"), `---
name: Python Testing Expert
description: Writes pytest suites. Use it when: tests fail
tools: Read, Grep, TaskList, TaskUpdate, SendMessage, WebFetch
model: sonnet
------------
You write focused pytest tests.
`)
	putProfileFile(t, filepath.Join(claude, "collection", "README.md"), "# A collection of agents\n")
	putProfileFile(t, filepath.Join(claude, "collection", "notes.md"), "Agents to write some day.\n")
	checkout := filepath.Join(filepath.Dir(e.home), "checkout")
	putProfileFile(t, filepath.Join(checkout, "ops", "deployer.md"), "---\nname: deployer\ndescription: deploys\nmodel: haiku\ntools: Bash, LSP\n---\n")
	if err := os.Symlink(checkout, filepath.Join(claude, "linked")); err != nil {
		t.Fatal(err)
	}
	script := e.write("s.yaml", `rules:
  - when: {agent: "Python Testing Expert"}
    reply: {text: "pytest expert ran on the main script"}
  - when: {agent: deployer}
    reply: {text: "deployer ran on the main script"}
  - reply: {text: "no agent"}
`)
	run := func(agent string) (*proc, []map[string]any) {
		t.Helper()
		p, code := e.run("task", "--json", "--agent", agent, "--model", "script:"+script, "go")
		if code != 0 {
			t.Fatalf("--agent %s: exit %d\nstderr:\n%s", agent, code, p.stderr.String())
		}
		return p, events(t, p.stdout.Bytes())
	}
	warnings := func(evs []map[string]any) []string {
		var out []string
		for _, w := range ofType(evs, "warning") {
			out = append(out, fmt.Sprint(w["text"]))
		}
		return out
	}
	hasWarning := func(evs []map[string]any, frags ...string) bool {
		for _, w := range warnings(evs) {
			all := true
			for _, f := range frags {
				all = all && strings.Contains(w, f)
			}
			if all {
				return true
			}
		}
		return false
	}

	// By its slug; the first run warns about the README and says how many
	// files were skipped.
	_, evs := run("python-testing-expert")
	if got := ofType(evs, "run.end")[0]["text"]; got != "pytest expert ran on the main script" {
		t.Fatalf("run.end text %q; warnings %q", got, warnings(evs))
	}
	l := launchRecordOf(t, ofType(evs, "task.end")[0]["transcript"].(string))
	if strings.Join(l.Tools, ",") != "grep,read" || l.Agent == nil || l.Agent.Name != "Python Testing Expert" || l.Binding.Provider != "script" {
		t.Errorf("launch tools %v agent %+v binding %+v", l.Tools, l.Agent, l.Binding)
	}
	skipped := filepath.Join(claude, "collection", "notes.md") // README.md is no agent and not warned about
	for _, want := range [][]string{
		{"agent file " + skipped + ":1: no frontmatter"},
		{"1 agent file skipped — run `ink agents check`"},
		{`agent "Python Testing Expert" runs without some tools it lists: TaskList, TaskUpdate, SendMessage, WebFetch (Claude Code tools ink lacks)`},
		{`model "sonnet" is a Claude alias and nothing maps it for script, so it runs on its parent's model`, "INK_MODEL_SONNET"},
	} {
		if !hasWarning(evs, want...) {
			t.Errorf("no warning with %q in %q", want, warnings(evs))
		}
	}

	// By its name as written, through the symlinked checkout: the README
	// is not warned about again, the summary line is.
	_, evs = run("deployer")
	if got := ofType(evs, "run.end")[0]["text"]; got != "deployer ran on the main script" {
		t.Fatalf("run.end text %q", got)
	}
	if hasWarning(evs, "agent file "+skipped) || !hasWarning(evs, "1 agent file skipped") {
		t.Errorf("second run warnings %q: want the summary only", warnings(evs))
	}
	if !hasWarning(evs, `agent "deployer" runs without some tools it lists: LSP`) {
		t.Errorf("no dropped-tools note in %q", warnings(evs))
	}

	// models.yaml maps the alias to another script: the child runs there.
	e.write("sonnet.yaml", "rules:\n  - reply: {text: \"sonnet's own script\"}\n")
	putProfileFile(t, filepath.Join(e.home, "models.yaml"), "aliases:\n  sonnet: script:"+filepath.Join(e.dir, "sonnet.yaml")+"\n")
	_, evs = run("Python Testing Expert")
	if got := ofType(evs, "run.end")[0]["text"]; got != "sonnet's own script" {
		t.Fatalf("with sonnet mapped, run.end text %q; warnings %q", got, warnings(evs))
	}
	if hasWarning(evs, "Claude alias") {
		t.Errorf("a mapped alias was warned about: %q", warnings(evs))
	}
}

// TestUntrustedProjectRun: in an untrusted project, `ink run` warns how to
// trust it, and a task naming a project agent is refused with that advice;
// after `ink trust`, the same run launches the project's agent.
func TestUntrustedProjectRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if out, err := e.gitIn("init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	fixer := e.write(".ink/agents/fixer.md", "---\nname: fixer\ndescription: fixes bugs\n---\nFix it.\n")
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "fix it", agent: fixer}}]}
  - when: {depth: 0, result: "not trusted; run .ink trust "}
    reply: {text: "the project must be trusted first"}
  - when: {depth: 0, result: "fixed"}
    reply: {text: "the fixer fixed it"}
  - when: {depth: 1, agent: fixer}
    reply: {text: "fixed"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "fix")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	trustHint := "is not trusted; run `ink trust " + e.dir + "` to load them"
	warned := false
	for _, w := range ofType(evs, "warning") {
		warned = warned || strings.Contains(w["text"].(string), trustHint)
	}
	if !warned {
		t.Errorf("no warning event says how to trust the project: %v", ofType(evs, "warning"))
	}
	if got := ofType(evs, "run.end")[0]["text"]; got != "the project must be trusted first" {
		t.Fatalf("untrusted: run.end text %q", got)
	}
	if len(ofType(evs, "task.start")) != 0 {
		t.Fatalf("an untrusted project's agent was launched")
	}

	if p, code := e.run("trust"); code != 0 {
		t.Fatalf("ink trust: exit %d: %s", code, p.stderr.String())
	}
	p, code = e.run("run", "--json", "--model", "script:"+script, "fix")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs = events(t, p.stdout.Bytes())
	if got := ofType(evs, "run.end")[0]["text"]; got != "the fixer fixed it" {
		t.Fatalf("trusted: run.end text %q\nstderr:\n%s", got, p.stderr.String())
	}
	if l := launchRecordOf(t, ofType(evs, "task.end")[0]["transcript"].(string)); l.Agent == nil || l.Agent.Source != fixer || l.Agent.RoleSHA256 != sha256Hex("---\nname: fixer\ndescription: fixes bugs\n---\nFix it.\n") {
		t.Fatalf("launch agent %+v, want fixer from %s", l.Agent, fixer)
	}
	for _, w := range ofType(evs, "warning") {
		if strings.Contains(w["text"].(string), "not trusted") {
			t.Fatalf("trusted project still warned about: %v", w)
		}
	}
}

// gitIn runs git in e's working directory with e's hermetic environment.
func (e *env) gitIn(args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = e.dir, e.vars
	return cmd
}

// TestProfileOtherProvider: the main agent runs on the script model and a
// profile's model: names openai; the child is its own worker on that
// provider (the Chat Completions server sees its request with the
// profile's model, body and narrowed tools), and the launch record holds
// that binding. The child cannot delegate, so its system prompt lists no
// agents, not even as a note on the untrusted project's agents (the main
// agent's prompt says how to trust them: orchestrator's
// TestMainSystemUntrustedProject).
func TestProfileOtherProvider(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, func(n int, s seen) reply {
		var r oaiRequest
		if err := json.Unmarshal(s.body, &r); err != nil {
			return badRequest("body is not JSON")
		}
		return oaiText(fmt.Sprintf("openai child: model %s, tools %s", r.Model, strings.Join(r.toolNames(), ",")), 60, 6)
	})
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	putProfileFile(t, filepath.Join(e.home, "agents", "remote.md"), "---\nname: remote\ndescription: runs elsewhere\nmodel: openai/test-model\ntools: Read, LS\n---\nYou run on another provider.\n")
	// An untrusted project with agents of its own: the main agent's system
	// prompt, which the child's begins with, must say how to trust it.
	if out, err := e.gitIn("init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	e.write(".claude/agents/fixer.md", "---\nname: fixer\ndescription: fixes bugs\n---\n")
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "answer from afar", agent: remote}}]}
  - when: {depth: 0, result: "openai child: model test-model, tools ls,read"}
    reply: {text: "the remote agent answered"}
  - reply: {text: "unexpected"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "go")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	if got := ofType(evs, "run.end")[0]["text"]; got != "the remote agent answered" {
		t.Fatalf("run.end text %q\nstderr:\n%s", got, p.stderr.String())
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("the provider saw %d requests, want the child's one", len(reqs))
	}
	r := parseOAI(t, reqs[0])
	if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
		t.Fatalf("the child's request has no system prompt: %+v", r.Messages)
	}
	system := r.Messages[0].text()
	if !strings.Contains(system, "# Agent profile\nYou run on another provider.") || !strings.Contains(system, "- Tools: read, ls\n") {
		t.Errorf("the system prompt lacks the profile or its tools:\n%s", system)
	}
	for _, absent := range []string{"# Agents", "- remote: runs elsewhere", "Not loaded", "fixer"} {
		if strings.Contains(system, absent) {
			t.Errorf("the system prompt of a child that cannot delegate holds %q:\n%s", absent, system)
		}
	}
	l := launchRecordOf(t, ofType(evs, "task.end")[0]["transcript"].(string))
	if l.Binding.Provider != "openai" || l.Binding.Model != "test-model" || l.Binding.BaseURL != srv.srv.URL+"/v1" {
		t.Errorf("launch binding %+v, want openai/test-model at %s/v1", l.Binding, srv.srv.URL)
	}
	if strings.Join(l.Tools, ",") != "ls,read" || l.Agent == nil || l.Agent.Name != "remote" {
		t.Errorf("launch tools %v agent %+v", l.Tools, l.Agent)
	}
	assertNoSecret(t, e.home, fakeOpenAIKey)
}

// TestProfileCreatedWhileLive: with no agents directory at all when `ink
// run` starts, a task naming an agent is refused with where to define one;
// once the user creates the directory and the profile, the next task runs
// it, without a restart.
func TestProfileCreatedWhileLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agentsDir := filepath.Join(e.home, "agents")
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply: {calls: [{tool: task, args: {prompt: "too early", agent: late}}]}
  - when: {depth: 0, turn: 2, result: "unknown agent \"late\"; no agents are defined \\(create .*/agents/late.md to define it\\)"}
    reply: {calls: [`+gateCall("gate")+`]}
  - when: {depth: 0, turn: 3}
    reply: {calls: [{tool: task, args: {prompt: "now", agent: late}}]}
  - when: {depth: 0, turn: 4, result: "late but here"}
    reply: {text: "the new agent ran"}
  - when: {depth: 1, agent: late}
    reply: {text: "late but here"}
  - reply: {text: "unexpected"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "go")
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.start" && m["name"] == "bash" })
	putProfileFile(t, filepath.Join(agentsDir, "late.md"), "---\nname: late\ndescription: arrives late\n---\n")
	// A second, broken file: its warning proves the reload saw late.md.
	putProfileFile(t, filepath.Join(agentsDir, "zz.md"), "no frontmatter\n")
	waitFor(t, p, func(m map[string]any) bool {
		text, _ := m["text"].(string)
		return m["type"] == "warning" && strings.Contains(text, "zz.md:1: no frontmatter")
	})
	e.write("gate", "")
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	if got := ofType(evs, "run.end")[0]["text"]; got != "the new agent ran" {
		t.Fatalf("run.end text %q\nstdout:\n%s", got, p.snapshot())
	}
	var ran []map[string]any
	for _, e := range ofType(evs, "task.end") {
		if e["status"] != "rejected" {
			ran = append(ran, e)
		}
	}
	if len(ran) != 1 {
		t.Fatalf("want one task that ran, got task.end events %v", ofType(evs, "task.end"))
	}
	if l := launchRecordOf(t, ran[0]["transcript"].(string)); l.Agent == nil || l.Agent.Source != filepath.Join(agentsDir, "late.md") {
		t.Fatalf("launch agent %+v", l.Agent)
	}
}

// waitEventCount waits until the process's --json stdout holds n events of
// type typ.
func waitEventCount(t *testing.T, p *proc, typ string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		count := 0
		for _, line := range strings.Split(p.snapshot(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["type"] == typ {
				count++
			}
		}
		if count >= n {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("ink exited before %d %s events\nstdout:\n%s\nstderr:\n%s", n, typ, p.snapshot(), p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%d %s events did not come within a minute", n, typ)
}
