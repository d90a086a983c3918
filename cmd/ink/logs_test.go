package main

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestPruneLogs: session logs go after logMaxAge, then the oldest until the
// rest fit in logMaxTotal; ink.log and other files stay.
func TestPruneLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	put := func(name string, size int64, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil { // sparse: no disk spent
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	put("old.log", 10, logMaxAge+time.Hour)
	put("ink.log", 10, logMaxAge+time.Hour)
	put("notes.txt", 10, logMaxAge+time.Hour)
	put("big-oldest.log", logMaxTotal/2, 3*time.Hour)
	put("big-older.log", logMaxTotal/2, 2*time.Hour)
	put("big-new.log", logMaxTotal/2, time.Hour)
	put("fresh.log", 10, 0)
	pruneLogs(dir, now)
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	want := []string{"big-new.log", "fresh.log", "ink.log", "notes.txt"}
	if len(left) != len(want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	for i := range want {
		if left[i] != want[i] {
			t.Fatalf("left %v, want %v", left, want)
		}
	}
}

// TestLogsStayBounded: a run prunes session logs past their age and
// rotates a large ink.log, so that logs do not pile up forever.
func TestLogsStayBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	logs := filepath.Join(e.home, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(logs, "01oldsession.log")
	if err := os.WriteFile(old, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	month := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(old, month, month); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(logs, "ink.log")
	if err := os.WriteFile(host, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(host, hostLogMax+1); err != nil {
		t.Fatal(err)
	}
	script := e.write("s.yaml", "rules:\n  - reply: {text: \"hi\"}\n")
	if p, code := e.run("run", "--model", "script:"+script, "hello"); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a month-old session log is still there (%v)", err)
	}
	if fi, err := os.Stat(host + ".1"); err != nil || fi.Size() != hostLogMax+1 {
		t.Errorf("ink.log was not rotated to ink.log.1: %v", err)
	}
	if fi, err := os.Stat(host); err != nil || fi.Size() > hostLogMax {
		t.Errorf("ink.log after the run: %v", err)
	}
	sessionLogs, _ := filepath.Glob(filepath.Join(logs, "01*.log"))
	if len(sessionLogs) != 1 {
		t.Errorf("session logs %v, want the new run's only", sessionLogs)
	}
}
