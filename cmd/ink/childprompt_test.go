package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestChildPromptHasWhatTheChildHas: with 200 agent profiles installed, the
// main agent's first request carries the delegation section and the agent
// list; a child that cannot delegate (--max-depth 1) gets neither, nor task
// in its tool line, and its system prompt is a small fraction of the main
// one.
func TestChildPromptHasWhatTheChildHas(t *testing.T) {
	t.Parallel()
	srv := newFakeProvider(t, delegating(t))
	e := providerEnv(t, "OPENAI_API_KEY="+fakeOpenAIKey, "OPENAI_BASE_URL="+srv.srv.URL+"/v1")
	dir := filepath.Join(e.home, "agents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("reviews code for correctness and reports what it found ", 8)
	for i := range 200 {
		name := fmt.Sprintf("agent%03d", i)
		body := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\nYou are %s.\n", name, long, name)
		if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, code := e.run("run", "--model", "openai/test-model", "how many widgets are there?")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	reqs := srv.requests()
	if len(reqs) != 4 {
		t.Fatalf("the server got %d requests, want 4 (main, child, child, main)", len(reqs))
	}
	mainSys, childSys := parseOAI(t, reqs[0]).Messages[0].text(), parseOAI(t, reqs[1]).Messages[0].text()
	toolLine := regexp.MustCompile(`(?m)^- Tools: (.*)$`)
	if !strings.Contains(mainSys, "# Agents") || !strings.Contains(mainSys, "# Delegation") || !strings.Contains(mainSys, "agent199") || len(mainSys) < 20_000 {
		t.Fatalf("the main agent's system prompt (%d bytes) lacks the delegation section or the agents", len(mainSys))
	}
	m := toolLine.FindStringSubmatch(childSys)
	if m == nil || strings.Contains(m[1], "task") || !strings.Contains(m[1], "bash") {
		t.Errorf("the child's tool line is %q", m)
	}
	for _, absent := range []string{"# Agents", "# Delegation", "agent000", "task_wait"} {
		if strings.Contains(childSys, absent) {
			t.Errorf("the child's system prompt holds %q", absent)
		}
	}
	if !strings.Contains(childSys, "# Subagent mode") || len(childSys) > 3_000 {
		t.Errorf("the child's system prompt is %d bytes (the main one %d), want a subagent prompt of at most 3000:\n%s", len(childSys), len(mainSys), childSys)
	}
}
