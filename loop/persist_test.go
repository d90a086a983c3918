package loop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/inkdev/ink/loop"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/tools"
)

// TestRunPersistsThroughSession runs the scripted read/grep/edit/bash run
// with every message persisted through a real transcript, as a worker does,
// then reopens the transcript and gets the same history back.
func TestRunPersistsThroughSession(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	file := filepath.Join(root, "greet", "greet.go")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("package greet\n\n// Hello greets.\nfunc Hello() string { return \"helo\" }\n"), 0o644); err != nil {
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
	path := filepath.Join(t.TempDir(), "sessions", "s.jsonl")
	w, err := session.Create(path, session.Header{Type: "session", Version: session.Version, ID: session.NewID(), CreatedAt: time.Now().UTC(), Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	prompt := model.UserText("fix the typo in the greeting")
	if _, err := w.AppendMessage(prompt); err != nil {
		t.Fatal(err)
	}
	res, err := loop.Run(context.Background(), loop.Options{
		Provider: prov,
		Tools:    pool,
		History:  []model.Message{prompt},
		OnMessage: func(m model.Message) error {
			_, err := w.AppendMessage(m)
			return err
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]model.Message{prompt}, res.Messages...)
	if len(tr.Messages) != len(want) || len(want) < 9 {
		t.Fatalf("reopened %d messages, the run produced %d (with the prompt)", len(tr.Messages), len(want))
	}
	for i := range want {
		if !sameMessage(t, tr.Messages[i], want[i]) {
			t.Fatalf("message %d differs after reopening:\n got %+v\nwant %+v", i, tr.Messages[i], want[i])
		}
	}
	if tr.Torn != nil {
		t.Fatalf("a clean run left a torn tail: %+v", tr.Torn)
	}
	if scan := session.ScanPairs(tr.Messages); scan.State != session.Consistent {
		t.Fatalf("the persisted history is not consistent: %+v", scan)
	}
}

// sameMessage compares two messages by their JSON form (which is what a
// transcript keeps) plus the task record kept beside it.
func sameMessage(t *testing.T, a, b model.Message) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var va, vb any
	json.Unmarshal(ja, &va)
	json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb) && string(a.TaskRecord) == string(b.TaskRecord)
}
