package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestProjectContext: the instruction files of the project root come
// before those of the directory below it, a link to a file already read
// counts once, a directory is no instruction file, and a directory
// without any gives none.
func TestProjectContext(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "svc")
	if err := os.MkdirAll(filepath.Join(sub, "AGENTS.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "AGENTS.md"), "Run go test before you report.\n")
	if err := os.Symlink("AGENTS.md", filepath.Join(root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(sub, "CLAUDE.md"), "The service speaks gRPC.\n")

	files := ProjectContext(sub)
	if len(files) != 2 || files[0].Path != filepath.Join(root, "AGENTS.md") || string(files[0].Data) != "Run go test before you report.\n" ||
		files[1].Path != filepath.Join(sub, "CLAUDE.md") || string(files[1].Data) != "The service speaks gRPC.\n" {
		t.Fatalf("context files = %+v", files)
	}
	if got := ProjectContext(t.TempDir()); len(got) != 0 {
		t.Fatalf("a directory without instruction files gave %d", len(got))
	}
}

// TestContextUnchanged: a file that holds what was hashed is unchanged;
// an edit, or its removal, is a change.
func TestContextUnchanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.WriteFile(path, []byte("be brief\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("be brief\n"))
	sum := hex.EncodeToString(h[:])
	if !ContextUnchanged(path, sum) {
		t.Fatal("the same content counts as changed")
	}
	if err := os.WriteFile(path, []byte("be thorough\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ContextUnchanged(path, sum) {
		t.Fatal("an edit counts as unchanged")
	}
	os.Remove(path)
	if ContextUnchanged(path, sum) {
		t.Fatal("a removed file counts as unchanged")
	}
}
