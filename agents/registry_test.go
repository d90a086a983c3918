package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// warnings collects onWarn calls from the watcher goroutine.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

func (w *warnings) has(msg string) bool {
	for _, m := range w.all() {
		if m == msg {
			return true
		}
	}
	return false
}

// startWatch runs Watch until the test ends and waits for it to stop.
func startWatch(t *testing.T, opts LoadOptions) (*Registry, *warnings) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &warnings{}
	reg, err := Watch(ctx, opts, nil, w.add)
	if err != nil {
		cancel()
		t.Fatalf("Watch: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-reg.Done():
		case <-time.After(2 * time.Second):
			t.Errorf("the watcher did not stop within 2 s of its context ending")
		}
	})
	return reg, w
}

// eventually polls cond until it holds, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func description(reg *Registry, name string) string {
	p, ok := reg.Current().Get(name)
	if !ok {
		return "<missing>"
	}
	return p.Description
}

func TestWatchSeesEditsRenameSavesAndDeletes(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	path := filepath.Join(dir, "reviewer.md")
	writeFile(t, path, profileText("reviewer", "v1"))
	reg, _ := startWatch(t, LoadOptions{Home: l.home, InkHome: l.inkHome})
	if got := description(reg, "reviewer"); got != "v1" {
		t.Fatalf("initial description %q", got)
	}

	writeFile(t, path, profileText("reviewer", "v2 written in place"))
	eventually(t, "an in-place edit is seen", func() bool { return description(reg, "reviewer") == "v2 written in place" })

	// Editors save by writing a temp file and renaming it over the old one;
	// do it twice to prove the watch survives the first.
	for _, version := range []string{"v3 renamed over", "v4 renamed again"} {
		tmp := filepath.Join(dir, ".reviewer.md.swp")
		writeFile(t, tmp, profileText("reviewer", version))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a rename-save is seen ("+version+")", func() bool { return description(reg, "reviewer") == version })
	}

	writeFile(t, filepath.Join(dir, "scout.md"), profileText("scout", "new file"))
	eventually(t, "a new file is seen", func() bool { return description(reg, "scout") == "new file" })

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted file drops its profile", func() bool { return description(reg, "reviewer") == "<missing>" })
	if got := strings.Join(reg.Current().Names(), ","); got != "scout" {
		t.Errorf("names after delete: %s", got)
	}
}

func TestWatchKeepsTheLastGoodVersionOfABrokenSave(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	path := filepath.Join(l.inkHome, "agents", "reviewer.md")
	writeFile(t, path, "---\nname: reviewer\ndescription: good\ntimeout: 60\n---\n")
	reg, warns := startWatch(t, LoadOptions{InkHome: l.inkHome})

	writeFile(t, path, "---\nname: reviewer\ndescription: good\ntimeout: sixty\n---\n")
	want := "agent file " + path + `:4: timeout must be a positive whole number of seconds (e.g. timeout: 600); got "sixty"; keeping the previous version`
	eventually(t, "the broken save is warned about", func() bool { return warns.has(want) })
	p, ok := reg.Current().Get("reviewer")
	if !ok || p.Timeout != 60*time.Second {
		t.Fatalf("the previous version was not kept: %+v, %v", p, ok)
	}
	if problems := reg.Current().Problems(); len(problems) != 1 || problems[0].Line != 4 {
		t.Errorf("problems %v, want the broken line", problems)
	}

	// An unrelated change reloads but does not repeat the warning.
	writeFile(t, filepath.Join(l.inkHome, "agents", "other.md"), profileText("other", "x"))
	eventually(t, "the unrelated file loads", func() bool { return description(reg, "other") == "x" })
	count := 0
	for _, m := range warns.all() {
		if m == want {
			count++
		}
	}
	if count != 1 {
		t.Errorf("warned %d times about the same broken file, want once: %q", count, warns.all())
	}

	writeFile(t, path, "---\nname: reviewer\ndescription: fixed\ntimeout: 90\n---\n")
	eventually(t, "the fixed file is used", func() bool { return description(reg, "reviewer") == "fixed" })
	if len(reg.Current().Problems()) != 0 {
		t.Errorf("problems after the fix: %v", reg.Current().Problems())
	}
}

func TestWatchWarnsAboutFilesBrokenFromTheStart(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	path := filepath.Join(l.inkHome, "agents", "bad.md")
	writeFile(t, path, "no frontmatter here\n")
	reg, warns := startWatch(t, LoadOptions{InkHome: l.inkHome})
	want := "agent file " + path + ":1: no frontmatter: the file must start with a line '---'; skipped"
	if !warns.has(want) {
		t.Errorf("warnings %q, want %q", warns.all(), want)
	}
	if len(reg.Current().All()) != 0 {
		t.Errorf("a broken file loaded")
	}
}

