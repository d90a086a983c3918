package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoScenes: `ink demo` plays its three scenes with real worker
// processes: the fan-out, the worktree fix, and a child killed with
// SIGKILL in the middle of a bash command and resumed, whose repaired tail
// it shows. Without --keep it removes its directory and says what --keep
// would let you inspect.
func TestDemoScenes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	p, code := e.run("demo")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	out := p.stdout.String()
	for _, want := range []string{
		`(?m)^scenes 1 and 2: a main agent runs three children at once`,
		`(?m)^worktree kept with the child's work: .*\n  branch ink/[a-z0-9]+, 1 commit\(s\) ahead of your HEAD, your checkout unchanged$`,
		`(?m)^scene 3: a child is killed in the middle of a command, then resumed$`,
		`(?m)^  \$ ink task "Run the calc test suite and report what it says\."$`,
		`(?m)^  the demo killed its worker \(pid \d+\) with SIGKILL while its bash command ran$`,
		`(?m)^  → crash: the worker process \(pid \d+\) was killed by signal SIGKILL$`,
		`(?m)^  \$ ink task --resume [a-z0-9]+ "You were cut short\.`,
		`(?m)^  → completed, in the same transcript:$`,
		`(?m)^    assistant → bash sleep 60; echo tests passed\n    result ← bash \(error\): interrupted before a result was recorded — the outcome is unknown; check before relying on…   ← written by the resume\n    user: You were cut short\.`,
		`(?m)^    result ← bash \(ok\): 1 \[exit code 0\]$`,
		"(?m)^The demo directory is removed now. `ink demo --keep` keeps it, so that you can read\nevery transcript",
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("report lacks %s", want)
		}
	}
	// The live line of the killed child agrees with its transcript: one
	// turn, spent before the kill.
	if !regexp.MustCompile(`(?m)^ink: shell/1 crash after [0-9.]+m?s: 1 turn, 900 in / 30 out — the worker process \(pid \d+\) was killed by signal SIGKILL$`).MatchString(p.stderr.String()) {
		t.Errorf("stderr lacks the killed child's end line:\n%s", p.stderr.String())
	}
	noDemoDirs(t, tmp)
}

// TestDemoKeep: with --keep the directory stays and the closing lines are
// commands that work as printed.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	p, code := e.run("demo", "--keep")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	m := regexp.MustCompile(`(?m)^  INK_HOME=(\S+) ink sessions show ([a-z0-9]+)$`).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no sessions show line:\n%s", p.stdout.String())
	}
	e.vars = append(e.vars, "INK_HOME="+m[1])
	q, code := e.run("sessions", "show", m[2])
	if code != 0 || !strings.Contains(q.stdout.String(), "interrupted before a result was recorded") || !strings.Contains(q.stdout.String(), "ended completed") {
		t.Fatalf("the printed command: exit %d\n%s%s", code, q.stdout.String(), q.stderr.String())
	}
	if dirs, _ := filepath.Glob(filepath.Join(tmp, "ink-demo-*")); len(dirs) != 1 {
		t.Fatalf("kept directories %v", dirs)
	}

	// The worktree child committed its fix under the default sandbox (in
	// its own git directory), and ink worktrees merge brings it into the
	// demo's repository, which git fsck finds whole.
	repo := regexp.MustCompile(`(?m)^  INK_HOME=\S+ ink sessions ls --cwd (\S+)$`).FindStringSubmatch(p.stdout.String())
	wt := regexp.MustCompile(`(?m)^  INK_HOME=\S+ ink worktrees diff ([a-z0-9]+)$`).FindStringSubmatch(p.stdout.String())
	if repo == nil || wt == nil {
		t.Fatalf("no sessions ls or worktrees diff line:\n%s", p.stdout.String())
	}
	e.dir = repo[1]
	q, code = e.run("worktrees", "merge", wt[1])
	if code != 0 || !strings.Contains(q.stdout.String(), "merged ink/"+wt[1]+" into main") {
		t.Fatalf("ink worktrees merge of the demo's fix: exit %d\n%s%s", code, q.stdout.String(), q.stderr.String())
	}
	if log := e.wtGit("log", "--format=%s", "--first-parent", "HEAD^2"); !strings.HasPrefix(log, "calc: Add adds\n") {
		t.Errorf("the merged branch holds %q, want the child's commit on top", log)
	}
	if out, err := e.gitTry(e.dir, "fsck", "--strict", "--no-progress"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("git fsck of the demo's repository after the merge: %v\n%s", err, out)
	}
}

