package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/session"
)

// remoteLauncher is the --launcher of a worker that shares no disk with
// the supervisor although it runs on this machine: in a mount namespace of
// its own, INK_HOME and the checkout are empty directories, so it cannot
// read or write the supervisor's files, and it makes the child's worktree
// afresh at the same absolute path.
func remoteLauncher(e *env) string {
	return fmt.Sprintf(`exec:unshare --mount --map-root-user sh -c 'mount -t tmpfs none "$1" && mount -t tmpfs none "$2" && exec "$3" worker --remote' sh %q %q %q`,
		e.home, e.dir, inkBin)
}

// remoteScript is a child that runs command with bash on its first turn
// and then answers "done".
func remoteScript(e *env, name, command string) string {
	return e.wtOutside(name+".yaml", wtBashChild(command))
}

// childTranscript is the path of rec's child, a child of the newest shell
// session of e.
func childTranscript(t *testing.T, e *env, rec session.TaskRecord) string {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) == 0 {
		t.Fatalf("want a shell session, got %v (%v)", list, err)
	}
	return session.ChildPath(list[0].Path, rec.ChildID)
}

// TestRemoteChild: a child run through --launcher exec: works in a
// workspace of its own — it cannot see the supervisor's INK_HOME or the
// user's checkout — and what it did comes back byte for byte: committed
// work on ink/<id>, a modified file, an untracked one, a deletion, an
// executable bit and a symlink, reviewed and merged with ink worktrees as
// for a local child.
func TestRemoteChild(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n", "gone.txt": "bye\n"})
	before := e.wtMainState()
	command := fmt.Sprintf(`cat %s/a.txt; ls -a %s; echo new > new.txt && git add new.txt && git commit -qm remote-commit && `+
		`echo changed >> a.txt && rm gone.txt && printf '#!/bin/sh\necho hi\n' > run.sh && chmod +x run.sh && ln -s new.txt link && echo scratch > scratch.txt`,
		e.dir, e.home)
	script := remoteScript(e, "remote", command)
	p, code := e.run("task", "--launcher", remoteLauncher(e), "--model", "script:"+script, "work remotely")
	if code != 0 {
		t.Fatalf("ink task exited %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if !strings.HasPrefix(p.snapshot(), "done") {
		t.Errorf("stdout %q, want the child's answer", p.snapshot())
	}
	rec := wtLatestRecord(t, e)
	w := rec.Worktree
	if w == nil || w.Disposition != "kept-work" {
		t.Fatalf("worktree outcome %+v, want kept-work", w)
	}

	// The worker saw neither the checkout nor INK_HOME: its bash result,
	// in the child's transcript on the supervisor's disk, says so.
	tr, err := session.Open(childTranscript(t, e, rec))
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range tr.Messages {
		for _, r := range m.Results {
			if r.ToolName == "bash" {
				result = r.Content
			}
		}
	}
	if !strings.Contains(result, "a.txt: No such file or directory") || strings.Contains(result, "sessions") {
		t.Errorf("the remote worker could read the supervisor's files; its bash said:\n%s", result)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != "completed" || tr.Torn != nil {
		t.Errorf("the child's transcript ends %+v (%v), torn %+v", end, ok, tr.Torn)
	}

	// The worktree on the supervisor's disk is what the worker had.
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(w.Path, name))
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b)
	}
	if got := read("a.txt"); got != "hello\nchanged\n" {
		t.Errorf("a.txt = %q", got)
	}
	if got := read("scratch.txt"); got != "scratch\n" {
		t.Errorf("untracked scratch.txt = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(w.Path, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt was deleted by the worker but is still there (%v)", err)
	}
	if fi, err := os.Stat(filepath.Join(w.Path, "run.sh")); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(w.Path, "link")); err != nil || target != "new.txt" {
		t.Errorf("link = %q, %v; want a symlink to new.txt", target, err)
	}
	if log := e.wtGit("log", "--format=%s", w.Branch); !strings.HasPrefix(log, "remote-commit\n") {
		t.Errorf("the user's %s: %q, want the worker's commit on top", w.Branch, log)
	}
	if after := e.wtMainState(); after != before {
		t.Errorf("the main checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	d, code := e.run("worktrees", "diff", rec.ChildID)
	if code != 0 || !strings.Contains(d.stdout.String(), "+changed") || !strings.Contains(d.stdout.String(), "scratch.txt") {
		t.Errorf("ink worktrees diff exited %d:\n%s\n%s", code, d.stdout.String(), d.stderr.String())
	}
	m, code := e.run("worktrees", "merge", "--commit", rec.ChildID)
	if code != 0 {
		t.Fatalf("ink worktrees merge exited %d:\n%s\n%s", code, m.stdout.String(), m.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("after the merge new.txt is %q, %v", b, err)
	}
}

// TestRemoteTranscriptMatchesLocal: the same child run locally and
// through --launcher exec: leaves transcripts that are the same but for
// ids, times, pids and the paths of each run.
func TestRemoteTranscriptMatchesLocal(t *testing.T) {
	t.Parallel()
	run := func(remote bool) string {
		e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
		script := remoteScript(e, "same", "echo more >> a.txt && git commit -qam more && git log --format=%s")
		args := []string{"task", "--worktree", "--model", "script:" + script, "the same work"}
		if remote {
			args = append([]string{"--launcher", remoteLauncher(e)}, args...)
		}
		p, code := e.run(args...)
		if code != 0 {
			t.Fatalf("remote %v: ink task exited %d\n%s", remote, code, p.stderr.String())
		}
		rec := wtLatestRecord(t, e)
		data, err := os.ReadFile(childTranscript(t, e, rec))
		if err != nil {
			t.Fatal(err)
		}
		return normalise(string(data), e)
	}
	local, remote := run(false), run(true)
	if local != remote {
		t.Errorf("the transcripts differ:\nlocal:\n%s\nremote:\n%s", local, remote)
	}
}

var (
	ulidRE = regexp.MustCompile(`\b[0-9a-hjkmnp-tv-z]{26}\b`)
	timeRE = regexp.MustCompile(`"(time|createdAt)":"[^"]*"`)
	pidRE  = regexp.MustCompile(`"pid":\d+`)
	hexRE  = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	// A commit's short hash, as results show a baseline.
	shortRE = regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	durRE   = regexp.MustCompile(`"(durationMs|inkVersion)":[^,}]*`)
	// The system prompt's hash, the repository's slug and the call ids
	// follow from the run's paths.
	sumRE  = regexp.MustCompile(`"sha256":"[0-9a-f]{64}"`)
	slugRE = regexp.MustCompile(`/worktrees/([a-z0-9-]+)-[0-9a-f]{8}/`)
	callRE = regexp.MustCompile(`"(call_\d+_\d+)_[0-9a-f]{8}"`)
	// The script model counts the request's input, which holds the bash
	// tool's description: it says what the worker's git directory allows,
	// and a remote worker's is a repository of its own, not a linked
	// worktree of the user's.
	inputRE = regexp.MustCompile(`"input":\d+`)
	// The directory of a checkout's sessions is named after its path.
	sessionsRE = regexp.MustCompile(`\$INK_HOME/sessions/[^/"]+/`)
	// The same count, in a task result's summary of a child's tokens.
	inTextRE = regexp.MustCompile(`≥?[0-9.]+k? in / `)
)

// normalise takes out of a transcript what differs between two runs of
// the same work: ids, times, pids, commit hashes and the run's paths.
func normalise(s string, e *env) string {
	s = strings.ReplaceAll(s, e.home, "$INK_HOME")
	s = strings.ReplaceAll(s, e.dir, "$CHECKOUT")
	s = strings.ReplaceAll(s, filepath.Dir(e.dir), "$ROOT")
	s = ulidRE.ReplaceAllString(s, "ID")
	s = timeRE.ReplaceAllString(s, `"$1":"T"`)
	s = pidRE.ReplaceAllString(s, `"pid":0`)
	s = hexRE.ReplaceAllString(s, "HASH")
	s = shortRE.ReplaceAllString(s, "SHORT")
	s = durRE.ReplaceAllString(s, `"$1":0`)
	s = sumRE.ReplaceAllString(s, `"sha256":"SUM"`)
	s = slugRE.ReplaceAllString(s, "/worktrees/$1-SLUG/")
	s = callRE.ReplaceAllString(s, `"$1_X"`)
	s = inputRE.ReplaceAllString(s, `"input":N`)
	s = inTextRE.ReplaceAllString(s, "N in / ")
	s = sessionsRE.ReplaceAllString(s, "$$INK_HOME/sessions/CHECKOUT/")
	return s
}

// pidDir is a directory beside the checkout that a remote child's bash
// may write (--writable) and the test reads, and the file in it where the
// bash writes its pid.
func pidDir(t *testing.T, e *env) (dir, file string) {
	t.Helper()
	dir = filepath.Join(filepath.Dir(e.dir), "pids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "bash.pid")
}

// remoteWorkerPid finds the remote worker above the process whose pid is
// in file: the first ancestor running `ink worker --remote`.
func remoteWorkerPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child's bash never started")
		}
	}
	w := workerAbove(t, pid)
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", w)); string(cmdline) != inkBin+"\x00worker\x00--remote\x00" {
		t.Fatalf("the worker above pid %d is %q, not ink worker --remote", pid, cmdline)
	}
	return w
}

