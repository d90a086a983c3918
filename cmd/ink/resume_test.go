package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/lease"
	"github.com/inkdev/ink/session"
)

// tree is every file, symlink and directory under some roots: path ->
// content, "symlink -> target" or "dir".
type tree map[string]string

// snapshot records every file, symlink and directory under roots.
func snapshot(t *testing.T, roots ...string) tree {
	t.Helper()
	out := tree{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			switch {
			case d.Type()&fs.ModeSocket != 0:
				out[p] = "socket"
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				out[p] = "symlink -> " + target
			case d.IsDir():
				out[p] = "dir"
			default:
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				out[p] = string(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sameTree fails unless after holds exactly before, byte for byte.
func sameTree(t *testing.T, what string, before, after tree) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: %s was removed", what, p)
		case a != b:
			t.Errorf("%s: %s changed:\nbefore: %q\nafter:  %q", what, p, clipForLog(b), clipForLog(a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s was created", what, p)
		}
	}
}

func clipForLog(s string) string {
	if len(s) > 400 {
		return s[:200] + "…" + s[len(s)-200:]
	}
	return s
}

// shellRecords returns the TaskRecords of every shell session of e, oldest
// first within a session.
func shellRecords(t *testing.T, e *env, sessionPath string) []session.TaskRecord {
	t.Helper()
	tr, err := session.Open(sessionPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.TaskRecord
	for _, m := range tr.Messages {
		if len(m.TaskRecord) > 0 {
			rec, err := session.ParseTaskRecord(m.TaskRecord)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
	}
	return out
}

// launchChild runs `ink task` to the end and returns the child's id, its
// transcript and its parent session's transcript.
func launchChild(t *testing.T, e *env, wantCode int, args ...string) (id, path, parent string) {
	t.Helper()
	p, code := e.run(append([]string{"task", "--json"}, args...)...)
	if code != wantCode {
		t.Fatalf("ink task exited %d, want %d\nstderr:\n%s", code, wantCode, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	ends := ofType(evs, "task.end")
	if len(ends) != 1 {
		t.Fatalf("want one task.end, got %v", ends)
	}
	start := ofType(evs, "run.start")[0]
	return ends[0]["childId"].(string), ends[0]["transcript"].(string), start["transcript"].(string)
}

// resumeOut runs `ink task --resume` and returns its exit code and stderr.
func (e *env) resumeOut(args ...string) (int, string, string) {
	e.t.Helper()
	p, code := e.run(append([]string{"task"}, args...)...)
	return code, p.stdout.String(), p.stderr.String()
}

// TestResumeRefusals: every refusal code of a resume is provoked for real,
// its message is checked, the exit code is 3 (2 for a malformed id), and
// no file under INK_HOME or the project changed.
func TestResumeRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proj := e.dir
	agentsDir := filepath.Join(e.home, "agents")
	if err := os.MkdirAll(agentsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(agentsDir, "scout.md")
	const scout = "---\nname: scout\ndescription: looks around\ntools: read, grep, ls\n---\nYou look around and report.\n"
	if err := os.WriteFile(profile, []byte(scout), 0o644); err != nil {
		t.Fatal(err)
	}
	const rules = "rules:\n  - reply: {text: \"looked around\"}\n"
	script := e.write("s.yaml", rules)
	other := e.write("other.yaml", rules)
	id, childPath, parentPath := launchChild(t, e, 0, "--agent", "scout", "--model", "script:"+script, "look around")
	parentID := strings.TrimSuffix(filepath.Base(parentPath), ".jsonl")
	children := session.ChildrenDir(parentPath)

	// refused runs ink with args, checks exit code want, that stderr holds
	// every pattern and that no file changed.
	refused := func(name string, want int, args []string, patterns ...string) {
		t.Helper()
		before := snapshot(t, e.home, filepath.Dir(proj))
		code, stdout, stderr := e.resumeOut(args...)
		if code != want {
			t.Errorf("%s: exit %d, want %d\nstderr:\n%s", name, code, want, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: a refusal printed on stdout: %q", name, stdout)
		}
		for _, p := range patterns {
			if !regexp.MustCompile(p).MatchString(stderr) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, p, stderr)
			}
		}
		sameTree(t, name, before, snapshot(t, e.home, filepath.Dir(proj)))
	}
	model := "script:" + script
	end := "Start a new task instead."

	// Ids outside the alphabet never reach the file system.
	refused("bad id", 2, []string{"--model", model, "--resume", "../" + id, "x"}, `not a child session id`)
	refused("slash id", 2, []string{"--model", model, "--resume", "a/b", "x"}, `not a child session id`)

	// not-found is bad input (exit 2), with this parent's children and
	// their last status, with or without --model.
	for _, m := range [][]string{{"--model", model}, nil} {
		refused("not-found with parent", 2, append(m, "--parent", parentID, "--resume", "nosuchchild", "x"),
			`^ink: --resume nosuchchild: not-found: `, regexp.QuoteMeta(id+" (completed)"))
		refused("not-found", 2, append(m, "--resume", "nosuchchild", "x"),
			`^ink: --resume nosuchchild: not-found: `, regexp.QuoteMeta(id+" (completed"))
	}
	refused("unknown parent", 2, []string{"--parent", "nosuchsession", "--resume", id, "x"},
		`^ink: --parent nosuchsession: no such session; list the sessions of this directory with `+"`ink sessions ls`")

	// Every drift is collected in one refusal: a child with no profile
	// gets the task tool under --max-depth 2, and another script is
	// another model.
	plain, _, _ := launchChild(t, e, 0, "--model", model, "plain work")
	refused("model and tools drift", 3, []string{"--model", "script:" + other, "--max-depth", "2", "--resume", plain, "x"},
		`model-drift: launched on script:`+regexp.QuoteMeta(script)+`, would now run on script:`+regexp.QuoteMeta(other)+
			`; resume it on the model it was launched on \(--model script:`+regexp.QuoteMeta(script)+`\)`,
		`tools-drift: launched with tools \[bash, edit, find, grep, ls, read, write\], would now get \[bash, edit, find, grep, ls, read, task, write\]`,
		regexp.QuoteMeta(end))
	refused("model drift", 3, []string{"--model", "script:" + other, "--resume", id, "x"}, `model-drift:`, regexp.QuoteMeta(end))

	// A changed profile body changes the agent and the system prompt.
	if err := os.WriteFile(profile, []byte(strings.Replace(scout, "report.", "report twice.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("agent drift", 3, []string{"--model", model, "--resume", id, "x"},
		`agent-drift: agent "scout" changed`, `system-drift:`, regexp.QuoteMeta(end))
	if err := os.Remove(profile); err != nil {
		t.Fatal(err)
	}
	refused("agent missing", 3, []string{"--model", model, "--resume", id, "x"},
		`agent-missing: agent "scout" is no longer defined`, regexp.QuoteMeta(end))
	if err := os.WriteFile(profile, []byte(scout), 0o644); err != nil {
		t.Fatal(err)
	}

	// cwd: another directory, moved, deleted, replaced by a file. ink runs
	// from elsewhere meanwhile.
	elsewhere := filepath.Join(filepath.Dir(proj), "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	e.dir = elsewhere
	refused("cwd drift", 3, []string{"--model", model, "--cwd", elsewhere, "--parent", parentID, "--resume", id, "x"},
		`cwd-drift: launched in `+regexp.QuoteMeta(proj)+`, the parent now works in `+regexp.QuoteMeta(elsewhere)+`; run ink from `+regexp.QuoteMeta(proj))
	moved := filepath.Join(filepath.Dir(proj), "moved")
	if err := os.Rename(proj, moved); err != nil {
		t.Fatal(err)
	}
	refused("cwd moved", 3, []string{"--model", "script:" + filepath.Join(moved, "s.yaml"), "--cwd", moved, "--parent", parentID, "--resume", id, "x"},
		`cwd-drift: launched in `+regexp.QuoteMeta(proj), `cwd-missing: the child's directory `+regexp.QuoteMeta(proj)+` is gone`)
	refused("cwd deleted", 3, []string{"--model", "script:" + filepath.Join(moved, "s.yaml"), "--cwd", elsewhere, "--parent", parentID, "--resume", id, "x"},
		`cwd-missing: the child's directory `+regexp.QuoteMeta(proj)+` is gone`)
	if err := os.WriteFile(proj, []byte("a file now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("cwd replaced by a file", 3, []string{"--model", "script:" + filepath.Join(moved, "s.yaml"), "--cwd", elsewhere, "--parent", parentID, "--resume", id, "x"},
		`cwd-not-directory: the child's directory `+regexp.QuoteMeta(proj)+` is no longer a directory`)
	if err := os.Remove(proj); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, proj); err != nil {
		t.Fatal(err)
	}
	e.dir = proj

	// ambiguous: a copy of the transcript claims the same id.
	orig, err := os.ReadFile(childPath)
	if err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(children, "copy.jsonl")
	if err := os.WriteFile(dup, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	refused("ambiguous", 3, []string{"--model", model, "--resume", id, "x"}, `ambiguous: 2 transcripts claim this id`, regexp.QuoteMeta(end))
	os.Remove(dup)

	// symlink: the child's file is a link to its real transcript.
	real := filepath.Join(filepath.Dir(proj), "real.jsonl")
	if err := os.Rename(childPath, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, childPath); err != nil {
		t.Fatal(err)
	}
	refused("symlink", 3, []string{"--model", model, "--parent", parentID, "--resume", id, "x"}, `symlink`, regexp.QuoteMeta(end))
	os.Remove(childPath)
	if err := os.Rename(real, childPath); err != nil {
		t.Fatal(err)
	}

	// Hand-made transcripts in the children directory.
	hdr := func(m map[string]any) string {
		m["type"], m["version"], m["createdAt"], m["cwd"] = "session", 1, "2026-01-02T03:04:05Z", proj
		b, _ := json.Marshal(m)
		return string(b) + "\n"
	}
	var launch map[string]any
	{
		var h map[string]any
		json.Unmarshal(bytes.SplitN(orig, []byte("\n"), 2)[0], &h)
		launch = h["launch"].(map[string]any)
	}
	put := func(name, body string) string {
		p := filepath.Join(children, name+".jsonl")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := put("malformedchild", "{\"type\":\"session\",\"id\":\"malformedchild\",\n")
	refused("malformed", 3, []string{"--model", model, "--parent", parentID, "--resume", "malformedchild", "x"}, `malformed:`, regexp.QuoteMeta(end))
	os.Remove(p)
	p = put("nolaunch", hdr(map[string]any{"id": "nolaunch", "parent": parentID}))
	refused("missing-launch", 3, []string{"--model", model, "--resume", "nolaunch", "x"}, `missing-launch: its transcript .* has no launch record`, regexp.QuoteMeta(end))
	os.Remove(p)
	bad := map[string]any{}
	for k, v := range launch {
		bad[k] = v
	}
	bad["childId"] = "someoneelse"
	p = put("badlaunch", hdr(map[string]any{"id": "badlaunch", "parent": parentID, "launch": bad}))
	refused("invalid-launch", 3, []string{"--model", model, "--resume", "badlaunch", "x"}, `invalid-launch:`, regexp.QuoteMeta(end))
	os.Remove(p)

	// not-owned: another session's children directory holds this child.
	_, _, parent2 := launchChild(t, e, 0, "--model", model, "another task")
	parent2ID := strings.TrimSuffix(filepath.Base(parent2), ".jsonl")
	stolen := filepath.Join(session.ChildrenDir(parent2), id+".jsonl")
	if err := os.WriteFile(stolen, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	refused("not-owned", 3, []string{"--model", model, "--parent", parent2ID, "--resume", id, "x"},
		`not-owned: it belongs to session "`+parentID+`", not to this session "`+parent2ID+`"`, regexp.QuoteMeta(end))
	os.Remove(stolen)

	// version-drift: the same child resumed by another build of ink.
	other2 := filepath.Join(t.TempDir(), "ink")
	build := exec.Command("go", "build", "-o", other2, "-ldflags", "-X github.com/inkdev/ink/version.Ink=9.9.9", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build another ink: %v\n%s", err, out)
	}
	before := snapshot(t, e.home, filepath.Dir(proj))
	cmd := exec.Command(other2, "task", "--model", model, "--resume", id, "x")
	cmd.Dir, cmd.Env = proj, e.vars
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("version drift: %v, want exit 3\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "version-drift: launched by ink "+launch["inkVersion"].(string)+", this is ink 9.9.9") {
		t.Errorf("version drift: stderr:\n%s", stderr.String())
	}
	sameTree(t, "version drift", before, snapshot(t, e.home, filepath.Dir(proj)))

	// After all that, the untouched child still resumes.
	code, stdout, stderrS := e.resumeOut("--model", model, "--resume", id, "look again")
	if code != 0 || !strings.HasPrefix(stdout, "looked around\n") || !strings.Contains(stdout, "(child lifetime: 2 attempts") {
		t.Fatalf("resume after the refusals: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderrS)
	}
}

// TestResumeNoRecord: a child whose supervisor and worker were killed
// together, and whose lease record names a holder on another host, may
// still run there: resume refuses it no-record and changes nothing. One
// whose transcript holds only its header has nothing to continue.
func TestResumeNoRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"late\", delay: 60s}\n")
	p := e.start("task", "--json", "--model", "script:"+script, "slow work")
	st := waitForEvent(t, p, "task.start")
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "turn.start" && m["agent"] == "shell/1" })
	childPid := int(st["pid"].(float64))
	id := st["childId"].(string)
	// Stop the child first, so that it can record nothing between the two
	// kills, whatever the machine's load.
	syscall.Kill(childPid, syscall.SIGSTOP)
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	syscall.Kill(childPid, syscall.SIGKILL)
	p.wait(t, time.Minute)
	for deadline := time.Now().Add(10 * time.Second); alive(childPid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	list, _ := session.ListSessions(e.home, e.dir)
	child := session.ChildPath(list[0].Path, id)
	rec := `{"pid":4242,"host":"another-host","attemptId":"elsewhere","epoch":9}` + "\n"
	if err := os.WriteFile(lease.MetaPath(child), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.home, e.dir)
	code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
	if code != 3 || !strings.Contains(stderr, "no-record: no settled record of this child") || !strings.HasSuffix(strings.TrimSpace(stderr), "Start a new task instead.") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	sameTree(t, "no-record", before, snapshot(t, e.home, e.dir))

	// Only the header survives: nothing to continue.
	data, _ := os.ReadFile(child)
	if err := os.WriteFile(child, data[:bytes.IndexByte(data, '\n')+1], 0o600); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, e.home, e.dir)
	code, _, stderr = e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
	if code != 3 || !strings.Contains(stderr, "empty-transcript:") || !strings.Contains(stderr, "no-record:") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	sameTree(t, "empty-transcript", before, snapshot(t, e.home, e.dir))
}

// TestResumeAfterEveryProcessKilled: every process of an `ink task` —
// supervisor, worker and the bash its child runs — SIGKILLed at once
// mid-bash, as an OOM-killed cgroup or `docker kill` does, leaves a child
// whose attempt never recorded its end. Its lease is free and its holder
// gone, so `ink task --resume` continues it: the lost attempt's end is
// recorded as interrupted / host lost (machine restarted when its lease
// record names another boot of this machine, as after a crash of the
// machine), the bash call gets the outcome-unknown result and is not run
// again, and the new attempt runs under a larger epoch.
func TestResumeAfterEveryProcessKilled(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"host lost", "machine restarted"} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			resumeAfterEveryProcessKilled(t, reason)
		})
	}
}

func resumeAfterEveryProcessKilled(t *testing.T, reason string) {
	e := newEnv(t)
	count, pidFile := filepath.Join(e.dir, "count"), filepath.Join(e.dir, "bash.pid")
	script := e.write("s.yaml", `rules:
  - when: {user: "go on"}
    reply: {text: "resumed and finished"}
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo ran >> `+count+`; echo $$ > `+pidFile+`; sleep 300"}}]
  - reply: {text: "the first attempt finished"}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "run the slow command")
	st := waitForEvent(t, p, "task.start")
	id, workerPid := st["childId"].(string), int(st["pid"].(float64))
	bashPid := waitBashPid(t, pidFile)
	// At once: stopped first, so that none of them can act on another's
	// death, then killed.
	all := []int{p.cmd.Process.Pid, workerPid, bashPid}
	for _, pid := range all {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range all {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	p.wait(t, time.Minute)
	waitDead(t, all[1:])

	list, _ := session.ListSessions(e.home, e.dir)
	if len(list) != 1 {
		t.Fatalf("%d shell sessions, want 1", len(list))
	}
	child := session.ChildPath(list[0].Path, id)
	lost, err := session.Open(child)
	if err != nil {
		t.Fatal(err)
	}
	var firstEpoch int64
	for _, a := range lost.Attempts() {
		if a.Phase == session.PhaseEnd {
			t.Fatalf("the killed attempt recorded its end %+v; nothing was killed at once", a)
		}
		firstEpoch = a.Epoch
	}
	if reason == "machine restarted" {
		// What a crash of the machine leaves: the holder's record names
		// the boot it ran in, which is over.
		raw, err := os.ReadFile(lease.MetaPath(child))
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil || rec["bootId"] == nil {
			t.Fatalf("lease record %s: %v", raw, err)
		}
		rec["bootId"] = "an-earlier-boot"
		raw, _ = json.Marshal(rec)
		if err := os.WriteFile(lease.MetaPath(child), append(raw, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
	if code != 0 || !strings.HasPrefix(stdout, "resumed and finished\n") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the recorded bash call ran again: count file %q", data)
	}
	tr, err := session.Open(child)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	var lastEpoch int64
	for _, a := range tr.Attempts() {
		phases = append(phases, a.Phase+":"+string(a.Status)+":"+a.Reason)
		lastEpoch = a.Epoch
	}
	if got := strings.Join(phases, ","); got != "start::,end:interrupted:"+reason+",start::,end:completed:" {
		t.Fatalf("attempt entries %s", got)
	}
	if lastEpoch <= firstEpoch {
		t.Fatalf("the resume ran under epoch %d, not above the lost attempt's %d", lastEpoch, firstEpoch)
	}
	repaired := false
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			repaired = repaired || (r.ToolName == "bash" && r.IsError && strings.Contains(r.Content, "the outcome is unknown"))
		}
	}
	if !repaired {
		t.Fatal("the interrupted bash call was not answered as outcome unknown")
	}
}

// waitBashPid waits for the pid a scripted bash call writes to pidFile, and
// kills its process group when the test ends.
func waitBashPid(t *testing.T, pidFile string) int {
	t.Helper()
	bashPid := 0
	for deadline := time.Now().Add(30 * time.Second); bashPid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil {
			fmt.Sscan(strings.TrimSpace(string(data)), &bashPid)
		}
	}
	if bashPid == 0 {
		t.Fatal("the bash call never started")
	}
	t.Cleanup(func() { syscall.Kill(-bashPid, syscall.SIGKILL) })
	return bashPid
}

// TestResumeAfterSIGKILL: a child SIGKILLed during a slow bash call is
// resumed: the interrupted call gets the outcome-unknown result and is not
// run again, the new prompt runs, the transcript is one file with both
// attempts, and the second TaskRecord keeps the childId with a new attemptId.
func TestResumeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	count, pidFile := filepath.Join(e.dir, "count"), filepath.Join(e.dir, "bash.pid")
	script := e.write("s.yaml", `rules:
  - when: {user: "carry on"}
    reply: {text: "resumed and finished", usage: {input: 7, output: 3}}
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo ran >> `+count+`; echo $$ > `+pidFile+`; sleep 300"}}]
      usage: {input: 11, output: 4}
  - reply: {text: "the first attempt finished"}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "run the slow command")
	st := waitForEvent(t, p, "task.start")
	id, childPid := st["childId"].(string), int(st["pid"].(float64))
	bashPid := waitBashPid(t, pidFile)
	if err := syscall.Kill(childPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 1 {
		t.Fatalf("killed child: exit %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	for deadline := time.Now().Add(5 * time.Second); alive(bashPid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(bashPid) {
		t.Fatalf("the bash call (pid %d) outlived its killed worker", bashPid)
	}
	first := shellRecord(t, e)
	if first.Status != "crash" || !first.Launched || first.ChildID != id {
		t.Fatalf("first TaskRecord %+v", first)
	}

	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "carry on")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "resumed and finished\n") || strings.Contains(stdout, "first attempt") {
		t.Fatalf("resume result:\n%s", stdout)
	}
	if !strings.Contains(stdout, "(child lifetime: 2 attempts, ≥7 in / ≥3 out)") || !strings.Contains(stdout, "(child: 1 turn, 7 in / 3 out)") {
		t.Fatalf("resume result lacks this attempt's trailer or the lifetime line:\n%s", stdout)
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the recorded bash call ran again: count file %q", data)
	}

	// Two shell sessions, newest first: the resume's own, which records
	// the second attempt, and the one that launched and owns the child,
	// which the resume never wrote.
	list, _ := session.ListSessions(e.home, e.dir)
	if len(list) != 2 {
		t.Fatalf("want two shell sessions (the launch's and the resume's), got %d", len(list))
	}
	owner, resumer := list[1], list[0]
	children, _ := session.ListChildren(owner.Path)
	if len(children) != 1 || children[0].ID != id || children[0].Attempts != 2 || children[0].LastStatus != "completed" {
		t.Fatalf("children %+v, want one child with 2 attempts", children)
	}
	tr, err := session.Open(children[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range tr.Messages {
		r := string(m.Role)
		for _, res := range m.Results {
			if res.ToolName == "bash" {
				if !res.IsError || !strings.Contains(res.Content, "interrupted before a result was recorded — the outcome is unknown; check before relying on it") {
					t.Fatalf("bash result %+v", res)
				}
				r += "(unknown)"
			}
		}
		roles = append(roles, r)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,toolResult(unknown),user,assistant" {
		t.Fatalf("child history %s", got)
	}
	if kids, _ := session.ListChildren(resumer.Path); len(kids) != 0 {
		t.Fatalf("the resume's session owns children %+v", kids)
	}
	recs := append(shellRecords(t, e, owner.Path), shellRecords(t, e, resumer.Path)...)
	if len(recs) != 2 {
		t.Fatalf("want one TaskRecord in each session, got %d", len(recs))
	}
	if recs[1].ChildID != id || recs[1].AttemptID == recs[0].AttemptID || recs[1].Status != "completed" || !recs[1].Launched {
		t.Fatalf("second TaskRecord %+v (first %+v)", recs[1], recs[0])
	}
	var starts []string
	for _, a := range tr.Attempts() {
		if a.Phase == "start" {
			starts = append(starts, a.AttemptID)
		}
	}
	if len(starts) != 2 || starts[1] != recs[1].AttemptID {
		t.Fatalf("attempt starts %v, second TaskRecord %s", starts, recs[1].AttemptID)
	}
}

// TestResumeTornTail: a final line cut mid-JSON, inside a multibyte
// character, or missing only its newline is repaired byte-exactly on resume.
func TestResumeTornTail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {user: "again"}
    reply: {text: "zweite Antwort ✓"}
  - reply: {text: "première réponse ✓✓ fertig"}
`)
	cases := []struct {
		name string
		// cut returns the torn file and how many of its bytes must survive.
		cut func(data []byte) ([]byte, int)
	}{
		{"inside a multibyte character of the final line", func(data []byte) ([]byte, int) {
			ls := lastLineStart(data)
			i := ls + bytes.Index(data[ls:], []byte("✓"))
			return data[:i+1], ls
		}},
		{"mid-JSON of a message line", func(data []byte) ([]byte, int) {
			data = data[:lastLineStart(data)] // the attempt end never got written
			ls := lastLineStart(data)
			i := ls + bytes.Index(data[ls:], []byte("è"))
			return data[:i+1], ls
		}},
		{"a whole final line without its newline", func(data []byte) ([]byte, int) {
			return data[:len(data)-1], len(data) - 1
		}},
	}
	for _, c := range cases {
		id, path, _ := launchChild(t, e, 0, "--model", "script:"+script, "first")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		torn, keep := c.cut(data)
		if err := os.WriteFile(path, torn, 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "again")
		if code != 0 || !strings.HasPrefix(stdout, "zweite Antwort ✓\n") || strings.Contains(stdout, "première") {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", c.name, code, stdout, stderr)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after[:keep], data[:keep]) {
			t.Fatalf("%s: the bytes before the torn line changed", c.name)
		}
		if keep == len(data)-1 && after[keep] != '\n' {
			t.Fatalf("%s: the final line was not terminated", c.name)
		}
		tr, err := session.Open(path)
		if err != nil || tr.Torn != nil {
			t.Fatalf("%s: repaired transcript: %v %+v", c.name, err, tr.Torn)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(after, []byte("\n")), []byte("\n")) {
			if !json.Valid(line) {
				t.Fatalf("%s: line %d is not JSON after the repair: %q", c.name, i+1, line)
			}
		}
		if !bytes.Contains(after[keep:], []byte("zweite Antwort ✓")) {
			t.Fatalf("%s: the new attempt was not appended", c.name)
		}
	}
}

func lastLineStart(data []byte) int {
	return bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
}

// TestResumeAttemptScoped: a resumed attempt that fails or says nothing
// never reports the previous attempt's answer.
func TestResumeAttemptScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {user: "fail now"}
    reply: {error: "overloaded"}
  - when: {user: "say nothing"}
    reply: {text: ""}
  - reply: {text: "the old answer"}
`)
	id, _, _ := launchChild(t, e, 0, "--model", "script:"+script, "first")
	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "fail now")
	if code != 1 || strings.Contains(stdout+stderr, "the old answer") || !strings.Contains(stderr, "overloaded") {
		t.Fatalf("failed resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.resumeOut("--model", "script:"+script, "--resume", id, "say nothing")
	if code != 0 || strings.Contains(stdout+stderr, "the old answer") || !strings.HasPrefix(stdout, "(subagent completed with no output)") {
		t.Fatalf("silent resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "(child lifetime: 3 attempts") {
		t.Fatalf("no lifetime line:\n%s", stdout)
	}
}

// TestResumeStillRunning: resuming a child that still runs is refused with
// still-running (exit 3), naming the worker's pid, and changes no file.
func TestResumeStillRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply: {text: "", calls: [{tool: bash, args: {command: "sleep 300"}}]}
  - reply: {text: "done"}
`)
	p := e.start("task", "--json", "--model", "script:"+script, "keep running")
	st := waitForEvent(t, p, "task.start")
	waitFor(t, p, func(m map[string]any) bool { return m["type"] == "tool.start" })
	id, pid := st["childId"].(string), int(st["pid"].(float64))
	list, _ := session.ListSessions(e.home, e.dir)
	child := session.ChildPath(list[0].Path, id)
	before, _ := os.ReadFile(child)
	beforeParent, _ := os.ReadFile(list[0].Path)
	code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "x")
	if code != 3 || !strings.Contains(stderr, fmt.Sprintf("still-running: the child is still running (pid %d holds its lease)", pid)) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	after, _ := os.ReadFile(child)
	afterParent, _ := os.ReadFile(list[0].Path)
	if !bytes.Equal(before, after) || !bytes.Equal(beforeParent, afterParent) {
		t.Fatal("the refused resume changed a transcript")
	}
	if !alive(pid) {
		t.Fatal("the running child died")
	}
}

// TestResumeConcurrent: two `ink task --resume` of one child started
// together: exactly one runs, the other exits 3 naming the holder's pid.
func TestResumeConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {user: "race"}
    reply: {text: "I won", delay: 2s}
  - reply: {text: "first"}
`)
	id, path, _ := launchChild(t, e, 0, "--model", "script:"+script, "first")
	a := e.start("task", "--model", "script:"+script, "--resume", id, "race")
	b := e.start("task", "--model", "script:"+script, "--resume", id, "race")
	ca, cb := a.wait(t, 2*time.Minute), b.wait(t, 2*time.Minute)
	win, lose := a, b
	if ca != 0 {
		win, lose = b, a
		ca, cb = cb, ca
	}
	if ca != 0 || cb != 3 {
		t.Fatalf("exits %d and %d, want 0 and 3\nA:\n%s\nB:\n%s", ca, cb, a.stderr.String(), b.stderr.String())
	}
	if !strings.HasPrefix(win.stdout.String(), "I won\n") {
		t.Fatalf("winner stdout %q", win.stdout.String())
	}
	m := regexp.MustCompile(`still-running: .*pid (\d+)`).FindStringSubmatch(lose.stderr.String())
	if m == nil || !strings.Contains(lose.stderr.String(), "still-running") || !strings.Contains(lose.stderr.String(), "Start a new task instead.") {
		t.Fatalf("the loser does not say the child is busy, naming the holder pid:\n%s", lose.stderr.String())
	}
	// The holder is the winning ink or its worker.
	holders := []string{fmt.Sprint(win.cmd.Process.Pid)}
	if w := regexp.MustCompile(`started \(pid (\d+)`).FindStringSubmatch(win.stderr.String()); w != nil {
		holders = append(holders, w[1])
	}
	if !slices.Contains(holders, m[1]) {
		t.Fatalf("the loser names pid %s, the holders are %v:\n%s", m[1], holders, lose.stderr.String())
	}
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	starts, winners := 0, 0
	for _, at := range tr.Attempts() {
		if at.Phase == "start" {
			starts++
		}
	}
	for _, msg := range tr.Messages {
		if msg.Text() == "I won" {
			winners++
		}
	}
	if starts != 2 || winners != 1 {
		t.Fatalf("%d attempts and %d answers in the transcript, want 2 and 1", starts, winners)
	}
}

// lostChildScript is the script of a main agent that starts a child on a
// long job, whose first turn runs bash (COUNT and PIDFILE in it replaced
// by count and pidFile), and of the continued session ("go on") that
// resumes the child CHILDID (replaced by continueLostChild).
func lostChildScript(bash, count, pidFile string) string {
	const rules = `rules:
  - when: {depth: 0, turn: 1, user: "^start$"}
    reply:
      calls: [{tool: task, args: {prompt: "long job"}}]
  - when: {depth: 1, user: "finish the job"}
    reply: {text: "job finished after the resume"}
  - when: {depth: 1, user: "long job", turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "BASH"}}]
  - when: {depth: 0, tool: task, result: "job finished after the resume"}
    reply: {text: "all done"}
  - when: {depth: 0, user: "^go on$", turn: 1}
    reply:
      calls: [{tool: task, args: {resume: "CHILDID", prompt: "finish the job"}}]
`
	return strings.NewReplacer("COUNT", count, "PIDFILE", pidFile).Replace(strings.Replace(rules, "BASH", bash, 1))
}

// continueLostChild runs `ink run --session mainID "go on"` with body's
// script resuming childID, requires it to end "all done", and returns its
// events, the main transcript's path and the contents of its results.
func continueLostChild(t *testing.T, e *env, body, mainID, childID string) ([]map[string]any, string, []string) {
	t.Helper()
	script := e.write("s.yaml", strings.ReplaceAll(body, "CHILDID", childID))
	q, code := e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "go on")
	if code != 0 {
		t.Fatalf("continue: exit %d\nstderr:\n%s", code, q.stderr.String())
	}
	evs := events(t, q.stdout.Bytes())
	end := ofType(evs, "run.end")
	if len(end) != 1 || end[0]["text"] != "all done" {
		t.Fatalf("run.end %v\nstderr:\n%s", end, q.stderr.String())
	}
	mainPath := end[0]["transcript"].(string)
	tr, err := session.Open(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			results = append(results, r.Content)
		}
	}
	return evs, mainPath, results
}

// TestRunSessionAfterHostLoss: ink is SIGKILLed while a child runs a slow
// bash call; `ink run --session ID "go on"` continues the main session: the
// model sees the interrupted task call with the child's id, and its
// task({resume: id}) continues the child in the same transcript. Nothing is
// lost and nothing runs twice.
func TestRunSessionAfterHostLoss(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	count, pidFile := filepath.Join(e.dir, "count"), filepath.Join(e.dir, "sleep.pid")
	body := lostChildScript("echo ran >> COUNT; sleep 300 & echo $! > PIDFILE; wait", count, pidFile)
	script := e.write("s.yaml", body)
	p := e.start("run", "--json", "--model", "script:"+script, "start")
	mainID := waitForEvent(t, p, "run.start")["session"].(string)
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	st := waitForEvent(t, p, "task.start")
	childID, childPid := st["childId"].(string), int(st["pid"].(float64))
	sleepPid := 0
	for deadline := time.Now().Add(30 * time.Second); sleepPid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil {
			fmt.Sscan(strings.TrimSpace(string(data)), &sleepPid)
		}
	}
	if sleepPid == 0 {
		t.Fatal("the child's bash call never started")
	}
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)
	for _, pid := range []int{mainPid, childPid, sleepPid} {
		for deadline := time.Now().Add(10 * time.Second); alive(pid) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Fatalf("pid %d outlived its supervisor", pid)
		}
	}

	// The continued session's model resumes the child by its id, which the
	// answer to the interrupted call shows (checked below).
	evs, mainPath, results := continueLostChild(t, e, body, mainID, childID)
	if starts := ofType(evs, "task.start"); len(starts) != 1 || starts[0]["childId"] != childID || starts[0]["resumed"] != true {
		t.Fatalf("task.start %v, want the resumed child %s", starts, childID)
	}
	if len(results) != 2 {
		t.Fatalf("main results %q", results)
	}
	if !strings.Contains(results[0], "task interrupted after 1 turn: host lost") || !strings.Contains(results[0], "child session id: "+childID) {
		t.Fatalf("the interrupted task call was answered with %q", results[0])
	}
	if !strings.HasPrefix(results[1], "job finished after the resume\n") {
		t.Fatalf("the resumed task's result %q", results[1])
	}

	children, _ := session.ListChildren(mainPath)
	if len(children) != 1 || children[0].ID != childID || children[0].Attempts != 2 || children[0].LastStatus != "completed" {
		t.Fatalf("children %+v, want the one child with two attempts", children)
	}
	ctr, err := session.Open(children[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range ctr.Messages {
		for _, r := range m.Results {
			texts = append(texts, r.ToolName+": "+r.Content)
		}
		if m.Role == "assistant" && m.Text() != "" {
			texts = append(texts, "text: "+m.Text())
		}
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "bash: interrupted: the supervisor was lost") || texts[1] != "text: job finished after the resume" {
		t.Fatalf("child history %q", texts)
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the bash call ran again: %q", data)
	}
}

// TestRunSessionAnswersFromChild: the main agent's worker is SIGKILLed
// after one of its children finished but before the result was recorded;
// continuing the main session answers the dangling task call with that
// child's real final text and status, read from its own transcript.
func TestRunSessionAnswersFromChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1, user: "^start$"}
    reply:
      calls:
        - {tool: task, args: {prompt: "slow sibling"}}
        - {tool: task, args: {prompt: "quick child"}}
  - when: {depth: 1, user: "quick child"}
    reply: {text: "quick report ✓", usage: {input: 40, output: 4}}
  - when: {depth: 1, user: "slow sibling"}
    reply: {text: "slow report", delay: 60s}
  - when: {depth: 0, user: "go on"}
    reply: {text: "main goes on"}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "start")
	mainID := waitForEvent(t, p, "run.start")["session"].(string)
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	quick := waitFor(t, p, func(m map[string]any) bool { return m["type"] == "task.end" && m["status"] == "completed" })
	quickID := quick["childId"].(string)
	if err := syscall.Kill(mainPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 1 {
		t.Fatalf("killed main worker: exit %d\nstderr:\n%s", code, p.stderr.String())
	}
	list, _ := session.ListSessions(e.home, e.dir)
	before, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if scan := session.ScanPairs(before.Messages); len(scan.Missing) != 2 {
		t.Fatalf("want both task calls left open by the killed worker, got %+v", scan)
	}

	q, code := e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "go on")
	if code != 0 {
		t.Fatalf("continue: exit %d\nstderr:\n%s", code, q.stderr.String())
	}
	if end := ofType(events(t, q.stdout.Bytes()), "run.end"); end[0]["text"] != "main goes on" {
		t.Fatalf("run.end %v", end)
	}
	tr, err := session.Open(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range tr.Messages {
		if len(m.TaskRecord) == 0 {
			continue
		}
		rec, err := session.ParseTaskRecord(m.TaskRecord)
		if err != nil {
			t.Fatal(err)
		}
		if rec.ChildID != quickID {
			continue
		}
		found = true
		r := m.Results[0]
		if r.IsError || !strings.Contains(r.Content, "quick report ✓\n") || !strings.Contains(r.Content, "(child: 1 turn, 40 in / 4 out)") {
			t.Fatalf("the quick child's call was answered with %+v", r)
		}
		if rec.Status != "completed" || !rec.Launched || rec.Turns != 1 || rec.Usage == nil || rec.Usage.Input != 40 || !rec.TextPresent {
			t.Fatalf("recovered TaskRecord %+v", rec)
		}
	}
	if !found {
		t.Fatal("no TaskRecord for the quick child after the continuation")
	}
}

// TestSessionsShow: `ink sessions show ID` prints the messages, the
// attempts and the children with their last status; --json carries every
// message with its TaskRecord; a child id shows that child's transcript;
// a torn tail is reported, not hidden.
func TestSessionsShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "child A"}}, {tool: task, args: {prompt: "child B"}}]
  - when: {depth: 0, tool: task}
    reply: {text: "both reported"}
  - when: {user: "child A"}
    reply: {text: "report A"}
  - reply: {error: "overloaded"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "delegate the work")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	mainID := ofType(evs, "run.start")[0]["session"].(string)
	status := map[string]string{}
	for _, end := range ofType(evs, "task.end") {
		status[end["childId"].(string)] = end["status"].(string)
	}

	q, code := e.run("sessions", "show", mainID)
	out := q.stdout.String()
	if code != 0 {
		t.Fatalf("show: exit %d\n%s", code, q.stderr.String())
	}
	for _, want := range []string{"session " + mainID, "user: delegate the work", `→ task {"prompt":"child A"}`, "← task (ok) report A", "← task (error) task failed", "assistant: both reported", "ended completed (2 turns)", "children:"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	for id, st := range status {
		if !regexp.MustCompile(regexp.QuoteMeta(id) + ` +` + st + ` +1 attempt +agent `).MatchString(out) {
			t.Errorf("show lacks child %s with status %s:\n%s", id, st, out)
		}
	}

	q, code = e.run("sessions", "show", "--json", mainID)
	if code != 0 {
		t.Fatalf("show --json: exit %d", code)
	}
	var doc struct {
		ID       string `json:"id"`
		Messages []struct {
			Role       string              `json:"role"`
			TaskRecord *session.TaskRecord `json:"taskRecord"`
		} `json:"messages"`
		Children []struct {
			ID         string `json:"id"`
			LastStatus string `json:"lastStatus"`
		} `json:"children"`
	}
	if err := json.Unmarshal(q.stdout.Bytes(), &doc); err != nil {
		t.Fatalf("show --json is not one JSON object: %v\n%s", err, q.stdout.String())
	}
	records := 0
	for _, m := range doc.Messages {
		if m.TaskRecord != nil {
			records++
			if status[m.TaskRecord.ChildID] != string(m.TaskRecord.Status) {
				t.Errorf("TaskRecord %+v does not match task.end %v", m.TaskRecord, status)
			}
		}
	}
	if doc.ID != mainID || len(doc.Messages) != 5 || records != 2 || len(doc.Children) != 2 {
		t.Fatalf("show --json: %+v", doc)
	}
	for _, c := range doc.Children {
		if status[c.ID] != c.LastStatus {
			t.Errorf("child %s: lastStatus %q, task.end said %q", c.ID, c.LastStatus, status[c.ID])
		}
	}

	// A child's own transcript, with a torn tail.
	child := doc.Children[0].ID
	list, _ := session.ListSessions(e.home, e.dir)
	path := session.ChildPath(list[0].Path, child)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-5], 0o600)
	q, code = e.run("sessions", "show", child)
	if out := q.stdout.String(); code != 0 || !strings.Contains(out, "child session "+child) || !strings.Contains(out, "parent "+mainID) || !strings.Contains(out, "the last line is torn") {
		t.Fatalf("show child: exit %d\n%s%s", code, out, q.stderr.String())
	}
}

