package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxedTask runs `ink task --json` whose child runs command with bash,
// with the extra flags; it returns the process, the task.start event and
// the text of the bash result the model saw.
func sandboxedTask(t *testing.T, e *env, command string, flags ...string) (*proc, map[string]any, string) {
	t.Helper()
	script := e.wtOutside("bash.yaml", wtBashChild(command))
	p, code := e.run(append(append([]string{"task", "--json"}, flags...), "--model", "script:"+script, "run the command")...)
	if code != 0 {
		t.Fatalf("ink task exited %d\nstderr:\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	starts := ofType(evs, "task.start")
	if len(starts) != 1 {
		t.Fatalf("task.start events %v", starts)
	}
	results := toolResults(evs, "bash")
	if len(results) == 0 {
		return p, starts[0], ""
	}
	return p, starts[0], results[len(results)-1]
}

// toolResults are the contents of the results of tool (every tool for "")
// in the message events of evs, in order, each prefixed with its tool's
// name when tool is "".
func toolResults(evs []map[string]any, tool string) []string {
	var out []string
	for _, ev := range ofType(evs, "message") {
		m, _ := ev["message"].(map[string]any)
		for _, r := range asList(m["results"]) {
			c, _ := r["content"].(string)
			switch {
			case tool == "":
				out = append(out, fmt.Sprintf("%v: %s", r["toolName"], c))
			case r["toolName"] == tool:
				out = append(out, c)
			}
		}
	}
	return out
}

func asList(v any) []map[string]any {
	var out []map[string]any
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestSandboxModes runs real bash under each mode: read-only cannot create a
// file in the repository; workspace-write lets a worktree child write its
// worktree but not the user's checkout or $HOME; danger-full-access can
// write anywhere. The mode shows in task.start.
func TestSandboxModes(t *testing.T) {
	t.Parallel()
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		e := newWtRepo(t, map[string]string{"a.txt": "a\n"})
		_, start, result := sandboxedTask(t, e, "touch inrepo.txt; echo TMP; touch $TMPDIR/scratch && echo tmp-ok", "--sandbox", "read-only")
		if start["sandbox"] != "read-only" {
			t.Errorf("task.start sandbox = %v, want read-only", start["sandbox"])
		}
		if !strings.Contains(result, "Permission denied") || !strings.Contains(result, "tmp-ok") {
			t.Errorf("bash result under read-only:\n%s", result)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "inrepo.txt")); err == nil {
			t.Error("read-only bash created a file in the repository")
		}
	})
	t.Run("workspace-write worktree child", func(t *testing.T) {
		t.Parallel()
		e := newWtRepo(t, map[string]string{"a.txt": "a\n"})
		home := filepath.Join(filepath.Dir(e.dir), "home")
		cmd := "touch mine.txt && echo wt-ok; touch " + filepath.Join(e.dir, "leak.txt") + "; touch " + filepath.Join(home, "leak.txt") + "; git add mine.txt && git commit -qm mine && echo commit-ok"
		_, start, result := sandboxedTask(t, e, cmd, "--worktree")
		if start["sandbox"] != "workspace-write" {
			t.Errorf("task.start sandbox = %v, want workspace-write (the default)", start["sandbox"])
		}
		if !strings.Contains(result, "wt-ok") || !strings.Contains(result, "commit-ok") || strings.Count(result, "Permission denied") != 2 {
			t.Errorf("bash result of a worktree child under workspace-write:\n%s", result)
		}
		wt, _ := start["worktree"].(string)
		if _, err := os.Stat(filepath.Join(wt, "mine.txt")); err != nil {
			t.Errorf("the child could not write its worktree: %v", err)
		}
		for _, leak := range []string{filepath.Join(e.dir, "leak.txt"), filepath.Join(home, "leak.txt")} {
			if _, err := os.Stat(leak); err == nil {
				t.Errorf("the worktree child wrote %s", leak)
			}
		}
	})
	t.Run("danger-full-access", func(t *testing.T) {
		t.Parallel()
		e := newWtRepo(t, map[string]string{"a.txt": "a\n"})
		outside := filepath.Join(filepath.Dir(e.dir), "outside.txt")
		_, start, result := sandboxedTask(t, e, "touch "+outside+" && echo outside-ok", "--sandbox", "danger-full-access")
		if start["sandbox"] != "danger-full-access" || !strings.Contains(result, "outside-ok") {
			t.Errorf("sandbox %v, result:\n%s", start["sandbox"], result)
		}
		if _, err := os.Stat(outside); err != nil {
			t.Errorf("danger-full-access could not write outside: %v", err)
		}
	})
}

// TestSandboxDriftRefusesResume: a child launched under read-only is not
// resumed under another mode; the refusal names the mode to use, and the
// resume under the recorded mode works.
func TestSandboxDriftRefusesResume(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "a\n"})
	script := e.wtOutside("s.yaml", "rules:\n  - when: {user: again}\n    reply: {text: resumed}\n  - reply: {text: first}\n")
	id, _, _ := launchChild(t, e, 0, "--sandbox", "read-only", "--model", "script:"+script, "first")
	before := snapshot(t, e.home, e.dir)
	code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "again")
	if code != 3 || !strings.Contains(stderr, "sandbox-drift: launched with bash under the read-only sandbox, would now run under workspace-write; resume it with --sandbox read-only") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	sameTree(t, "sandbox drift", before, snapshot(t, e.home, e.dir))
	if code, stdout, stderr := e.resumeOut("--sandbox", "read-only", "--model", "script:"+script, "--resume", id, "again"); code != 0 || !strings.HasPrefix(stdout, "resumed") {
		t.Fatalf("resume under the recorded mode: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestSandboxBadFlags: a mode that is not one and a writable directory that
// does not exist are bad input, refused before anything is written.
func TestSandboxBadFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", "rules:\n  - reply: {text: hi}\n")
	p, code := e.run("task", "--sandbox", "paranoid", "--model", "script:"+script, "x")
	if code != 2 || !strings.Contains(p.stderr.String(), "--sandbox") || !strings.Contains(p.stderr.String(), "workspace-write") {
		t.Fatalf("bad mode: exit %d\n%s", code, p.stderr.String())
	}
	p, code = e.run("run", "--writable", filepath.Join(e.dir, "missing"), "--model", "script:"+script, "x")
	if code != 2 || !strings.Contains(p.stderr.String(), "--writable") {
		t.Fatalf("bad writable: exit %d\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(e.home); err == nil {
		t.Errorf("bad flags created INK_HOME %s", e.home)
	}
}
