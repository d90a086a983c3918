package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inkdev/ink/session"
)

// homesChildren is how many children each run starts on the shared file.
const homesChildren = 6

// homesScript is the script of run `name`: the main agent starts
// homesChildren children at once; child i reads shared.txt and replaces
// its own line "slot <name><i>: todo" with "...: done", reading again and
// retrying whenever the edit is refused with "re-read it first".
func homesScript(name string) string {
	var b strings.Builder
	b.WriteString("rules:\n  - when: {depth: 0, turn: 1}\n    reply:\n      calls:\n")
	for i := 1; i <= homesChildren; i++ {
		fmt.Fprintf(&b, "        - {tool: task, args: {prompt: \"slot %s%d\"}}\n", name, i)
	}
	b.WriteString("  - when: {depth: 0, tool: task}\n    reply: {text: \"run " + name + " done\"}\n")
	for i := 1; i <= homesChildren; i++ {
		slot := fmt.Sprintf("slot %s%d", name, i)
		fmt.Fprintf(&b, `  - when: {depth: 1, user: "^%[1]s$", tool: edit, result: "re-read it first"}
    reply: {calls: [{tool: read, args: {path: shared.txt}}]}
  - when: {depth: 1, user: "^%[1]s$", tool: edit}
    reply: {text: "%[1]s handled"}
  - when: {depth: 1, user: "^%[1]s$", tool: read}
    reply: {calls: [{tool: edit, args: {path: shared.txt, oldText: "%[1]s: todo", newText: "%[1]s: done"}}]}
  - when: {depth: 1, user: "^%[1]s$"}
    reply: {calls: [{tool: read, args: {path: shared.txt}}]}
`, slot)
	}
	return b.String()
}

// editOutcome counts what the children of one run were told about their
// edits of shared.txt.
type editOutcome struct {
	applied []string // slots whose edit was reported applied
	retries int      // edits refused with "re-read it first"
	other   []string // any other edit failure
}

// childEdits reads the children's transcripts of the main session at path.
func childEdits(t *testing.T, mainPath string) editOutcome {
	t.Helper()
	tr, err := session.Open(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	var out editOutcome
	for _, m := range tr.Messages {
		if len(m.TaskRecord) == 0 {
			continue
		}
		rec, err := session.ParseTaskRecord(m.TaskRecord)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Transcript == nil || !rec.Transcript.Present {
			t.Fatalf("child without a transcript: %+v", rec)
		}
		ctr, err := session.Open(rec.Transcript.Path)
		if err != nil {
			t.Fatal(err)
		}
		prompt := ""
		for _, cm := range ctr.Messages {
			if prompt == "" && cm.Text() != "" {
				prompt = cm.Text()
			}
			for _, r := range cm.Results {
				switch {
				case r.ToolName != "edit":
				case !r.IsError && strings.HasPrefix(r.Content, "edited shared.txt: "):
					out.applied = append(out.applied, prompt)
				case r.IsError && strings.Contains(r.Content, "re-read it first"):
					out.retries++
				default:
					out.other = append(out.other, r.Content)
				}
			}
		}
	}
	return out
}

// TestTwoHomesLoseNoEdit: two `ink run`s with different INK_HOMEs on one
// checkout, six children each editing one shared file at once and
// retrying on "re-read it first", lose no update over repeated trials:
// every edit a child was told was applied is in the final file. Both
// runs take their edit locks in the one host-wide place (here the
// XDG_RUNTIME_DIR both share), not under their homes.
func TestTwoHomesLoseNoEdit(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	work := filepath.Join(base, "checkout")
	runtime := filepath.Join(base, "runtime")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{work, runtime, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"A", "B"}
	runs := make([]*env, len(names))
	for i, name := range names {
		e := newEnv(t)
		e.dir = work
		e.vars = append(e.vars, "XDG_RUNTIME_DIR="+runtime, "TMPDIR="+tmp)
		runs[i] = e
		if err := os.WriteFile(filepath.Join(base, name+".yaml"), []byte(homesScript(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(work, "shared.txt")
	var initial strings.Builder
	initial.WriteString("# one line per child; each child marks its own\n")
	for _, name := range names {
		for i := 1; i <= homesChildren; i++ {
			fmt.Fprintf(&initial, "slot %s%d: todo\n", name, i)
		}
	}

	const trials = 5
	retries := 0
	for trial := 1; trial <= trials; trial++ {
		if err := os.WriteFile(shared, []byte(initial.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		procs := make([]*proc, len(runs))
		var wg sync.WaitGroup
		for i, e := range runs {
			wg.Go(func() {
				procs[i] = e.start("run", "--json", "--model", "script:"+filepath.Join(base, names[i]+".yaml"), "mark the slots")
			})
		}
		wg.Wait()
		var applied []string
		for i, p := range procs {
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("trial %d: run %s exited %d\nstderr:\n%s", trial, names[i], code, p.stderr.String())
			}
			runEnd := ofType(events(t, p.stdout.Bytes()), "run.end")
			if len(runEnd) != 1 || runEnd[0]["status"] != "completed" {
				t.Fatalf("trial %d: run %s ended %v", trial, names[i], runEnd)
			}
			out := childEdits(t, runEnd[0]["transcript"].(string))
			if len(out.other) > 0 {
				t.Fatalf("trial %d: run %s: edits failed for another reason: %q", trial, names[i], out.other)
			}
			if len(out.applied) != homesChildren {
				t.Fatalf("trial %d: run %s: %d edits reported applied (%v), want one per child", trial, names[i], len(out.applied), out.applied)
			}
			applied = append(applied, out.applied...)
			retries += out.retries
		}
		data, err := os.ReadFile(shared)
		if err != nil {
			t.Fatal(err)
		}
		final := string(data)
		for _, slot := range applied {
			if !strings.Contains(final, slot+": done\n") {
				t.Errorf("trial %d: the child of %q was told its edit was applied, but the file lacks it:\n%s", trial, slot, final)
			}
		}
		if strings.Contains(final, "todo") {
			t.Errorf("trial %d: lines still marked todo:\n%s", trial, final)
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d trials, %d edits, %d retries after re-read refusals", trials, trials*len(names)*homesChildren, retries)

	locks, _ := filepath.Glob(filepath.Join(runtime, "ink", "locks", "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("want the shared file's one lock under XDG_RUNTIME_DIR/ink/locks, found %v", locks)
	}
	for i, e := range runs {
		if _, err := os.Stat(filepath.Join(e.home, "locks")); err == nil {
			t.Fatalf("run %s kept edit locks under its own INK_HOME", names[i])
		}
	}
}