// TestResumeSystemDrift: a new agent profile changes the system prompt of
// an agent that may delegate (it advertises the agents), so a child that
// may delegate (--max-depth 2), launched before, is refused with
// system-drift alone when the main agent resumes it; the model sees the
// refusal as a tool error and no transcript of the child changes.
func TestResumeSystemDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const rules = `rules:
  - when: {depth: 0, user: "^start$", turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "look"}}]
  - when: {depth: 0, user: "^start$"}
    reply: {text: "child done"}
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {resume: "CHILDID", prompt: "look again"}}]
  - when: {depth: 0, tool: task, result: "system-drift"}
    reply: {text: "refused for drift"}
  - when: {depth: 0}
    reply: {text: "unexpected"}
  - reply: {text: "looked"}
`
	script := e.write("s.yaml", rules)
	p, code := e.run("run", "--json", "--max-depth", "2", "--model", "script:"+script, "start")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	mainID := ofType(evs, "run.start")[0]["session"].(string)
	childID := ofType(evs, "task.end")[0]["childId"].(string)
	e.write("s.yaml", strings.ReplaceAll(rules, "CHILDID", childID))
	dir := filepath.Join(e.home, "agents")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "reviewer.md"), []byte("---\nname: reviewer\ndescription: reviews diffs\n---\nReview.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, _ := session.ListSessions(e.home, e.dir)
	children := session.ChildrenDir(list[0].Path)
	before := snapshot(t, children)

	q, code := e.run("run", "--json", "--max-depth", "2", "--model", "script:"+script, "--session", mainID, "resume it")
	if code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, q.stderr.String())
	}
	if got := ofType(events(t, q.stdout.Bytes()), "run.end")[0]["text"]; got != "refused for drift" {
		t.Fatalf("run.end text %q", got)
	}
	sameTree(t, "system drift", before, snapshot(t, children))
	tr, _ := session.Open(list[0].Path)
	res := resultMessages(tr)
	last := res[len(res)-1]
	if !strings.Contains(last, "- system-drift: the assembled system prompt changed since launch") || !strings.HasSuffix(last, "Start a new task instead.") {
		t.Fatalf("refusal %q", last)
	}
	if n := strings.Count(last, "\n- "); n != 1 {
		t.Fatalf("want system-drift alone, got %d problems: %q", n, last)
	}
}

