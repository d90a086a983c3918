package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSessionsShowVerbose: `ink sessions show` gives each message one
// clipped line; with -v it shows every message whole, lines and all.
func TestSessionsShowVerbose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := strings.Repeat("word ", 80) + "END"
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"first line\\nsecond line "+long+"\"}\n")
	p, code := e.run("run", "--json", "--model", "script:"+script, "tell me everything")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	var start map[string]any
	json.Unmarshal([]byte(strings.SplitN(p.stdout.String(), "\n", 2)[0]), &start)
	id, _ := start["session"].(string)
	short, code := e.run("sessions", "show", id)
	if code != 0 || !strings.Contains(short.stdout.String(), "assistant: first line second line word") || strings.Contains(short.stdout.String(), "END") {
		t.Errorf("sessions show: exit %d\n%s", code, short.stdout.String())
	}
	full, code := e.run("sessions", "show", "-v", id)
	if code != 0 || !strings.Contains(full.stdout.String(), "assistant: first line\nsecond line "+long+"\n") {
		t.Errorf("sessions show -v: exit %d\n%s", code, full.stdout.String())
	}
}
