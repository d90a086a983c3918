package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden schemas in testdata/schemas")

// TestInputSchemasGolden holds the inputSchema of every tool as an MCP
// client lists it (testdata/schemas, one file per tool): what toolargs
// generates from each tool's argument type. task's, task_status's,
// task_wait's and task_cancel's come from the types ink's own agents use.
func TestInputSchemasGolden(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Unavailable: "no model in this test."})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Run(ctx, st) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schema-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task", "task_status", "task_wait", "task_cancel", "worktrees_list", "worktree_diff", "worktree_merge", "agents_list"}
	seen := map[string]bool{}
	for _, tool := range res.Tools {
		seen[tool.Name] = true
		raw, err := json.MarshalIndent(tool.InputSchema, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		checkGolden(t, filepath.Join("testdata", "schemas", tool.Name+".json"), append(raw, '\n'))
	}
	for _, name := range want {
		if !seen[name] {
			t.Errorf("tool %s is not listed", name)
		}
	}
	if len(res.Tools) != len(want) {
		t.Errorf("%d tools listed, want %d", len(res.Tools), len(want))
	}
}

// checkGolden compares got with the golden file path; with -update it
// rewrites the file.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the schema differs from %s (run go test -update if the change is meant):\n got: %s\nwant: %s", path, got, want)
	}
}
