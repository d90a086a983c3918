package console

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

//go:embed demo/script.yaml
var demoScript []byte

// demoFiles is the small repository the demo works on.
var demoFiles = map[string]string{
	"README.md":         "# calc\n\nA tiny calculator.\n",
	"go.mod":            "module example.com/calc\n\ngo 1.22\n",
	"calc/calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Div returns a divided by b.\n// TODO: guard against division by zero.\nfunc Div(a, b int) int {\n\treturn a / b\n}\n",
	"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
}

// DemoOptions configure Demo.
type DemoOptions struct {
	Dir     string               // where to build the demo; default a new temp dir
	Keep    bool                 // keep the directory afterwards
	Out     io.Writer            // the report (stdout)
	Sink    func(event.Envelope) // progress (the display)
	Environ []string
	Exe     string
}

// Demo is `ink demo`: it builds a small git repository in a temp directory,
// runs a main agent on the offline script model that fans out two read-only
// children and one worktree child that fixes a bug, and reports what
// happened. Everything lives under the demo directory (its own INK_HOME),
// which is removed afterwards unless Keep is set.
func Demo(ctx context.Context, opts DemoOptions) error {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "ink-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		dir = d
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !opts.Keep {
		defer os.RemoveAll(dir)
	}
	repo, home := filepath.Join(dir, "calc"), filepath.Join(dir, "ink-home")
	if err := demoRepo(ctx, repo); err != nil {
		return err
	}
	scriptPath := filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(scriptPath, demoScript, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	o, err := orchestrator.New(orchestrator.Config{
		InkHome: home, Cwd: repo, Exe: opts.Exe, Binding: model.Binding{Provider: "script", Model: scriptPath},
		MaxParallel: 8, MaxDepth: 1, Environ: append(opts.Environ, "INK_HOME="+home), Sink: opts.Sink,
	})
	if err != nil {
		return err
	}
	out := opts.Out
	fmt.Fprintf(out, "ink demo: a main agent and three children, each its own process, on a scratch repository\n  repository: %s\n  ink home:   %s\n  model:      the offline script model (no API key)\n\n", repo, home)
	res, err := o.Run(ctx, orchestrator.RunOptions{Prompt: "Look around this repository: list TODOs and tests, and fix the bug in calc.Add without touching my checkout."})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "main agent (%s, %d turns):\n%s\n\n", res.Status, res.Turns, indent(res.Text))
	fmt.Fprintf(out, "transcripts:\n  main  %s\n", res.Transcript)
	children, _ := session.ListChildren(res.Transcript)
	for _, c := range children {
		fmt.Fprintf(out, "  child %s (%s) %s\n", c.ID, c.LastStatus, c.Path)
	}
	infos, _ := worktree.List(ctx, home)
	for _, in := range infos {
		fmt.Fprintf(out, "\nworktree kept with the child's work: %s\n  branch %s, %d commit(s) ahead of your HEAD, your checkout unchanged\n", in.Record.Path, in.Record.Branch, in.Ahead)
	}
	if opts.Keep {
		fmt.Fprintf(out, "\nkept %s; look around with:\n  INK_HOME=%s ink sessions ls --cwd %s\n  INK_HOME=%s ink worktrees ls\n", dir, home, repo, home)
	} else {
		fmt.Fprintf(out, "\n(the demo directory is removed now; run `ink demo --keep` to look around afterwards)\n")
	}
	if res.Status != "completed" {
		return fmt.Errorf("demo: the main agent ended %s: %s", res.Status, res.Reason)
	}
	return nil
}

func demoRepo(ctx context.Context, repo string) error {
	for name, body := range demoFiles {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "ink demo"},
		{"config", "user.email", "demo@ink.invalid"},
		{"add", "-A"},
		{"commit", "-q", "-m", "calc: first version"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("demo: git %s: %v: %s (ink demo needs git on PATH)", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