// parentOf is the parent of process pid, read from /proc.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// TestRemoteWorkerLostResumes: a remote worker killed mid-bash leaves an
// interrupted child — its end written by the supervisor, which holds the
// lease — and resuming it through the exec launcher again completes, from
// a worktree that matches the transcript: what the lost command did after
// the last recorded tool result never reached the supervisor.
func TestRemoteWorkerLostResumes(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	pids, pidFile := pidDir(t, e)
	script := e.wtOutside("lost.yaml", fmt.Sprintf(`rules:
  - when: {result: "resumed"}
    reply: {text: "finished"}
  - when: {user: "go on"}
    reply:
      calls: [{tool: bash, args: {command: "ls -a; echo resumed"}}]
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "touch lost.flag; echo $$ > %s; sleep 300"}}]
  - reply: {text: "done"}
`, pidFile))
	launcher := remoteLauncher(e)
	p := e.start("task", "--launcher", launcher, "--writable", pids, "--model", "script:"+script, "work remotely")
	worker := remoteWorkerPid(t, pidFile)
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t, time.Minute)
	rec := wtLatestRecord(t, e)
	if rec.Status != "interrupted" || rec.Worktree == nil {
		t.Fatalf("the lost child's record: %s %q, worktree %+v\nstderr:\n%s", rec.Status, rec.Reason, rec.Worktree, p.stderr.String())
	}
	childPath := childTranscript(t, e, rec)
	tr, err := session.Open(childPath)
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != "interrupted" || !strings.Contains(end.Reason, "remote worker") {
		t.Fatalf("the supervisor did not record the lost attempt's end: %+v (%v)", end, ok)
	}

	r, code := e.run("task", "--launcher", launcher, "--writable", pids, "--model", "script:"+script, "--resume", rec.ChildID, "go on")
	if code != 0 || !strings.HasPrefix(r.snapshot(), "finished") {
		t.Fatalf("the resume exited %d with %q\nstderr:\n%s", code, r.snapshot(), r.stderr.String())
	}
	tr, err = session.Open(childPath)
	if err != nil {
		t.Fatal(err)
	}
	var listing string
	for _, m := range tr.Messages {
		for _, res := range m.Results {
			if strings.Contains(res.Content, "resumed") {
				listing = res.Content
			}
		}
	}
	if listing == "" || strings.Contains(listing, "lost.flag") {
		t.Errorf("the resumed worker's worktree does not match the transcript (the lost command's file is there):\n%s", listing)
	}
}

