package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/model"
)

// fixedProfiles is a Profiles that never changes.
type fixedProfiles struct{ set *agents.Set }

func (f fixedProfiles) Current() *agents.Set { return f.set }

func newTestOrchestrator(t *testing.T, cfg Config) *Orchestrator {
	t.Helper()
	cfg.InkHome, cfg.Cwd, cfg.Exe = t.TempDir(), t.TempDir(), "/bin/false"
	if cfg.Store == nil {
		cfg.Store, cfg.Workspaces = newMemStore(), newMemWorkspaces()
	}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func parse(t *testing.T, fields string) agents.Profile {
	t.Helper()
	p, err := agents.Parse(filepath.Join(t.TempDir(), "x.md"), []byte("---\nname: x\ndescription: y\n"+fields+"\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChildToolsNarrowing: a profile's tools narrow the child's pool in the
// listed order; no tools line gives the whole pool; a list whose every tool
// ink lacks gives no tools (never the parent's); a listed tool the child
// cannot have (task beyond the depth limit, an unknown name) is dropped
// with one note, never a rejection.
func TestChildToolsNarrowing(t *testing.T) {
	t.Parallel()
	o := newTestOrchestrator(t, Config{MaxDepth: 1})
	main := &agentRun{depth: 0, tools: MainTools}
	tests := []struct {
		name string
		prof *agents.Profile
		want string
		note []string
	}{
		{name: "no profile", want: "read,grep,find,ls,edit,write,bash"},
		{name: "no tools line", prof: ptr(parse(t, "")), want: "read,grep,find,ls,edit,write,bash"},
		{name: "listed order, Claude names", prof: ptr(parse(t, "tools: Grep, Read, Glob")), want: "grep,read,find"},
		{name: "every tool dropped", prof: ptr(parse(t, "tools: WebFetch, WebSearch")), want: "", note: []string{"WebFetch, WebSearch (Claude Code tools ink lacks)", "it runs with no tools"}},
		{name: "task beyond depth", prof: ptr(parse(t, "tools: read, task")), want: "read", note: []string{
			`agent "x" runs without some tools it lists: task (not available at depth 1 with --max-depth 1; raise --max-depth to let this agent delegate)`, "x.md"}},
		{name: "unknown tool names", prof: ptr(parse(t, "tools: Read, Gerp, TaskList")), want: "read", note: []string{"TaskList (Claude Code tools ink lacks)", "Gerp (no tool has this name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				got, note := o.childTools(main, tt.prof)
				if got == nil || strings.Join(got, ",") != tt.want {
					t.Fatalf("pool %#v, want %q", got, tt.want)
				}
				if len(tt.note) == 0 && note != "" {
					t.Errorf("unexpected note %q", note)
				}
				for _, w := range tt.note {
					if !strings.Contains(note, w) {
						t.Errorf("note %q lacks %q", note, w)
					}
				}
			})
		})
	}

	// A parent that was itself narrowed cannot hand on what it lacks.
	narrowed := &agentRun{depth: 0, tools: []string{"read", "grep", "task"}}
	o2 := newTestOrchestrator(t, Config{MaxDepth: 2})
	if got, note := o2.childTools(narrowed, ptr(parse(t, "tools: read, bash"))); strings.Join(got, ",") != "read" || !strings.Contains(note, "bash (not among its parent's tools)") {
		t.Fatalf("pool %v, note %q", got, note)
	}
}

func ptr[T any](v T) *T { return &v }

// TestTimeoutPrecedence: call > profile timeout: > --task-timeout > default.
func TestTimeoutPrecedence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		prof := parse(t, "timeout: 7")
		call := int64(3000)
		headless := newTestOrchestrator(t, Config{})
		flag := newTestOrchestrator(t, Config{TaskTimeout: 42 * time.Second})
		tty := newTestOrchestrator(t, Config{Interactive: true})
		for _, c := range []struct {
			name string
			o    *Orchestrator
			args TaskArgs
			prof *agents.Profile
			want time.Duration
		}{
			{"call beats profile", flag, TaskArgs{TimeoutMs: &call}, &prof, 3 * time.Second},
			{"profile beats flag", flag, TaskArgs{}, &prof, 7 * time.Second},
			{"flag without profile timeout", flag, TaskArgs{}, ptr(parse(t, "")), 42 * time.Second},
			{"headless default", headless, TaskArgs{}, nil, DefaultHeadlessTimeout},
			{"none on a terminal", tty, TaskArgs{}, nil, 0},
			{"profile on a terminal", tty, TaskArgs{}, &prof, 7 * time.Second},
		} {
			if got := c.o.timeoutFor(c.args, c.prof); got != c.want {
				t.Errorf("%s: %s, want %s", c.name, got, c.want)
			}
		}
	})
}

