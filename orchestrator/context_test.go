package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/agents"
)

func TestProjectContext(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "svc")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "AGENTS.md"), "Run go test before you report.\n")
	// CLAUDE.md as a link to AGENTS.md counts once.
	if err := os.Symlink("AGENTS.md", filepath.Join(root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(sub, "CLAUDE.md"), "The service speaks gRPC.\n")

	files := agents.ProjectContext(sub)
	if len(files) != 2 || files[0].Path != filepath.Join(root, "AGENTS.md") || files[1].Path != filepath.Join(sub, "CLAUDE.md") {
		var got []string
		for _, f := range files {
			got = append(got, f.Path)
		}
		t.Fatalf("context files = %v", got)
	}
	system := mainSystem(sub, time.Now(), MainTools, nil, files...)
	for _, want := range []string{"# Project instructions", "## " + filepath.Join(root, "AGENTS.md") + "\nRun go test before you report.", "The service speaks gRPC."} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
	refs := contextRefs(files)
	if len(refs) != 2 || refs[0].SHA256 != sha256Hex([]byte("Run go test before you report.\n")) {
		t.Fatalf("refs = %+v", refs)
	}
	if got := agents.ProjectContext(t.TempDir()); len(got) != 0 {
		t.Fatalf("a directory without instruction files gave %d", len(got))
	}
}

func TestRenderContextCapsLongFiles(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxContextBytes) // 2 bytes each: twice the cap
	out := renderContext([]agents.ContextFile{{Path: "/p/AGENTS.md", Data: []byte(long)}})
	if !strings.Contains(out, "/p/AGENTS.md is longer; its first 32768 bytes are shown") {
		t.Fatalf("no truncation note:\n%s", out[len(out)-200:])
	}
	if strings.ContainsRune(out, '\uFFFD') || len(out) > maxContextBytes+500 {
		t.Fatalf("bad truncation: %d bytes", len(out))
	}
}
