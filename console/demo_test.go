package console

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inkdev/ink/event"
)

// TestMain gives the tests a HOME of their own, so git reads no user
// configuration.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "ink-console-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// TestDemoReportsAFailedStart: when the demo's workers cannot start (the
// ink binary is missing) the demo builds its repository, says plainly
// that the main agent crashed and why, returns an error, and removes its
// directory unless asked to keep it.
func TestDemoReportsAFailedStart(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep %v", keep), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			missing := filepath.Join(t.TempDir(), "no-ink")
			var out bytes.Buffer
			var kinds []string
			err := Demo(context.Background(), DemoOptions{
				Dir: dir, Keep: keep, Out: &out, Exe: missing, Environ: []string{"PATH=" + os.Getenv("PATH")},
				Sink: func(e event.Envelope) { kinds = append(kinds, e.Body.Kind()) },
			})
			if err == nil || !strings.HasPrefix(err.Error(), "demo: the main agent ended crash: could not start the worker") {
				t.Fatalf("Demo error = %v", err)
			}
			report := out.String()
			for _, want := range []string{
				"ink demo: three scenes on a scratch repository, every agent its own process",
				"  repository: " + filepath.Join(dir, "calc"),
				"main agent (crash, 0 turns):",
				"transcripts:\n  main  " + filepath.Join(dir, "ink-home", "sessions"),
			} {
				if !strings.Contains(report, want) {
					t.Errorf("report lacks %q:\n%s", want, report)
				}
			}
			if strings.Join(kinds, " ") != "run.start run.end" {
				t.Errorf("events %v", kinds)
			}
			_, statErr := os.Stat(filepath.Join(dir, "calc", "calc", "calc.go"))
			if keep {
				if statErr != nil || !strings.Contains(report, "kept "+dir+"; look around with:") {
					t.Errorf("kept demo: %v\n%s", statErr, report)
				}
				log, err := exec.Command("git", "-C", filepath.Join(dir, "calc"), "log", "--oneline").Output()
				if err != nil || !strings.Contains(string(log), "calc: first version") {
					t.Errorf("the demo repository has no first commit: %v %s", err, log)
				}
			} else if !os.IsNotExist(statErr) || !strings.Contains(report, "The demo directory is removed now. `ink demo --keep` keeps it, so that you can read\nevery transcript") {
				t.Errorf("the demo directory was not removed: %v\n%s", statErr, report)
			}
		})
	}
}
