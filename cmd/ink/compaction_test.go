package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// TestLongChildCompactsAndResumes: a script-model child with a 6000-token
// window reads file after file; its scripted usage passes 85% of the
// window twice, so it compacts before turns 4 and 7. It is SIGKILLed in
// turn 7, and a resume rebuilds its history from the last compaction (a
// rebuild from the whole file would need a third compaction, which the
// script does not answer) and completes. The transcript keeps every
// original message beside the two compaction entries.
func TestLongChildCompactsAndResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := 1; i <= 8; i++ {
		e.write(fmt.Sprintf("f%d.txt", i), fmt.Sprintf("file %d\n", i)+strings.Repeat("data line of a large file\n", 90))
	}
	pidFile := filepath.Join(e.dir, "bash.pid")
	var src strings.Builder
	src.WriteString("contextWindow: 6000\nrules:\n")
	// The resumed attempt.
	src.WriteString("  - when: {user: \"carry on\", turn: 1}\n    reply: {calls: [{tool: read, args: {path: f8.txt}}], usage: {input: 3500, output: 10}}\n")
	src.WriteString("  - when: {user: \"carry on\", turn: 2}\n    reply: {text: \"All 8 files read.\", usage: {input: 4400, output: 10}}\n")
	// The two summaries, told apart by the turn they are made for.
	src.WriteString("  - when: {compaction: true, turn: 4}\n    reply: {text: \"SUMMARY-ONE: read f1-f3.\", usage: {input: 5000, output: 20}}\n")
	src.WriteString("  - when: {compaction: true, turn: 7}\n    reply: {text: \"SUMMARY-TWO: read f1-f6.\", usage: {input: 5000, output: 20}}\n")
	inputs := []int{3000, 4000, 5200, 3000, 4000, 5200}
	for turn, in := range inputs {
		fmt.Fprintf(&src, "  - when: {turn: %d}\n    reply: {calls: [{tool: read, args: {path: f%d.txt}}], usage: {input: %d, output: 10}}\n", turn+1, turn+1, in)
	}
	fmt.Fprintf(&src, "  - when: {turn: 7}\n    reply: {calls: [{tool: bash, args: {command: \"echo $$ > %s; sleep 300\"}}], usage: {input: 3000, output: 10}}\n", pidFile)
	script := e.write("long.yaml", src.String())

	p := e.start("task", "--json", "--model", "script:"+script, "read every file")
	st := waitForEvent(t, p, "task.start")
	id, childPid := st["childId"].(string), int(st["pid"].(float64))
	bashPid := 0
	for deadline := time.Now().Add(60 * time.Second); bashPid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil {
			fmt.Sscan(strings.TrimSpace(string(data)), &bashPid)
		}
	}
	if bashPid == 0 {
		t.Fatalf("turn 7's bash call never started\nstdout:\n%s\nstderr:\n%s", p.snapshot(), p.stderr.String())
	}
	t.Cleanup(func() { syscall.Kill(-bashPid, syscall.SIGKILL) })
	if err := syscall.Kill(childPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 1 {
		t.Fatalf("killed child: exit %d, want 1\nstderr:\n%s", code, p.stderr.String())
	}
	evs := ofType(events(t, p.stdout.Bytes()), "compaction")
	if len(evs) != 2 || evs[0]["trigger"] != "threshold" || evs[0]["tokensBefore"].(float64) <= 5100 {
		t.Fatalf("compaction events %v; want two, over 85%% of the window", evs)
	}

	path := childPath(t, e, id)
	tr, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cs := tr.Compactions()
	if len(cs) != 2 || cs[0].Summary != "SUMMARY-ONE: read f1-f3." || cs[1].Summary != "SUMMARY-TWO: read f1-f6." ||
		cs[1].Usage == nil || cs[1].Usage.Input != 5000 || cs[1].FirstKept == "" {
		t.Fatalf("compaction entries %+v", cs)
	}
	// Every original message stays: the prompt, six read turns and the
	// assistant message of turn 7 whose bash call was cut off.
	if n := len(tr.Messages); n != 1+6*2+1 {
		t.Fatalf("the transcript holds %d messages, want 14", n)
	}
	if h := tr.History(); h[0].Text() != model.SummaryMessage("SUMMARY-TWO: read f1-f6.").Text() {
		t.Fatalf("history starts with %q, want the second summary", h[0].Text())
	}

	code, stdout, stderr := e.resumeOut("--model", "script:"+script, "--resume", id, "carry on")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stdout, "All 8 files read.\n") {
		t.Fatalf("resume result:\n%s", stdout)
	}
	tr, err = session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Compactions()) != 2 {
		t.Errorf("%d compactions after the resume; it must go on from the last one without another", len(tr.Compactions()))
	}
	// 14 before, the unknown-outcome result of the bash call, the new
	// prompt, and two turns with one result.
	if n := len(tr.Messages); n != 14+1+1+3 {
		t.Errorf("the transcript holds %d messages after the resume, want 19", n)
	}
	h := tr.History()
	if h[0].Text() != model.SummaryMessage("SUMMARY-TWO: read f1-f6.").Text() || h[len(h)-1].Text() != "All 8 files read." {
		t.Errorf("history after the resume: starts %q, ends %q", h[0].Text(), h[len(h)-1].Text())
	}
	if s := session.ScanPairs(tr.Messages); s.State != session.Consistent {
		t.Errorf("the full transcript is %v: %s", s.State, s.Reason)
	}
	if end, ok := tr.LastAttemptEnd(); !ok || end.Status != "completed" {
		t.Errorf("last attempt end %+v", end)
	}
}

// childPath returns the transcript of child id under the shell session of
// this directory.
func childPath(t *testing.T, e *env, id string) string {
	t.Helper()
	list, err := session.ListSessions(e.home, e.dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("want one shell session, got %v (%v)", list, err)
	}
	children, err := session.ListChildren(list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		if c.ID == id {
			return c.Path
		}
	}
	t.Fatalf("child %s not found among %+v", id, children)
	return ""
}