// TestDemoInterrupted: Ctrl-C during the demo stops its agents, removes its
// directory and exits 130.
func TestDemoInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	p := e.start("demo")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.stderr.String(), "started (pid"); {
		if time.Now().After(deadline) {
			t.Fatalf("no child started\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "ink: cancelling every agent") || !strings.Contains(p.stdout.String(), "interrupted: every agent was stopped and recorded how it ended") {
		t.Errorf("the interruption is not said:\nstdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())
	}
	noDemoDirs(t, tmp)
}

// goRunLayouts are where `go run` leaves the binary it runs: a temporary
// work directory, or (since Go 1.24, from the second run on) the build
// cache.
var goRunLayouts = map[string]string{
	"work directory": filepath.Join("go-build3141592", "b001", "exe", "ink"),
	"build cache":    filepath.Join(".cache", "go-build", "cf", "cfdae9c18150d2154e9dba86c60c5b9a41f7a3ea39b9a28488a2352ea1c7fb34-d", "ink"),
}

// goRunCopy is a copy of the ink binary under dir at rel, as `go run`
// would leave it.
func goRunCopy(t *testing.T, dir, rel string) string {
	t.Helper()
	exe := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(exe), 0o755); err != nil {
		t.Fatal(err)
	}
	// A hard link, or a copy made by another process: a copy written here
	// would be open for writing while parallel tests fork, and a child
	// forked in that instant keeps it open until its exec, so that
	// starting the copy fails with "text file busy".
	if err := os.Link(inkBin, exe); err != nil {
		if out, err := exec.Command("cp", inkBin, exe).CombinedOutput(); err != nil {
			t.Fatalf("copy the ink binary: %v\n%s", err, out)
		}
	}
	return exe
}

// TestDemoUnderGoRun: a binary that `go run` built (it lives in a go-build
// work directory or in the build cache) hints `go run ./cmd/ink`, which
// works where the reader is: the root of a clone of ink.
func TestDemoUnderGoRun(t *testing.T) {
	t.Parallel()
	for layout, rel := range goRunLayouts {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tmp := t.TempDir()
			e.vars = append(e.vars, "TMPDIR="+tmp)
			exe := goRunCopy(t, t.TempDir(), rel)
			e.write("go.mod", "module github.com/inkdev/ink\n\ngo 1.26\n")
			e.write("cmd/ink/main.go", "package main\n")
			p := e.startExe(exe, "demo")
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
			}
			out := p.stdout.String()
			for _, want := range []string{"  $ go run ./cmd/ink task \"Run the calc", "  $ go run ./cmd/ink task --resume ", "`go run ./cmd/ink demo --keep` keeps it"} {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, exe) {
				t.Errorf("the report names the binary %s:\n%s", exe, out)
			}
			noDemoDirs(t, tmp)
		})
	}
}

// TestDemoJSON: `ink demo --json` writes only events on stdout, the stream
// `ink run --json` writes, for every scene; the report goes to stderr.
func TestDemoJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	p, code := e.run("demo", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	var agents []string
	for _, ev := range ofType(evs, "run.start") {
		agents = append(agents, ev["agent"].(string))
	}
	if strings.Join(agents, " ") != "main shell shell" {
		t.Errorf("run.start of %v, want main (scenes 1 and 2) and two shells (scene 3)", agents)
	}
	crashed := false
	for _, ev := range ofType(evs, "task.end") {
		if ev["status"] == "crash" && strings.Contains(ev["reason"].(string), "killed by signal SIGKILL") && ev["turns"] == float64(1) {
			crashed = true
		}
	}
	if !crashed {
		t.Errorf("no task.end of the killed child with its one turn")
	}
	if !strings.Contains(p.stderr.String(), "scene 3: a child is killed in the middle of a command, then resumed") {
		t.Errorf("the report is not on stderr:\n%s", p.stderr.String())
	}
	noDemoDirs(t, tmp)
}
