package console

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
	Out     io.Writer            // the report (stdout, or stderr under --json)
	Sink    func(event.Envelope) // progress (the display, the --json stream)
	Environ []string
	Exe     string
	// Command is how the reader runs ink from their shell, for the
	// commands the report suggests; default "ink".
	Command string
	// Kill, once closed, kills every agent at once (a second Ctrl-C); a
	// cancelled ctx only asks them to stop.
	Kill <-chan struct{}
}

// ErrDemoInterrupted is returned by Demo when ctx was cancelled before the
// demo finished.
var ErrDemoInterrupted = errors.New("demo: interrupted")

// Demo is `ink demo`: it builds a small git repository in a temp directory
// and plays three scenes on the offline script model, each agent its own
// process: a main agent fans out two read-only children and one child
// that fixes a bug in its own worktree; then a child is killed (SIGKILL)
// in the middle of a bash command and resumed, its transcript's cut-off
// tail repaired. It reports what happened on opts.Out. Everything lives
// under the demo directory (its own INK_HOME), which is removed afterwards
// unless Keep is set. Writes to opts.Out that fail (a closed stdout) are
// ignored: the demo still ends its agents and cleans up.
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
	if opts.Command == "" {
		opts.Command = "ink"
	}
	d := &demo{opts: opts, out: opts.Out, repo: filepath.Join(dir, "calc"), home: filepath.Join(dir, "ink-home")}
	if opts.Kill != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-opts.Kill:
				d.killAll()
			case <-stop:
			}
		}()
	}
	if err := demoRepo(ctx, d.repo); err != nil {
		return err
	}
	d.script = filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(d.script, demoScript, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(d.out, "ink demo: three scenes on a scratch repository, every agent its own process\n  repository: %s\n  ink home:   %s\n  model:      the offline script model (no API key)\n\n", d.repo, d.home)

	err = d.fanOut(ctx)
	if err == nil {
		err = d.killAndResume(ctx)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(d.out, "\ninterrupted: every agent was stopped and recorded how it ended\n")
	}
	d.closing(dir)
	if ctx.Err() != nil {
		return ErrDemoInterrupted
	}
	return err
}

// demo is one run of Demo.
type demo struct {
	opts       DemoOptions
	out        io.Writer
	repo, home string
	script     string
	// worktreeChild is the child of scene 2 that kept a worktree;
	// resumedChild the child of scene 3.
	worktreeChild, resumedChild string

	mu      sync.Mutex
	current *orchestrator.Orchestrator
	killed  bool
}

// orchestrator returns a supervisor for the next scene, with sink on top
// of the demo's own (sink may be nil).
func (d *demo) orchestrator(sink func(event.Envelope)) (*orchestrator.Orchestrator, error) {
	all := func(e event.Envelope) {
		if sink != nil {
			sink(e)
		}
		if d.opts.Sink != nil {
			d.opts.Sink(e)
		}
	}
	o, err := orchestrator.New(orchestrator.Config{
		InkHome: d.home, Cwd: d.repo, Exe: d.opts.Exe, Binding: model.Binding{Provider: "script", Model: d.script},
		MaxParallel: 8, MaxDepth: 1, Environ: append(d.opts.Environ, "INK_HOME="+d.home), Sink: all,
		Command: d.command(),
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.current = o
	if d.killed {
		o.KillAll()
	}
	return o, nil
}

// killAll kills every agent of the running scene and of every later one.
func (d *demo) killAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	if d.current != nil {
		d.current.KillAll()
	}
}

// command is how the reader runs ink against the demo's INK_HOME.
func (d *demo) command() string {
	return "INK_HOME=" + d.home + " " + d.opts.Command
}

// fanOut plays scenes 1 and 2: a main agent delegates two investigations
// and one fix in a worktree, all at once.
func (d *demo) fanOut(ctx context.Context) error {
	fmt.Fprintf(d.out, "scenes 1 and 2: a main agent runs three children at once: two read-only\ninvestigations, and a fix made and committed in the child's own git worktree\n\n")
	o, err := d.orchestrator(nil)
	if err != nil {
		return err
	}
	res, err := o.Run(ctx, orchestrator.RunOptions{Prompt: "Look around this repository: list TODOs and tests, and fix the bug in calc.Add without touching my checkout."})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "main agent (%s, %s):\n%s\n\n", res.Status, orchestrator.Turns(res.Turns), indent(res.Text))
	fmt.Fprintf(d.out, "transcripts:\n  main  %s\n", res.Transcript)
	children, _ := session.ListChildren(res.Transcript)
	for _, c := range children {
		fmt.Fprintf(d.out, "  child %s (%s) %s\n", c.ID, c.LastStatus, c.Path)
	}
	infos, _ := worktree.List(ctx, d.home)
	for _, in := range infos {
		d.worktreeChild = in.Record.ChildID()
		fmt.Fprintf(d.out, "\nworktree kept with the child's work: %s\n  branch %s, %d commit(s) ahead of your HEAD, your checkout unchanged\n", in.Record.Path, in.Record.Branch, in.Ahead)
	}
	if res.Status != orchestrator.StatusCompleted {
		return fmt.Errorf("demo: the main agent ended %s: %s", res.Status, res.Reason)
	}
	return nil
}

// closing says what is left, or what --keep would have left.
func (d *demo) closing(dir string) {
	cmd := d.command()
	if d.opts.Keep {
		fmt.Fprintf(d.out, "\nkept %s; look around with:\n  %s sessions ls --cwd %s\n  %s worktrees ls\n", dir, cmd, d.repo, cmd)
		if d.worktreeChild != "" {
			fmt.Fprintf(d.out, "  %s worktrees diff %s\n", cmd, d.worktreeChild)
		}
		if d.resumedChild != "" {
			fmt.Fprintf(d.out, "  %s sessions show %s\n", cmd, d.resumedChild)
		}
		return
	}
	fmt.Fprintf(d.out, "\nThe demo directory is removed now. `%s demo --keep` keeps it, so that you can read\n"+
		"every transcript (sessions ls, sessions show ID), diff and merge the fixed worktree\n"+
		"(worktrees diff ID, worktrees merge ID) and resume the child again (task --resume ID);\n"+
		"it ends with those commands, ready to paste.\n", d.opts.Command)
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
	if err := worktree.InitRepo(ctx, repo, "calc: first version", "ink demo", "demo@ink.invalid"); err != nil {
		return fmt.Errorf("demo: %w (ink demo needs git on PATH)", err)
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