func TestWatchPicksUpDirectoriesCreatedLater(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	// Neither INK_HOME nor ~/.claude exists yet.
	reg, _ := startWatch(t, LoadOptions{Home: l.home, InkHome: l.inkHome, ProjectRoot: l.home})
	if len(reg.Current().All()) != 0 {
		t.Fatalf("profiles before any directory exists")
	}

	writeFile(t, filepath.Join(l.home, ".claude", "agents", "a.md"), profileText("a", "in a new ~/.claude/agents"))
	eventually(t, "a profile in a newly created directory tree loads", func() bool { return description(reg, "a") == "in a new ~/.claude/agents" })

	writeFile(t, filepath.Join(l.inkHome, "agents", "b.md"), profileText("b", "in a new INK_HOME"))
	eventually(t, "a profile under a newly created INK_HOME loads", func() bool { return description(reg, "b") == "in a new INK_HOME" })

	// Later edits in those directories are watched too.
	writeFile(t, filepath.Join(l.home, ".claude", "agents", "a.md"), profileText("a", "edited"))
	eventually(t, "an edit in the new directory is seen", func() bool { return description(reg, "a") == "edited" })

	// Removing the directory drops its profiles; making it again brings them back.
	if err := os.RemoveAll(filepath.Join(l.home, ".claude")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a removed directory drops its profiles", func() bool { return description(reg, "a") == "<missing>" })
	writeFile(t, filepath.Join(l.home, ".claude", "agents", "a.md"), profileText("a", "back"))
	eventually(t, "a re-created directory loads again", func() bool { return description(reg, "a") == "back" })
}

func TestWatchReloadsWhenTheProjectBecomesTrusted(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.project, ".ink", "agents", "p.md"), profileText("p", "project agent"))
	// INK_HOME does not exist yet: `ink trust` creates it and trust.json at once.
	reg, warns := startWatch(t, l.options(t, false))
	if _, ok := reg.Current().Get("p"); ok {
		t.Fatalf("an untrusted project loaded")
	}
	if !warns.has(reg.Current().UntrustedMessage()) {
		t.Errorf("no untrusted warning in %q", warns.all())
	}

	// `ink trust` in another process writes trust.json.
	other, err := LoadTrust(l.inkHome)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Add(l.project); err != nil {
		t.Fatal(err)
	}
	eventually(t, "trusting the project loads its agents", func() bool { return description(reg, "p") == "project agent" })

	// A corrupt trust.json is warned about and the last good list stays.
	trustPath := filepath.Join(l.inkHome, "trust.json")
	writeFile(t, trustPath, "{broken")
	eventually(t, "the corrupt trust list is warned about", func() bool {
		for _, m := range warns.all() {
			if strings.Contains(m, trustPath+" is not valid JSON") && strings.HasSuffix(m, "; keeping the previous trust list") {
				return true
			}
		}
		return false
	})
	if description(reg, "p") != "project agent" {
		t.Errorf("a corrupt trust.json unloaded the trusted project's agents")
	}
}

