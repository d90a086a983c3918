package orchestrator

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/inkdev/ink/model"
)

// TestRemoteChildren: with a remote launcher every child runs there and
// works in a worktree whose path, baseline and branch its spec names; the
// main agent stays local; a profile's launcher: local keeps its child
// local; worktree: false for a remote child is refused, saying why.
func TestRemoteChildren(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		repo, home := gitRepo(t), t.TempDir()
		profiles := loadProfiles(t, home, map[string]string{"here": "launcher: local\n"})
		h := newHarness(t, Config{Workspaces: gitWorkspaces{}, InkHome: home, Cwd: repo, MaxDepth: 1, RemoteLauncher: remoteFake, Profiles: profiles}, cast{
			main: delegates(`{"prompt":"away"}`, `{"prompt":"near","agent":"here"}`, `{"prompt":"flat","worktree":false}`),
			child: func(w *fakeWorker) {
				if w.Start() {
					w.Complete("done", model.Usage{})
				}
			},
		}.play)
		if res := h.run(t, RunOptions{Prompt: "p"}); res.Status != StatusCompleted {
			t.Fatalf("run: %s %s", res.Status, res.Reason)
		}
		if h.l.byLabel("main").Spec.Remote != nil {
			t.Error("the main agent was sent to a remote worker")
		}
		away := h.l.byPrompt("away").Spec
		wt := away.Create.Launch.Worktree
		if away.Remote == nil || away.Remote.Workspace == nil || wt == nil ||
			away.Remote.Workspace.Path != wt.Path || away.Remote.Workspace.Baseline != wt.Baseline || away.Remote.Workspace.Branch != wt.Branch {
			t.Fatalf("the remote child's spec: remote %+v, worktree %+v", away.Remote, wt)
		}
		if away.WorktreeGitDir != "" {
			t.Errorf("a remote child's spec names the host's git directory %s", away.WorktreeGitDir)
		}
		if near := h.l.byPrompt("near"); near == nil || near.Spec.Remote != nil || near.Spec.Create.Launch.Worktree != nil {
			t.Errorf("the launcher: local child did not run locally without a worktree")
		}
		if h.l.byPrompt("flat") != nil {
			t.Fatal("a remote child ran without a worktree")
		}
		var refused string
		for _, ans := range h.l.byLabel("main").answers() {
			if strings.Contains(ans.Content, "always works in a worktree") {
				refused = ans.Content
			}
		}
		if refused == "" {
			t.Errorf("worktree: false for a remote child was not refused with why")
		}
	})
}

// TestRemoteProfileWithoutLauncher: a profile that asks for launcher:
// remote in a run without one is refused, naming the flag.
func TestRemoteProfileWithoutLauncher(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home := t.TempDir()
		h := newHarness(t, Config{Workspaces: gitWorkspaces{}, InkHome: home, MaxDepth: 1, Profiles: loadProfiles(t, home, map[string]string{"far": "launcher: remote\n"})}, cast{
			main:  delegates(`{"prompt":"x","agent":"far"}`),
			child: completes("never", model.Usage{}),
		}.play)
		h.run(t, RunOptions{Prompt: "p"})
		if h.l.byPrompt("x") != nil {
			t.Fatal("the child ran")
		}
		var got string
		for _, ans := range h.l.byLabel("main").answers() {
			got += ans.Content + "\n"
		}
		if !strings.Contains(got, "launcher: remote") || !strings.Contains(got, "--launcher 'exec:COMMAND'") {
			t.Errorf("the refusal does not say what to pass:\n%s", got)
		}
	})
}

// TestKubeProfile: a profile's launcher: kube runs remote under
// --launcher kube, and is refused under an exec launcher or none, naming
// the flag.
func TestKubeProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		remote Launcher
		kind   string
		runs   bool
	}{
		{"kube", remoteFake, KubeLauncher, true},
		{"exec", remoteFake, "", false},
		{"none", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, home := gitRepo(t), t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{Workspaces: gitWorkspaces{}, InkHome: home, Cwd: repo, MaxDepth: 1, RemoteLauncher: tc.remote, RemoteKind: tc.kind,
					Profiles: loadProfiles(t, home, map[string]string{"pod": "launcher: kube\n"})}, cast{
					main: delegates(`{"prompt":"x","agent":"pod"}`),
					child: func(w *fakeWorker) {
						if w.Start() {
							w.Complete("done", model.Usage{})
						}
					},
				}.play)
				h.run(t, RunOptions{Prompt: "p"})
				child := h.l.byPrompt("x")
				if tc.runs {
					if child == nil || child.Spec.Remote == nil {
						t.Fatal("the launcher: kube child did not run remote under --launcher kube")
					}
					return
				}
				if child != nil {
					t.Fatal("the child ran")
				}
				var got string
				for _, ans := range h.l.byLabel("main").answers() {
					got += ans.Content + "\n"
				}
				if !strings.Contains(got, "launcher: kube") || !strings.Contains(got, "--launcher kube") {
					t.Errorf("the refusal does not say what to pass:\n%s", got)
				}
			})
		})
	}
}

// TestParseLauncher: local, kube and exec:COMMAND are launchers; anything else
// is refused saying what is.
func TestParseLauncher(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct{ in, cmd, err string }{
			{"", "", ""},
			{"local", "", ""},
			{"exec:ssh box ink worker --remote", "ssh box ink worker --remote", ""},
			{"exec:  ", "", "names no command"},
			{"kube", "", ""},
			{"k8s", "", "a launcher is local, kube"},
		} {
			cmd, err := ParseLauncher(tc.in)
			if cmd != tc.cmd || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("ParseLauncher(%q) = %q, %v", tc.in, cmd, err)
			}
		}
	})
}
