package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestResumeOnRecordedModel: a child that timed out is continued from the
// shell with the command its result prints, without --model and with no
// provider key set: it runs on the binding its launch record names. A
// binding that can no longer run is bad input (exit 2, nothing written).
func TestResumeOnRecordedModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// No provider is configured: no key, and no Ollama answers.
	e.vars = append(e.vars, "OLLAMA_HOST=127.0.0.1:1")
	script := e.write("s.yaml", `rules:
  - when: {depth: 1, user: "^finish$"}
    reply: {text: "finished on the recorded model"}
  - when: {depth: 1}
    reply: {text: "never in time", delay: 60s}
`)
	p, code := e.run("task", "--model", "script:"+script, "--timeout", "1s", "slow work")
	if code != exitTimeout {
		t.Fatalf("exit %d, want %d\n%s", code, exitTimeout, p.stderr.String())
	}
	// The hint is a shell command, with this shell's way to run ink.
	m := regexp.MustCompile(`child session id: ([a-z0-9]+) — continue it with: ink task --resume ([a-z0-9]+) "…"`).FindStringSubmatch(p.stderr.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("no shell resume hint in:\n%s", p.stderr.String())
	}
	id := m[1]

	p, code = e.run("task", "--resume", id, "finish")
	if code != 0 || strings.TrimSpace(strings.SplitN(p.stdout.String(), "\n", 2)[0]) != "finished on the recorded model" {
		t.Fatalf("resume without --model: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	// The script lies in the run's directory: the line names it as given.
	if !strings.Contains(p.stderr.String(), "model script:s.yaml)") {
		t.Errorf("the resume does not say it runs on the recorded model:\n%s", p.stderr.String())
	}

	// The recorded script is gone: bad input, named, and nothing written.
	if err := os.Rename(script, script+".away"); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.home)
	p, code = e.run("task", "--resume", id, "finish")
	want := "ink: child " + id + " was launched on script:" + script + ", and that script is gone; put it back to resume the child\n"
	if code != exitUsage || p.stderr.String() != want {
		t.Fatalf("gone script: exit %d, stderr %q, want %q", code, p.stderr.String(), want)
	}
	sameTree(t, "gone script", before, snapshot(t, e.home))

	// --model still overrides the record (here: refused as model-drift).
	other := e.write("other.yaml", "rules:\n  - reply: {text: \"other\"}\n")
	p, code = e.run("task", "--model", "script:"+other, "--resume", id, "finish")
	if code != exitRefused || !strings.Contains(p.stderr.String(), "model-drift: launched on script:"+script) {
		t.Fatalf("--model override: exit %d\n%s", code, p.stderr.String())
	}
}