func TestWatchStopsWithItsContext(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	writeFile(t, filepath.Join(l.inkHome, "agents", "a.md"), profileText("a", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	reg, err := Watch(ctx, LoadOptions{InkHome: l.inkHome}, nil, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cancel()
	select {
	case <-reg.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the watcher did not stop within 2 s")
	}
	if description(reg, "a") != "x" {
		t.Errorf("Current after stop lost the last set")
	}
}

// TestWatchSeesSubdirectories: files in subdirectories (and in a directory
// reached through a symbolic link) are watched, a subdirectory created
// later is picked up, and an edit of models.yaml changes how aliases
// resolve.
func TestWatchSeesSubdirectories(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.home, ".claude", "agents")
	deep := filepath.Join(dir, "collection", "engineering", "reviewer.md")
	writeFile(t, deep, profileText("reviewer", "v1"))
	linked := filepath.Join(filepath.Dir(l.home), "elsewhere", "agents")
	writeFile(t, filepath.Join(linked, "linked.md"), profileText("linked", "v1"))
	symlink(t, linked, filepath.Join(dir, "linked"))
	reg, _ := startWatch(t, LoadOptions{Home: l.home, InkHome: l.inkHome})
	if description(reg, "reviewer") != "v1" || description(reg, "linked") != "v1" {
		t.Fatalf("initial load: %v", reg.Current().Names())
	}

	writeFile(t, deep, profileText("reviewer", "v2"))
	eventually(t, "an edit two directories down is seen", func() bool { return description(reg, "reviewer") == "v2" })
	writeFile(t, filepath.Join(linked, "linked.md"), profileText("linked", "v2"))
	eventually(t, "an edit behind a symbolic link is seen", func() bool { return description(reg, "linked") == "v2" })

	writeFile(t, filepath.Join(dir, "new-collection", "ops", "deployer.md"), profileText("deployer", "new"))
	eventually(t, "a subdirectory created later is loaded", func() bool { return description(reg, "deployer") == "new" })
	writeFile(t, filepath.Join(dir, "new-collection", "ops", "deployer.md"), profileText("deployer", "edited"))
	eventually(t, "and watched", func() bool { return description(reg, "deployer") == "edited" })

	if err := os.RemoveAll(filepath.Join(dir, "collection")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a removed subdirectory drops its profiles", func() bool { return description(reg, "reviewer") == "<missing>" })

	resolve := func() string {
		b, _, err := reg.Current().ResolveModel(Profile{Name: "x", Model: "sonnet"}, model.Binding{Provider: "openai", Model: "gpt-5"})
		if err != nil {
			return "error: " + err.Error()
		}
		return b.String()
	}
	if got := resolve(); got != "openai/gpt-5" {
		t.Fatalf("sonnet with no mapping resolved to %s", got)
	}
	writeFile(t, filepath.Join(l.inkHome, ModelAliasesFile), "aliases: {sonnet: ollama/qwen3}\n")
	eventually(t, "a new models.yaml is read", func() bool { return resolve() == "ollama/qwen3" })
}

// TestWatchStop: Stop returns once the watches are gone, without waiting
// for the watcher's teardown; the last set stays current, later edits are
// no longer seen, and Stop may be called again, also after the context
// ended.
func TestWatchStop(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	file := filepath.Join(l.inkHome, "agents", "a.md")
	writeFile(t, file, profileText("a", "x"))
	reg, _ := startWatch(t, LoadOptions{InkHome: l.inkHome})
	reg.Stop()
	select {
	case <-reg.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not finish stopping within 5 s of Stop")
	}
	// The watcher's goroutine has ended: nothing reloads any more.
	writeFile(t, file, profileText("a", "y"))
	if got := description(reg, "a"); got != "x" {
		t.Fatalf("after Stop the profile reads %q, want the last set's %q", got, "x")
	}
	reg.Stop()
}

// TestWatchMarksProfilesWrittenDuringTheRun: the profiles of the first
// load are the ones the user started with; a file added or changed later
// (an agent may have written it) is marked Reloaded, and one changed
// back to its first content is not.
func TestWatchMarksProfilesWrittenDuringTheRun(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	dir := filepath.Join(l.inkHome, "agents")
	writeFile(t, filepath.Join(dir, "reviewer.md"), profileText("reviewer", "v1"))
	reg, _ := startWatch(t, LoadOptions{Home: l.home, InkHome: l.inkHome})
	reloaded := func(name string) bool {
		p, ok := reg.Current().Get(name)
		return ok && p.Reloaded
	}
	if p, ok := reg.Current().Get("reviewer"); !ok || p.Reloaded {
		t.Fatalf("a profile of the first load is marked reloaded (or missing): %+v", p)
	}
	writeFile(t, filepath.Join(dir, "pwn.md"), "---\nname: pwn\ndescription: d\nsandbox: danger-full-access\nnetwork: true\n---\nbody\n")
	eventually(t, "the new profile is loaded as reloaded", func() bool { return reloaded("pwn") })
	if p, _ := reg.Current().Get("pwn"); p.Sandbox != "danger-full-access" || p.Network == nil || !*p.Network {
		t.Errorf("pwn = sandbox %q, network %v", p.Sandbox, p.Network)
	}
	if reloaded("reviewer") {
		t.Error("the untouched profile was marked reloaded")
	}
	writeFile(t, filepath.Join(dir, "reviewer.md"), profileText("reviewer", "v2"))
	eventually(t, "the edited profile is marked reloaded", func() bool { return description(reg, "reviewer") == "v2" && reloaded("reviewer") })
	writeFile(t, filepath.Join(dir, "reviewer.md"), profileText("reviewer", "v1"))
	eventually(t, "the profile back at its first content is trusted again", func() bool {
		return description(reg, "reviewer") == "v1" && !reloaded("reviewer")
	})
}
