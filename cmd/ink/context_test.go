package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/session"
)

// TestProjectInstructions: a project's AGENTS.md goes into the system
// prompt and its path and hash into the child's launch record; once it
// changes, a resume is refused with prompt-files-drift (and system-drift)
// and no file changes; restored, the resume runs.
func TestProjectInstructions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agentsMD := e.write("AGENTS.md", "Always run the tests before you report.\n")
	script := e.write("s.yaml", `rules:
  - reply: {text: "done"}
`)
	id, path, _ := launchChild(t, e, 0, "--model", "script:"+script, "look around")
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	files := tr.Header.Launch.System.Files
	if len(files) != 1 || files[0].Path != agentsMD || files[0].SHA256 != session.SHA256Hex([]byte("Always run the tests before you report.\n")) {
		t.Fatalf("launch record system files = %+v, want AGENTS.md with its hash", files)
	}

	if err := os.WriteFile(agentsMD, []byte("Never run the tests.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.home, e.dir)
	code, _, stderr := e.resumeOut("--resume", id, "--model", "script:"+script, "again")
	if code != 3 {
		t.Fatalf("resume after AGENTS.md changed: exit %d, want 3\n%s", code, stderr)
	}
	for _, want := range []string{"prompt-files-drift: the project instructions " + agentsMD + " changed", "system-drift", "Start a new task instead."} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, stderr)
		}
	}
	sameTree(t, "refused resume", before, snapshot(t, e.home, e.dir))

	if err := os.WriteFile(agentsMD, []byte("Always run the tests before you report.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := e.resumeOut("--resume", id, "--model", "script:"+script, "again"); code != 0 {
		t.Fatalf("resume with AGENTS.md restored: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "CLAUDE.md")); !os.IsNotExist(err) {
		t.Fatalf("ink created a file in the project: %v", err)
	}
}