// TestRemoteWorkerStopped: a remote worker frozen mid-tool (SIGSTOP), in
// a session of its own that outlives the command that reached it, is lost
// within 5 s: its attempt ends interrupted, recorded by the supervisor;
// the child resumes through the exec launcher again; and once the stale
// worker runs again (SIGCONT) it writes nothing: its stream is gone.
func TestRemoteWorkerStopped(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"a.txt": "hello\n"})
	pids, pidFile := pidDir(t, e)
	script := e.wtOutside("frozen.yaml", fmt.Sprintf(`rules:
  - when: {result: "resumed"}
    reply: {text: "finished"}
  - when: {user: "go on"}
    reply:
      calls: [{tool: bash, args: {command: "echo resumed"}}]
  - when: {turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "echo $$ > %s; sleep 300"}}]
  - reply: {text: "done"}
`, pidFile))
	// setsid puts the worker in a session of its own, as a worker behind
	// ssh is: killing the command does not kill it.
	launcher := strings.Replace(remoteLauncher(e), `exec "$3" worker`, `exec setsid "$3" worker`, 1)
	p := e.start("task", "--json", "--launcher", launcher, "--writable", pids, "--model", "script:"+script, "work remotely")
	worker := remoteWorkerPid(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGKILL) })
	if err := syscall.Kill(worker, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	end := waitForEvent(t, p, "task.end")
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("the frozen worker was found lost after %s, want within 5s", took)
	}
	if end["status"] != "interrupted" || !strings.Contains(fmt.Sprint(end["reason"]), "no heartbeat") {
		t.Fatalf("task.end %v, want interrupted for a lost worker", end)
	}
	p.wait(t, time.Minute)
	rec := wtLatestRecord(t, e)
	childPath := childTranscript(t, e, rec)
	before, err := os.ReadFile(childPath)
	if err != nil {
		t.Fatal(err)
	}

	// The stale worker runs again: it finds its stream gone and writes
	// nothing.
	pidfd, err := unix.PidfdOpen(worker, 0)
	if err != nil {
		t.Fatalf("the stale worker %d is gone already: %v", worker, err)
	}
	defer unix.Close(pidfd)
	if err := syscall.Kill(worker, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if n, err := pollExit(pidfd, 30_000); err != nil || n != 1 {
		t.Fatalf("the stale worker %d still runs 30 s after SIGCONT", worker)
	}
	if after, _ := os.ReadFile(childPath); string(after) != string(before) {
		t.Errorf("the stale worker wrote to the transcript after it was lost:\n%s", after[len(before):])
	}

	r, code := e.run("task", "--launcher", launcher, "--writable", pids, "--model", "script:"+script, "--resume", rec.ChildID, "go on")
	if code != 0 || !strings.HasPrefix(r.snapshot(), "finished") {
		t.Fatalf("the resume exited %d with %q\nstderr:\n%s", code, r.snapshot(), r.stderr.String())
	}
}

