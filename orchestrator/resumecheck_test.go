package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/version"
)

// editHeader rewrites the header line of the transcript at path.
func editHeader(t testing.TB, s *memStore, path string, edit func(h *session.Header)) {
	t.Helper()
	data := s.bytes(path)
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var h session.Header
	if err := json.Unmarshal(first, &h); err != nil {
		t.Fatal(err)
	}
	edit(&h)
	line, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	s.put(path, append(append(line, '\n'), rest...))
}

// keepLines rewrites the transcript at path keeping the header and the
// entries keep accepts.
func keepLines(t testing.TB, s *memStore, path string, keep func(entry map[string]any) bool) {
	t.Helper()
	data := s.bytes(path)
	lines := strings.SplitAfter(string(data), "\n")
	out := lines[0]
	for _, l := range lines[1:] {
		var e map[string]any
		if l == "" || json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		if keep(e) {
			out += l
		}
	}
	s.put(path, []byte(out))
}

// TestResumeRefusals: a resume that cannot continue the same child in the
// same place is refused with every problem found, each under its code,
// ending "Start a new task instead."; the refusal starts nothing and
// changes no file.
func TestResumeRefusals(t *testing.T) {
	t.Parallel()
	type fixture struct {
		h     *harness
		main  RunResult
		child ipc.AttemptSpec
		proj  string // the directory ink runs in (the child's cwd)
	}
	for _, tc := range []struct {
		name string
		// launch is the first run's extra configuration; child its child.
		launch  func(t *testing.T, home, proj string) Config
		args    string
		child   play
		mainDie bool
		// mutate changes the world after the launch; resume is the
		// resuming orchestrator's configuration (its InkHome is set).
		mutate   func(t *testing.T, fx fixture)
		resume   func(t *testing.T, fx fixture) Config
		codes    []string
		notCodes []string // codes the refusal must not repeat
		want     []string
	}{
		{name: "still running", codes: []string{"still-running"},
			want: []string{fmt.Sprintf("the child is still running (pid %d holds its lease); wait for it to finish, or see `ink leases ls`", os.Getpid())},
			mutate: func(t *testing.T, fx fixture) {
				if _, err := fx.h.store.acquire(fx.child.Transcript, lease.Owner{AttemptID: session.NewID(), SessionID: fx.child.SessionID}, os.Getpid()); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "empty transcript", codes: []string{"empty-transcript"},
			mutate: func(t *testing.T, fx fixture) {
				keepLines(t, fx.h.store, fx.child.Transcript, func(e map[string]any) bool { return e["type"] != session.EntryMessage })
			}},
		{name: "no settled record", child: dies, mainDie: true, codes: []string{"no-record"},
			want: []string{"no settled record of this child: neither the parent's task result nor the child's own attempt end was written"},
			mutate: func(t *testing.T, fx fixture) {
				// Its last holder ran on another host, which a free lock here
				// says nothing about: it may still run.
				fx.h.store.setLease(fx.child.Transcript, false, lease.Meta{Pid: 4242, Host: "another-host", AttemptID: fx.child.AttemptID, Epoch: 1})
			}},
		{name: "another ink version", codes: []string{"version-drift"},
			want: []string{"launched by ink 0.0.9, this is ink " + version.Ink + "; resume it with ink 0.0.9"},
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) { h.Launch.InkVersion = "0.0.9" })
			}},
		{name: "agent removed", args: `{"prompt":"job","agent":"scout"}`, codes: []string{"agent-missing", "system-drift"},
			want: []string{`agent "scout" is no longer defined (was `},
			launch: func(t *testing.T, home, proj string) Config {
				return Config{Profiles: loadProfiles(t, home, map[string]string{"scout": ""})}
			},
			resume: func(t *testing.T, fx fixture) Config {
				if err := os.Remove(filepath.Join(fx.h.cfg.InkHome, "agents", "scout.md")); err != nil {
					t.Fatal(err)
				}
				return Config{Profiles: fixedProfiles{agents.Load(agents.LoadOptions{InkHome: fx.h.cfg.InkHome})}}
			}},
		{name: "agent edited", args: `{"prompt":"job","agent":"scout"}`, codes: []string{"agent-drift", "system-drift"},
			want: []string{`agent "scout" changed since launch`},
			launch: func(t *testing.T, home, proj string) Config {
				return Config{Profiles: loadProfiles(t, home, map[string]string{"scout": ""})}
			},
			resume: func(t *testing.T, fx fixture) Config {
				p := filepath.Join(fx.h.cfg.InkHome, "agents", "scout.md")
				if err := os.WriteFile(p, []byte("---\nname: scout\ndescription: the scout agent\n---\nYou are a different scout.\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return Config{Profiles: fixedProfiles{agents.Load(agents.LoadOptions{InkHome: fx.h.cfg.InkHome})}}
			}},
		{name: "agent's thinking changed", args: `{"prompt":"job","agent":"scout"}`, codes: []string{"agent-drift", "thinking-drift"},
			want: []string{`launched with thinking "high", would now run with thinking "low"; restore the agent's thinking: line to resume it`},
			launch: func(t *testing.T, home, proj string) Config {
				return Config{Profiles: loadProfiles(t, home, map[string]string{"scout": "thinking: high\n"})}
			},
			resume: func(t *testing.T, fx fixture) Config {
				return Config{Profiles: loadProfiles(t, fx.h.cfg.InkHome, map[string]string{"scout": "thinking: low\n"})}
			}},
		{name: "recorded thinking differs", codes: []string{"thinking-drift"}, notCodes: []string{"agent-drift"},
			want: []string{`launched with thinking "high", would now run with thinking none`},
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) { h.Launch.Thinking = "high" })
			}},
		// Only a child that may delegate is told the agents.
		{name: "another agent advertised", codes: []string{"system-drift"},
			want: []string{"the assembled system prompt changed since launch"},
			launch: func(t *testing.T, home, proj string) Config {
				return Config{MaxDepth: 2, Profiles: loadProfiles(t, home, map[string]string{"scout": ""})}
			},
			resume: func(t *testing.T, fx fixture) Config {
				return Config{MaxDepth: 2, Profiles: loadProfiles(t, fx.h.cfg.InkHome, map[string]string{"scout": "", "fixer": ""})}
			}},
		{name: "project instructions edited", codes: []string{"system-drift", "prompt-files-drift"},
			want: []string{"the project instructions " + "%[1]s/AGENTS.md changed or are gone since launch"},
			launch: func(t *testing.T, home, proj string) Config {
				if err := os.WriteFile(filepath.Join(proj, "AGENTS.md"), []byte("Run the tests.\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return Config{}
			},
			mutate: func(t *testing.T, fx fixture) {
				if err := os.WriteFile(filepath.Join(fx.proj, "AGENTS.md"), []byte("Never run the tests.\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "deeper tree", codes: []string{"tools-drift"},
			want:   []string{"launched with tools [bash, edit, find, grep, ls, read, write], would now get [bash, edit, find, grep, ls, read, task, write]; restore the profile's tools: line or the --max-depth 1 it ran under"},
			resume: func(t *testing.T, fx fixture) Config { return Config{MaxDepth: 2} }},
		{name: "another model", codes: []string{"model-drift"},
			want: []string{"launched on " + testBinding.String() + ", would now run on script:/ink-test/other.yaml; resume it on the model it was launched on (--model " + testBinding.String() + ")"},
			resume: func(t *testing.T, fx fixture) Config {
				return Config{Binding: model.Binding{Provider: "script", Model: "/ink-test/other.yaml"}}
			}},
		{name: "another directory", codes: []string{"cwd-drift", "system-drift"},
			want:   []string{"launched in %[1]s, the parent now works in "},
			resume: func(t *testing.T, fx fixture) Config { return Config{Cwd: t.TempDir()} }},
		{name: "directory gone", codes: []string{"cwd-missing"},
			want: []string{"the child's directory %[1]s is gone; put it back to resume the child"},
			mutate: func(t *testing.T, fx fixture) {
				if err := os.Remove(fx.proj); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "directory replaced by a file", codes: []string{"cwd-not-directory"},
			mutate: func(t *testing.T, fx fixture) {
				if err := os.Remove(fx.proj); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(fx.proj, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "header without a launch record", codes: []string{"missing-launch"},
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) { h.Launch = nil })
			}},
		{name: "child of another session", codes: []string{"not-owned"},
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) {
					h.Parent = "01someoneelse"
					h.Launch.ParentSessionID = "01someoneelse"
				})
			}},
		{name: "worktree removed", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-missing"}, notCodes: []string{"cwd-missing"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				if err := os.RemoveAll(fx.child.Root); err != nil {
					t.Fatal(err)
				}
				runGit(t, fx.proj, "worktree", "prune")
			}},
		{name: "worktree on another branch", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-branch-swapped"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				runGit(t, fx.child.Root, "checkout", "-q", "-b", "elsewhere")
			}},
		{name: "worktree history replaced", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-history-replaced"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				runGit(t, fx.child.Root, "checkout", "-q", "--orphan", "tmp")
				runGit(t, fx.child.Root, "commit", "-q", "--allow-empty", "-m", "unrelated")
				runGit(t, fx.child.Root, "branch", "-q", "-f", "ink/"+fx.child.SessionID, "tmp")
				runGit(t, fx.child.Root, "checkout", "-q", "ink/"+fx.child.SessionID)
			}},
		{name: "worktree cwd outside it", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-cwd-outside"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) { h.Launch.Cwd = fx.proj })
			}},
		{name: "worktree no longer registered", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-unregistered"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				admin := filepath.Join(fx.proj, ".git", "worktrees", filepath.Base(fx.child.Root))
				if err := os.RemoveAll(admin); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "worktree repository gone", args: `{"prompt":"job","worktree":true}`, child: dies, codes: []string{"worktree-repo-missing"},
			launch: gitLaunch,
			mutate: func(t *testing.T, fx fixture) {
				editHeader(t, fx.h.store, fx.child.Transcript, func(h *session.Header) { h.Launch.Worktree.RepoRoot = filepath.Join(fx.proj, "gone") })
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				home := t.TempDir()
				proj := filepath.Join(t.TempDir(), "proj")
				if err := os.Mkdir(proj, 0o755); err != nil {
					t.Fatal(err)
				}
				if p, err := filepath.EvalSymlinks(proj); err == nil {
					proj = p
				}
				cfg := Config{}
				if tc.launch != nil {
					cfg = tc.launch(t, home, proj)
				}
				cfg.InkHome, cfg.Cwd, cfg.MaxDepth = home, proj, 1
				args := tc.args
				if args == "" {
					args = `{"prompt":"job"}`
				}
				child := tc.child
				if child == nil {
					child = completes("done", model.Usage{Input: 3, Output: 1})
				}
				main := delegates(args)
				if tc.mainDie {
					// The main agent's worker dies before it records the
					// child's result.
					main = func(w *fakeWorker) {
						if w.Start() && w.CallTasks(taskCallOf("call-1", args)) && w.Request("call-1", args) {
							if _, ok := w.AwaitAnswer("call-1"); ok {
								w.Die("SIGKILL")
							}
						}
					}
				}
				h := newHarness(t, cfg, cast{main: main, child: child}.play)
				res := h.run(t, RunOptions{Prompt: "p"})
				cw := h.l.byLabel("main/1")
				if cw == nil {
					t.Fatalf("no child launched: %s", h.rec.dump())
				}
				fx := fixture{h: h, main: res, child: cw.Spec, proj: proj}
				if tc.mutate != nil {
					tc.mutate(t, fx)
				}
				rcfg := Config{}
				if tc.resume != nil {
					rcfg = tc.resume(t, fx)
				}
				if rcfg.Profiles == nil {
					rcfg.Profiles = cfg.Profiles
				}
				if rcfg.Cwd == "" {
					rcfg.Cwd = proj
				}
				if rcfg.MaxDepth == 0 {
					rcfg.MaxDepth = 1
				}
				rcfg.InkHome, rcfg.Workspaces = home, cfg.Workspaces
				beforeHome, beforeProj, beforeStore := snapshot(t, home), snapshotIfDir(t, proj), h.store.snapshot()

				sh := newHarness(t, rcfg, func(w *fakeWorker) { t.Errorf("a worker started for a refused resume") })
				got := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(cw.Spec.SessionID)}, Parent: res.SessionID})
				if got.Status != StatusRejected || !got.IsError || got.ParentSession != "" {
					t.Fatalf("resume = %+v", got)
				}
				c := got.Content
				if !strings.HasPrefix(c, fmt.Sprintf("cannot resume child %q:\n- ", cw.Spec.SessionID)) || !strings.HasSuffix(c, "\nStart a new task instead.") {
					t.Errorf("refusal is not in the documented form:\n%s", c)
				}
				var codes []string
				for _, l := range strings.Split(c, "\n") {
					if code, _, ok := strings.Cut(strings.TrimPrefix(l, "- "), ": "); ok && strings.HasPrefix(l, "- ") {
						codes = append(codes, code)
					}
				}
				for _, code := range tc.codes {
					if !slices.Contains(codes, code) {
						t.Errorf("refusal lacks code %s (has %v):\n%s", code, codes, c)
					}
				}
				for _, code := range tc.notCodes {
					if slices.Contains(codes, code) {
						t.Errorf("refusal has code %s, which says the same thing again:\n%s", code, c)
					}
				}
				for _, w := range tc.want {
					if strings.Contains(w, "%[1]s") {
						w = fmt.Sprintf(w, proj)
					}
					if !strings.Contains(c, w) {
						t.Errorf("refusal lacks %q:\n%s", w, c)
					}
				}
				if !reflect.DeepEqual(snapshot(t, home), beforeHome) || !reflect.DeepEqual(snapshotIfDir(t, proj), beforeProj) || !reflect.DeepEqual(h.store.snapshot(), beforeStore) {
					t.Error("a refused resume changed files")
				}
			})
		})
	}
}

