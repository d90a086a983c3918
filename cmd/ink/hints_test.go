package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
)

// TestCommandFor: the command ink's hints use is the one the reader can run
// from where they are.
func TestCommandFor(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	clone := filepath.Join(root, "ink")
	for name, body := range map[string]string{
		"ink/go.mod":              "// ink\nmodule github.com/inkdev/ink\n\ngo 1.26\n",
		"ink/cmd/ink/main.go":     "package main\n",
		"other/go.mod":            "module example.com/other\n",
		"bin/ink":                 "",
		"elsewhere/ink":           "",
		"space dir/ink":           "",
		"go-build42/b001/exe/ink": "",
		".cache/go-build/2d/2d8496c9969ef8f158e9140fe3798a36fcd8652b9aaf1d3961af4d64a8b9d79e-d/ink": "",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	goRun := filepath.Join(root, "go-build42", "b001", "exe", "ink")
	// Since Go 1.24, `go run` of a module's command links it into the
	// build cache, and runs it from there the next time.
	cached := filepath.Join(root, ".cache", "go-build", "2d", "2d8496c9969ef8f158e9140fe3798a36fcd8652b9aaf1d3961af4d64a8b9d79e-d", "ink")
	onPath := func(string) (string, error) { return filepath.Join(root, "bin", "ink"), nil }
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	for _, c := range []struct {
		name, exe, arg0, wd string
		look                func(string) (string, error)
		want                string
	}{
		{"installed", filepath.Join(root, "bin", "ink"), "ink", root, onPath, "ink"},
		{"go run at the clone's root", goRun, goRun, clone, notOnPath, "go run ./cmd/ink"},
		{"go run below the clone's root", goRun, goRun, filepath.Join(clone, "cmd"), notOnPath, "go run ./ink"},
		{"go run in a subdirectory", goRun, goRun, filepath.Join(clone, "cmd", "ink"), notOnPath, "go run ."},
		{"go run elsewhere", goRun, goRun, filepath.Join(root, "other"), notOnPath, "go run github.com/inkdev/ink/cmd/ink@latest"},
		{"go run from the build cache", cached, cached, clone, notOnPath, "go run ./cmd/ink"},
		{"another ink on PATH", filepath.Join(root, "elsewhere", "ink"), "./elsewhere/ink", root, onPath, "./elsewhere/ink"},
		{"started by name", filepath.Join(root, "elsewhere", "ink"), "ink", root, notOnPath, filepath.Join(root, "elsewhere", "ink")},
		{"a path to quote", filepath.Join(root, "space dir", "ink"), filepath.Join(root, "space dir", "ink"), root, notOnPath, "'" + filepath.Join(root, "space dir", "ink") + "'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := commandFor(c.exe, c.arg0, c.wd, c.look); got != c.want {
				t.Errorf("commandFor = %q, want %q", got, c.want)
			}
		})
	}
}

// TestContinueHint: the hint to continue a main session is given only for
// a session that holds something to continue.
func TestContinueHint(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	write := func(id string, msgs ...model.Message) string {
		p := session.MainPath(home, cwd, id)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		w, err := session.Create(p, session.Header{Type: "session", Version: session.Version, ID: id, CreatedAt: time.Now().UTC(), Cwd: cwd})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, m := range msgs {
			if _, err := w.AppendMessage(m); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	empty := write("emptysession")
	full := write("fullsession", model.UserText("do it"))
	for _, c := range []struct {
		name string
		res  orchestrator.RunResult
		want string
	}{
		{"no session", orchestrator.RunResult{}, ""},
		{"no transcript", orchestrator.RunResult{SessionID: "gone", Transcript: filepath.Join(home, "gone.jsonl")}, " (nothing was recorded in session gone; run the prompt again)"},
		{"only a header", orchestrator.RunResult{SessionID: "emptysession", Transcript: empty}, " (nothing was recorded in session emptysession; run the prompt again)"},
		{"a prompt", orchestrator.RunResult{SessionID: "fullsession", Transcript: full}, " (session fullsession; continue it with `" + selfCommand() + " run --session fullsession \"…\"`)"},
	} {
		if got := continueHint(c.res); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