// TestProfileBinding: a profile's model may name another provider than its
// parent's; a relative script path is read from the profile's directory and
// must exist.
func TestProfileBinding(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("rules:\n  - reply: {text: x}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mk := func(modelLine string) agents.Profile {
			p, err := agents.Parse(filepath.Join(dir, "x.md"), []byte("---\nname: x\ndescription: y\nmodel: "+modelLine+"\n---\n"))
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		parent := model.Binding{Provider: "script", Model: "/elsewhere/main.yaml"}
		// profileBinding resolves against the profiles set (nil: none).
		profileBinding := func(set *agents.Set, p agents.Profile, parent model.Binding) (model.Binding, string, error) {
			o := newTestOrchestrator(t, Config{Profiles: fixedProfiles{set}})
			return o.profileBinding(p, parent)
		}
		b, _, err := profileBinding(nil, mk("script:other.yaml"), parent)
		if err != nil || b.Provider != "script" || b.Model != filepath.Join(dir, "other.yaml") {
			t.Fatalf("binding %+v, %v; want script:%s", b, err, filepath.Join(dir, "other.yaml"))
		}
		if b, _, err := profileBinding(nil, mk("openai/gpt-5-mini"), parent); err != nil || b.Provider != "openai" || b.Model != "gpt-5-mini" {
			t.Fatalf("another provider: %+v, %v", b, err)
		}
		if b, _, err := profileBinding(nil, mk("inherit"), parent); err != nil || b != parent {
			t.Fatalf("inherit: %+v, %v", b, err)
		}
		_, _, err = profileBinding(nil, mk("script:missing.yaml"), parent)
		if err == nil || !strings.Contains(err.Error(), "no such script file") || !strings.Contains(err.Error(), filepath.Join(dir, "x.md")) {
			t.Fatalf("missing script: %v", err)
		}
		// A Claude alias under a script parent: the parent's model with a
		// note, or what the user's alias file maps it to.
		b, note, err := profileBinding(nil, mk("sonnet"), parent)
		if err != nil || b != parent || !strings.Contains(note, "runs on its parent's model script:/elsewhere/main.yaml") {
			t.Fatalf("a Claude alias under a script parent: %+v, %q, %v", b, note, err)
		}
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, agents.ModelAliasesFile), []byte("aliases: {sonnet: script:other.yaml}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "other.yaml"), []byte("rules:\n  - reply: {text: x}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		set := agents.Load(agents.LoadOptions{InkHome: home})
		b, note, err = profileBinding(set, mk("sonnet"), parent)
		if err != nil || b.Provider != "script" || b.Model != filepath.Join(home, "other.yaml") || note != "" {
			t.Fatalf("a mapped alias: %+v, %q, %v", b, note, err)
		}
	})
}

// TestProfileLookupMessages: an unknown agent lists the available ones, or
// says the project is untrusted and how to trust it.
func TestProfileLookupMessages(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		home, project := t.TempDir(), t.TempDir()
		writeProfile(t, filepath.Join(home, "agents"), "scout", "finds code", "")
		writeProfile(t, filepath.Join(project, ".ink", "agents"), "fixer", "fixes code", "")
		trust, err := agents.LoadTrust(home)
		if err != nil {
			t.Fatal(err)
		}
		set := agents.Load(agents.LoadOptions{InkHome: home, ProjectRoot: project, Trust: trust})
		o := newTestOrchestrator(t, Config{Profiles: fixedProfiles{set}})
		if p, err := o.profile("scout"); err != nil || p.Name != "scout" {
			t.Fatalf("scout: %+v, %v", p, err)
		}
		_, err = o.profile("fixer")
		if err == nil || !strings.Contains(err.Error(), `unknown agent "fixer"; available agents: scout`) || !strings.Contains(err.Error(), "`ink trust "+project+"`") {
			t.Fatalf("untrusted agent: %v", err)
		}
		none := newTestOrchestrator(t, Config{})
		if _, err := none.profile("scout"); err == nil || !strings.Contains(err.Error(), "no agents are defined") {
			t.Fatalf("no profiles: %v", err)
		}
	})
}