// TestResumeRefusesBrokenHistory: only a crash tail is repaired. A call
// left without a result mid-history, or a call id used twice, is refused
// (malformed) and every file stays byte-identical, but for what shows that
// a worker read the history: only the worker reads it whole, under the
// transcript's lease, so its lease record and the logs say so.
func TestResumeRefusesBrokenHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo hi"}}]
  - reply: {text: "said hi"}
`)
	cases := []struct {
		name   string
		break_ func(lines []string) []string
		want   string
	}{
		{"a gap mid-history", func(lines []string) []string {
			// Drop the bash result: the call is no longer in the last
			// assistant message.
			var out []string
			for _, l := range lines {
				if !strings.Contains(l, `"role":"toolResult"`) {
					out = append(out, l)
				}
			}
			return out
		}, `malformed: .* cannot be continued: `},
		{"a duplicate call id", func(lines []string) []string {
			for i, l := range lines {
				if strings.Contains(l, `"toolCalls"`) {
					return append(append(append([]string(nil), lines[:i+2]...), l), lines[i+2:]...)
				}
			}
			t.Fatal("no tool call line")
			return nil
		}, `malformed: .* cannot be continued: `},
	}
	for _, c := range cases {
		id, path, _ := launchChild(t, e, 0, "--model", "script:"+script, "say hi")
		data, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if err := os.WriteFile(path, []byte(strings.Join(c.break_(lines), "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, e.home, e.dir)
		code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "again")
		if code != 3 || !regexp.MustCompile(c.want).MatchString(stderr) || !strings.Contains(stderr, "Start a new task instead.") {
			t.Errorf("%s: exit %d, stderr:\n%s", c.name, code, stderr)
		}
		after := snapshot(t, e.home, e.dir)
		for _, tr := range []tree{before, after} {
			delete(tr, lease.MetaPath(path))
			for p := range tr {
				if strings.HasPrefix(p, filepath.Join(e.home, "logs")+string(filepath.Separator)) {
					delete(tr, p)
				}
			}
		}
		sameTree(t, c.name, before, after)
	}
}

// TestResumeRunChildFromShell: a child launched by `ink run` can be
// continued from the shell with `ink task --resume`; its parent is found
// by default and the child runs in its own transcript again. The resume is
// recorded in a shell session of its own: the main session, which only its
// own worker writes, is left byte for byte as it was.
func TestResumeRunChildFromShell(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.home, "agents")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "scout.md"), []byte("---\nname: scout\ndescription: looks around\ntools: read, ls\n---\nLook.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "look", agent: scout}}]
  - when: {depth: 0}
    reply: {text: "done"}
  - when: {user: "look again"}
    reply: {text: "looked again"}
  - reply: {text: "looked"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "start")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	childID := ofType(evs, "task.end")[0]["childId"].(string)
	mainPath := ofType(evs, "run.start")[0]["transcript"].(string)
	mainBefore, _ := os.ReadFile(mainPath)
	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", childID, "look again")
	if code != 0 || !strings.HasPrefix(stdout, "looked again\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(mainPath); !bytes.Equal(after, mainBefore) {
		t.Fatalf("the shell resume wrote into the main session:\n%s", after)
	}
	list, _ := session.ListSessions(e.home, e.dir)
	if len(list) != 2 || list[1].Path != mainPath {
		t.Fatalf("want the main session and the resume's shell session, got %+v", list)
	}
	if recs := shellRecords(t, e, list[0].Path); len(recs) != 1 || recs[0].ChildID != childID || recs[0].Status != "completed" {
		t.Fatalf("the shell session's records %+v, want the resume's", recs)
	}
	children, _ := session.ListChildren(mainPath)
	if len(children) != 1 || children[0].Attempts != 2 || children[0].LastStatus != "completed" {
		t.Fatalf("children %+v", children)
	}
}

// TestResumeWorktreeRefusals: a worktree child whose worktree was moved
// away, or whose branch was swapped, is refused with the worktree code, and
// nothing changes: not INK_HOME, not the repository, not the worktree.
func TestResumeWorktreeRefusals(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	_, rec := e.wtTask("work", "echo new > new.txt && git add new.txt && git commit -qm work")
	if rec.Worktree.Disposition != "kept-work" {
		t.Fatalf("worktree %+v, want kept-work", rec.Worktree)
	}
	id, wt := rec.ChildID, rec.Worktree.Path
	script := filepath.Join(filepath.Dir(e.dir), "work.yaml")
	roots := []string{e.home, filepath.Dir(e.dir), filepath.Dir(wt)}
	refused := func(name string, patterns ...string) {
		t.Helper()
		before := snapshot(t, roots...)
		code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
		if code != 3 {
			t.Errorf("%s: exit %d, want 3\n%s", name, code, stderr)
		}
		for _, p := range append(patterns, regexp.QuoteMeta("Start a new task instead.")) {
			if !regexp.MustCompile(p).MatchString(stderr) {
				t.Errorf("%s: stderr lacks %q:\n%s", name, p, stderr)
			}
		}
		sameTree(t, name, before, snapshot(t, roots...))
	}

	e.wtGitIn(wt, "checkout", "-q", "-b", "elsewhere")
	refused("branch swapped", `worktree-branch-swapped: `)
	e.wtGitIn(wt, "checkout", "-q", "ink/"+id)

	aside := wt + ".aside"
	if err := os.Rename(wt, aside); err != nil {
		t.Fatal(err)
	}
	// The directory is gone with the worktree: one problem says so, with no
	// "put it back" advice that cannot be followed.
	refused("worktree missing", `worktree-missing: `)
	if _, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on"); strings.Contains(stderr, "cwd-missing") {
		t.Errorf("a missing worktree is reported twice:\n%s", stderr)
	}
	if err := os.Rename(aside, wt); err != nil {
		t.Fatal(err)
	}

	// git no longer knows the worktree.
	// (Its metadata is moved out of .git/worktrees, where git would still
	// find it under another name.)
	admin := filepath.Join(e.dir, ".git", "worktrees", filepath.Base(wt))
	adminAside := filepath.Join(e.dir, ".git", "aside-"+filepath.Base(wt))
	if err := os.Rename(admin, adminAside); err != nil {
		t.Fatal(err)
	}
	refused("worktree unregistered", `worktree-unregistered: `)
	if err := os.Rename(adminAside, admin); err != nil {
		t.Fatal(err)
	}

	// The repository moved away: ink runs elsewhere, naming the session.
	repo, elsewhere := e.dir, filepath.Join(filepath.Dir(e.dir), "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repo, repo+".aside"); err != nil {
		t.Fatal(err)
	}
	e.dir = elsewhere
	before := snapshot(t, roots...)
	code, _, stderr := e.resumeOut("--model", "script:"+script, "--parent", rec.ParentSessionID, "--resume", id, "go on")
	if code != 3 || !strings.Contains(stderr, "worktree-repo-missing: the repository "+repo+" no longer exists") {
		t.Errorf("repository missing: exit %d\n%s", code, stderr)
	}
	sameTree(t, "repository missing", before, snapshot(t, roots...))
	if err := os.Rename(repo+".aside", repo); err != nil {
		t.Fatal(err)
	}
	e.dir = repo

	// Put back, it resumes in the same worktree and keeps it.
	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "go on")
	if code != 0 || !strings.HasPrefix(stdout, "done\n") {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(wt, "new.txt")); err != nil {
		t.Fatalf("the resumed worktree lost its work: %v", err)
	}

	// The branch's reflog no longer shows how ink created it.
	e.wtGit("reflog", "expire", "--expire=now", "--all")
	refused("history replaced", `worktree-history-replaced: the reflog of ink/`+id+` no longer holds its creation entry`)
}

// TestRunSessionQueuedResumeNeverLeaksOldAnswer: ink dies while the main
// agent's task({resume}) waits in the queue; continuing the main session
// answers that call as outcome-unknown with the child's id, never with the
// child's previous answer.
func TestRunSessionQueuedResumeNeverLeaksOldAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const rules = `rules:
  - when: {depth: 0, user: "^start$", turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "first job"}}]
  - when: {depth: 0, user: "^start$"}
    reply: {text: "first done"}
  - when: {depth: 0, user: "^again$", turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "slow job"}}
        - {tool: task, args: {resume: "CHILDID", prompt: "more"}}
  - when: {depth: 0, user: "^go on$"}
    reply: {text: "main goes on"}
  - when: {depth: 1, user: "slow job"}
    reply: {text: "slow", delay: 60s}
  - when: {depth: 1}
    reply: {text: "the old answer"}