// gitLaunch makes proj a repository and launches on the worktrees of
// package worktree: the worktree cases are integration tests of the
// default Workspaces against real git.
func gitLaunch(t *testing.T, home, proj string) Config {
	gitInit(t, proj)
	return Config{Workspaces: gitWorkspaces{}}
}

// gitInit makes dir a repository with one commit.
func gitInit(t testing.TB, dir string) {
	t.Helper()
	runGit(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README")
	runGit(t, dir, "commit", "-q", "-m", "first")
}

// snapshotIfDir is snapshot of dir, or its plain content when it is no
// directory (nil when absent).
func snapshotIfDir(t testing.TB, dir string) map[string]string {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil
	case !fi.IsDir():
		data, _ := os.ReadFile(dir)
		return map[string]string{dir: string(data)}
	}
	return snapshot(t, dir)
}

// TestResumeOfAnInconsistentHistory: validation reads only the header and
// the end of a transcript, so a history whose calls and results are out of
// step is refused by the worker, which reads it whole under the lease:
// the refusal says malformed and why, and nothing is written but the lease
// record the worker held to read — the shell session is written only once
// a worker accepts the child.
func TestResumeOfAnInconsistentHistory(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, main, child := runWithChild(t, Config{}, `{"prompt":"job"}`, completes("done", model.Usage{Input: 3, Output: 1}))
		stray := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "nosuchcall", ToolName: "read", Content: "x"}}}
		if err := h.store.append(child.Spec.Transcript, session.Entry{Message: &stray}); err != nil {
			t.Fatal(err)
		}
		before := h.store.snapshot()
		sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, completes("again", model.Usage{}))
		res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(child.Spec.SessionID)}, Parent: main.SessionID})
		want := "- malformed: the transcript " + child.Spec.Transcript + " cannot be continued: inconsistent beyond a crash tail: "
		if res.Status != StatusRejected || res.ParentSession != "" || !strings.Contains(res.Content, want) || !strings.HasSuffix(res.Content, "\nStart a new task instead.") {
			t.Fatalf("resume = %+v\nwant a refusal containing %q", res, want)
		}
		// Only the lease shows that a worker held it to read.
		after := h.store.snapshot()
		for p, v := range after {
			if before[p] != v {
				t.Errorf("a resume the worker refused changed %s", p)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Errorf("a resume the worker refused removed %s", p)
			}
		}
		for _, e := range sh.rec.all() {
			if e.Body.Kind() == "task.start" || e.Body.Kind() == "run.start" {
				t.Errorf("a refused resume reported %s", e.Body.Kind())
			}
		}
	})
}

