package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestBashHidesModelKeys: a command a model runs does not see the worker's
// provider credentials, but does see the rest of its environment.
func TestBashHidesModelKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret-a")
	t.Setenv("OPENAI_API_KEY", "sk-secret-o")
	t.Setenv("INK_VISIBLE", "yes")
	root := t.TempDir()
	pool := builtins(t, Env{Root: root, LockDir: filepath.Join(t.TempDir(), "locks"), SandboxExe: testExe})
	bash, err := Select(pool, []string{"bash"})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"command": "env"})
	res := bash[0].Run(context.Background(), args)
	if res.IsError {
		t.Fatalf("env failed: %s", res.Content)
	}
	if strings.Contains(res.Content, "sk-secret") {
		t.Fatalf("a bash command saw a model key:\n%s", res.Content)
	}
	if !strings.Contains(res.Content, "INK_VISIBLE=yes") {
		t.Fatalf("a bash command lost the rest of its environment:\n%s", res.Content)
	}
}