`
	script := e.write("s.yaml", rules)
	p, code := e.run("run", "--json", "--model", "script:"+script, "start")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	mainID := ofType(evs, "run.start")[0]["session"].(string)
	childID := ofType(evs, "task.end")[0]["childId"].(string)
	e.write("s.yaml", strings.ReplaceAll(rules, "CHILDID", childID))

	q := e.start("run", "--json", "--max-parallel", "1", "--model", "script:"+script, "--session", mainID, "again")
	mainPid := int(waitForEvent(t, q, "worker.start")["pid"].(float64))
	waitForEvent(t, q, "task.queued")
	syscall.Kill(q.cmd.Process.Pid, syscall.SIGKILL)
	q.wait(t, time.Minute)
	list, _ := session.ListSessions(e.home, e.dir)
	// The main worker records the host loss, lets go of its lease and exits.
	for deadline := time.Now().Add(10 * time.Second); alive(mainPid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(mainPid) {
		t.Fatalf("the main worker %d outlived its supervisor", mainPid)
	}

	r, code := e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "go on")
	if code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, r.stderr.String())
	}
	if got := ofType(events(t, r.stdout.Bytes()), "run.end")[0]["text"]; got != "main goes on" {
		t.Fatalf("run.end text %q", got)
	}
	tr, _ := session.Open(list[0].Path)
	var calls, answered []string
	for _, m := range tr.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		for _, r := range m.Results {
			answered = append(answered, r.ToolCallID)
		}
	}
	if strings.Join(calls, ",") != strings.Join(answered, ",") {
		t.Fatalf("results %v are not in call order %v", answered, calls)
	}
	res := resultMessages(tr)
	last := res[len(res)-1]
	if strings.Contains(last, "the old answer") || !strings.Contains(last, "outcome is unknown") || !strings.Contains(last, "child session id: "+childID) {
		data, _ := os.ReadFile(list[0].Path)
		t.Fatalf("the queued resume call was answered with %q\n%s", last, data)
	}
}

// TestRunSessionRefusals: `ink run --session` of a session that is still
// running is refused (exit 3) naming the holder's pid; a child's id is
// refused (exit 2) with the command that continues a child.
func TestRunSessionRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "child"}}]
  - when: {depth: 0}
    reply: {text: "done"}
  - reply: {text: "child done", delay: 3s}
`)
	p := e.start("run", "--json", "--model", "script:"+script, "start")
	mainID := waitForEvent(t, p, "run.start")["session"].(string)
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	childID := waitForEvent(t, p, "task.start")["childId"].(string)
	q, code := e.run("run", "--model", "script:"+script, "--session", mainID, "more")
	if code != 3 || !strings.Contains(q.stderr.String(), fmt.Sprintf("in use by pid %d", mainPid)) {
		t.Fatalf("busy session: exit %d\n%s", code, q.stderr.String())
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("the running session was disturbed: exit %d\n%s", code, p.stderr.String())
	}
	before := snapshot(t, e.home)
	q, code = e.run("run", "--model", "script:"+script, "--session", childID, "more")
	if code != 2 || !strings.Contains(q.stderr.String(), childID+" is a child session, not a main session; continue it with `ink task --resume "+childID) {
		t.Fatalf("child id: exit %d\n%s", code, q.stderr.String())
	}
	sameTree(t, "child id", before, snapshot(t, e.home))
}

