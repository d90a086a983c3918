package loop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
	"github.com/inkdev/ink/tools"
)

// TestScriptedRunWithBuiltinTools drives the real built-in tools through a
// whole run: read and grep in parallel, edit, then bash, on a temp tree.
func TestScriptedRunWithBuiltinTools(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "greet"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "greet", "greet.go")
	src := "package greet\n\n// Hello greets.\nfunc Hello() string { return \"helo\" }\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// No ink binary here to apply the bash sandbox (package tools tests it).
	pool, closer, err := tools.Builtins(tools.Env{Root: root, LockDir: filepath.Join(t.TempDir(), "locks"), Sandbox: "danger-full-access"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	prov, err := script.Load(filepath.Join("testdata", "fix_typo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var s sink
	opts := s.options(prov, pool...)
	opts.History = []model.Message{model.UserText("fix the typo in the greeting")}
	res, err := loop.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("Run: %v\nmessages: %+v", err, s.messages())
	}
	if res.Turns != 4 {
		t.Errorf("turns = %d, want 4", res.Turns)
	}
	if !strings.HasPrefix(res.FinalText, "Fixed the typo") {
		t.Errorf("final text = %q", res.FinalText)
	}
	var names []string
	for _, r := range results(t, res.Messages) {
		names = append(names, r.ToolName)
		if r.IsError {
			t.Errorf("%s failed: %s", r.ToolName, r.Content)
		}
	}
	if got := strings.Join(names, ","); got != "read,grep,edit,bash" {
		t.Errorf("tools run = %s, want read,grep,edit,bash", got)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(src, `"helo"`, `"hello"`, 1); string(got) != want {
		t.Errorf("file after the run:\n%s\nwant:\n%s", got, want)
	}
}