// TestResumeRefusedByTheWorker: a resume that passed validation can still
// be refused by the worker under the lease (another ink took the child
// first); the answer is a refusal with the worker's code and the child's
// transcript is not changed.
func TestResumeRefusedByTheWorker(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			code         session.Code
			reason, want string
		}{
			{session.CodeStillRunning, "lease on x held by pid 7", "- still-running: lease on x held by pid 7\nStart a new task instead."},
			{session.CodeMalformed, "the transcript changed underneath", "- malformed: the transcript changed underneath\nStart a new task instead."},
			{session.CodeHeaderChanged, "the transcript changed since it was validated", "- header-changed: the transcript changed since it was validated\nStart a new task instead."},
		} {
			h, main, child := runWithChild(t, Config{}, `{"prompt":"job"}`, dies)
			before := h.store.bytes(child.Spec.Transcript)
			sh := newHarness(t, Config{InkHome: h.cfg.InkHome, Cwd: h.cfg.Cwd, MaxDepth: 1}, func(w *fakeWorker) {
				w.Finish(ipc.Outcome{Status: StatusRefused, Code: tc.code, Reason: tc.reason})
			})
			res := sh.task(t, TaskOptions{Args: TaskArgs{Prompt: "go on", Resume: strp(child.Spec.SessionID)}, Parent: main.SessionID})
			if res.Status != StatusRejected || !strings.HasPrefix(res.Content, fmt.Sprintf("cannot resume child %q:", child.Spec.SessionID)) || !strings.HasSuffix(res.Content, tc.want) {
				t.Errorf("refusal = %q, want suffix %q", res.Content, tc.want)
			}
			if err := res.Record.Validate(); err != nil {
				t.Errorf("the refusal's record does not validate: %v", err)
			}
			if after := h.store.bytes(child.Spec.Transcript); len(before) == 0 || !bytes.Equal(before, after) {
				t.Error("the child's transcript changed")
			}
		}
	})
}