// TestChildThatNeverStarted: a child transcript that a crash of the
// machine left at 0 bytes, beside a parent whose task call lost its
// result, never started, and every command reads it so: `sessions ls`
// and `sessions show` do not list it as a child, `ink task --resume`
// refuses it saying it never started, and `ink run --session` answers the
// open call without offering a resume that would be refused.
func TestChildThatNeverStarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", `rules:
  - when: {depth: 0, user: "^go on$"}
    reply: {text: "carried on"}
  - when: {depth: 0, turn: 1}
    reply:
      calls: [{tool: task, args: {prompt: "sub"}}]
  - when: {depth: 1}
    reply: {text: "child done"}
  - reply: {text: "main done"}
`)
	p, code := e.run("run", "--json", "--model", "script:"+script, "delegate")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	evs := events(t, p.stdout.Bytes())
	mainID := ofType(evs, "run.start")[0]["session"].(string)
	childID := ofType(evs, "task.end")[0]["childId"].(string)
	mainPath := ofType(evs, "run.end")[0]["transcript"].(string)

	// What a crash of the machine can leave: the child's name without its
	// bytes, and the parent's history up to its task call.
	if err := os.Truncate(session.ChildPath(mainPath, childID), 0); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"role":"toolResult"`) {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatalf("no tool result in the main transcript:\n%s", data)
	}
	if err := os.WriteFile(mainPath, []byte(strings.Join(lines[:cut], "")), 0o600); err != nil {
		t.Fatal(err)
	}

	q, code := e.run("sessions", "ls")
	if code != 0 || !regexp.MustCompile(regexp.QuoteMeta(mainID)+`\s+\S+ \S+\s+0\s`).MatchString(q.stdout.String()) {
		t.Errorf("sessions ls counts the child that never started: exit %d\n%s", code, q.stdout.String())
	}
	q, code = e.run("sessions", "show", mainID)
	if code != 0 || strings.Contains(q.stdout.String(), childID) {
		t.Errorf("sessions show lists the child that never started: exit %d\n%s%s", code, q.stdout.String(), q.stderr.String())
	}
	before := snapshot(t, e.home, e.dir)
	code, _, stderr := e.resumeOut("--model", "script:"+script, "--resume", childID, "go on")
	if code != 2 || !strings.Contains(stderr, "not-found: it never started: ") || !strings.Contains(stderr, "Start a new task instead.") {
		t.Errorf("resume of the child that never started: exit %d\n%s", code, stderr)
	}
	sameTree(t, "resume refused", before, snapshot(t, e.home, e.dir))

	q, code = e.run("run", "--json", "--model", "script:"+script, "--session", mainID, "go on")
	if code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, q.stderr.String())
	}
	tr, err := session.Open(mainPath)
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			answer = r.Content
		}
	}
	if !strings.Contains(answer, "interrupted") || strings.Contains(answer, "resume") || strings.Contains(answer, childID) {
		t.Errorf("the open task call was answered %q; want it interrupted, offering no resume of the child that never started", answer)
	}
	if text := ofType(events(t, q.stdout.Bytes()), "run.end")[0]["text"]; text != "carried on" {
		t.Errorf("the continued session answered %q", text)
	}
}

