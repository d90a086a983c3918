package tools

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden schemas in testdata/schemas")

// TestSchemasGolden holds every tool's argument schema exactly as the
// model gets it (testdata/schemas, indented there for review): what
// toolargs generates from the argument types, with the default
// configuration's descriptions. A change to a type shows here, bytes
// included, since every byte is sent with every model request.
func TestSchemasGolden(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	pool := append(builtins(t, k.env), NewTask(nil))
	pool = append(pool, NewTaskControls(nil)...)
	total := 0
	for _, tool := range pool {
		spec := tool.Spec()
		total += len(spec.Schema)
		checkGolden(t, filepath.Join("testdata", "schemas", spec.Name+".json"), spec.Schema)
	}
	t.Logf("%d tools' schemas: %d bytes", len(pool), total)
}

// checkGolden compares the compact JSON got with the golden file path,
// kept indented; with -update it rewrites the file.
func checkGolden(t *testing.T, path string, got json.RawMessage) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("%s: the schema is not JSON: %v\n%s", path, err, got)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("the schema differs from %s (run go test -update if the change is meant):\n got: %s\nwant: %s", path, pretty.Bytes(), want)
	}
}