// pollExit waits up to ms milliseconds for the process of pidfd to exit,
// polling again when a signal interrupts the wait.
func pollExit(pidfd, ms int) (int, error) {
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// TestRemoteIncludes: a worktree's .worktreeinclude files (a gitignored
// .env) stay on the supervisor's machine unless --ship-includes sends
// them, and ink says which stayed.
func TestRemoteIncludes(t *testing.T) {
	t.Parallel()
	for _, ship := range []bool{false, true} {
		t.Run(fmt.Sprint("ship=", ship), func(t *testing.T) {
			t.Parallel()
			e := newWtRepo(t, map[string]string{"a.txt": "hello\n", ".gitignore": ".env\n", ".worktreeinclude": ".env\n"})
			e.write(".env", "TOKEN_FOR_TESTS=present\n")
			script := remoteScript(e, "env", "cat .env")
			args := []string{"task", "--launcher", remoteLauncher(e), "--model", "script:" + script, "read the env"}
			if ship {
				args = append([]string{"--ship-includes"}, args...)
			}
			p, code := e.run(args...)
			if code != 0 {
				t.Fatalf("ink task exited %d\n%s", code, p.stderr.String())
			}
			tr, err := session.Open(childTranscript(t, e, wtLatestRecord(t, e)))
			if err != nil {
				t.Fatal(err)
			}
			var result string
			for _, m := range tr.Messages {
				for _, r := range m.Results {
					result += r.Content
				}
			}
			warned := strings.Contains(p.stderr.String(), ".worktreeinclude files were not shipped to the remote worker: .env")
			if ship && (!strings.Contains(result, "present") || warned) {
				t.Errorf("with --ship-includes the worker's cat .env said %q (warned %v)", result, warned)
			}
			if !ship && (strings.Contains(result, "present") || !warned) {
				t.Errorf("without --ship-includes the worker read %q; warned %v\nstderr:\n%s", result, warned, p.stderr.String())
			}
		})
	}
}