// TestRunSessionAfterEveryProcessKilled: every process of an `ink run` —
// supervisor, main worker, child worker and the bash the child runs —
// SIGKILLed at once mid-bash leaves a main session whose task call has no
// result and a child whose attempt never recorded its end. `ink run
// --session ID "go on"` answers the call interrupted / host lost with the
// child's resume id, and the resume it advertises continues the child:
// the lost attempt's end is recorded, the bash call is answered outcome
// unknown and not run again.
func TestRunSessionAfterEveryProcessKilled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	count, pidFile := filepath.Join(e.dir, "count"), filepath.Join(e.dir, "bash.pid")
	body := lostChildScript("echo ran >> COUNT; echo $$ > PIDFILE; sleep 300", count, pidFile)
	script := e.write("s.yaml", body)
	p := e.start("run", "--json", "--model", "script:"+script, "start")
	mainID := waitForEvent(t, p, "run.start")["session"].(string)
	mainPid := int(waitForEvent(t, p, "worker.start")["pid"].(float64))
	st := waitForEvent(t, p, "task.start")
	childID, childPid := st["childId"].(string), int(st["pid"].(float64))
	bashPid := waitBashPid(t, pidFile)
	all := []int{p.cmd.Process.Pid, mainPid, childPid, -bashPid}
	for _, pid := range all {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range all {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	p.wait(t, time.Minute)
	waitDead(t, []int{mainPid, childPid, bashPid})

	_, mainPath, results := continueLostChild(t, e, body, mainID, childID)
	if len(results) != 2 || !strings.Contains(results[0], "task interrupted after 1 turn: host lost") ||
		!strings.Contains(results[0], fmt.Sprintf("continue it with task({resume: %q", childID)) {
		t.Fatalf("main results %q; want the lost call answered host lost with the child's resume id", results)
	}
	if !strings.HasPrefix(results[1], "job finished after the resume\n") {
		t.Fatalf("the resumed task's result %q", results[1])
	}
	ctr, err := session.Open(session.ChildPath(mainPath, childID))
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, a := range ctr.Attempts() {
		phases = append(phases, a.Phase+":"+string(a.Status)+":"+a.Reason)
	}
	if got := strings.Join(phases, ","); got != "start::,end:interrupted:host lost,start::,end:completed:" {
		t.Fatalf("child attempt entries %s", got)
	}
	repaired := false
	for _, m := range ctr.Messages {
		for _, r := range m.Results {
			repaired = repaired || (r.ToolName == "bash" && r.IsError && strings.Contains(r.Content, "the outcome is unknown"))
		}
	}
	if !repaired {
		t.Fatal("the child's interrupted bash call was not answered as outcome unknown")
	}
	if data, _ := os.ReadFile(count); string(data) != "ran\n" {
		t.Fatalf("the bash call ran again: %q", data)
	}
}
