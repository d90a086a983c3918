package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNormalExitLogsNoWarning: after a run that went well, no worker log
// holds a warning or an error, so that a warning in a log always means
// something happened.
func TestNormalExitLogsNoWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "one"}}
        - {tool: task, args: {prompt: "two"}}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: ls, args: {path: "."}}]
  - reply: {text: "done"}
`)
	if p, code := e.run("run", "--model", "script:"+script, "go"); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	logs, _ := filepath.Glob(filepath.Join(e.home, "logs", "*.log"))
	if len(logs) < 3 {
		t.Fatalf("want the logs of three workers, got %v", logs)
	}
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
				t.Errorf("%s: %s", filepath.Base(l), line)
			}
		}
	}
}
