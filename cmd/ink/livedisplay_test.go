package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/inkdev/ink/console/screentest"
)

// onScreen is ink started on a pseudo-terminal whose output a screentest
// terminal of the same size shows, as a user's terminal would.
type onScreen struct {
	cmd      *exec.Cmd
	ptm, tts *os.File // the terminal's master and slave sides
	screen   *screentest.Screen
	marks    int
	exited   chan struct{}
}

// startOnScreen runs ink with args on a terminal of width columns and 40
// lines; the test keeps the terminal's slave side open too, to write marks
// through it (see sync).
func (e *env) startOnScreen(width int, args ...string) *onScreen {
	e.t.Helper()
	ptm, tts, err := pty.Open()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 40, Cols: uint16(width)}); err != nil {
		e.t.Fatal(err)
	}
	o := &onScreen{cmd: exec.Command(inkBin, args...), ptm: ptm, tts: tts, screen: screentest.New(width, 40), exited: make(chan struct{})}
	o.cmd.Dir = e.dir
	o.cmd.Env = append(e.vars, "TERM=xterm")
	o.cmd.Stdin, o.cmd.Stdout, o.cmd.Stderr = tts, tts, tts
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := o.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	pid := o.cmd.Process.Pid
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			o.screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() { o.cmd.Wait(); close(o.exited) }()
	e.t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		<-o.exited
		tts.Close()
		ptm.Close()
		<-read
	})
	return o
}

// sync returns once the screen has shown everything written to the
// terminal so far: it writes a mark (a window title) through the terminal,
// behind all that ink wrote, and waits for the screen to read it.
func (o *onScreen) sync(t *testing.T) {
	t.Helper()
	o.marks++
	mark := fmt.Sprintf("ink test mark %d", o.marks)
	if _, err := o.tts.WriteString(ansi.SetWindowTitle(mark)); err != nil {
		t.Fatal(err)
	}
	o.await(t, "the mark "+mark, func() bool { return slices.Contains(o.screen.OSC(), "2;"+mark) })
}

// await waits until cond holds for the screen, checking at every change
// that the screen holds no stale row.
func (o *onScreen) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		changed := o.screen.Changed()
		checkScreen(t, o.screen)
		if t.Failed() {
			t.FailNow()
		}
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the terminal never showed %s:\n%s", what, strings.Join(o.screen.History(), "\n"))
		}
	}
}

// liveRow matches a live row of the display.
var liveRow = regexp.MustCompile(`^  (main|main/\d+|… and \d+ more)( |$)`)

// checkScreen fails if a row stands anywhere but in the block of rows at
// the bottom (a row the redraw left behind), if any line is wider than the
// terminal, or if the terminal had to wrap a row (log lines may wrap).
func checkScreen(t *testing.T, s *screentest.Screen) {
	t.Helper()
	width, _ := s.Size()
	lines := s.History()
	bottom := len(lines)
	for bottom > 0 && liveRow.MatchString(lines[bottom-1]) {
		bottom--
	}
	for i, l := range lines {
		if i < bottom && liveRow.MatchString(l) {
			t.Errorf("line %d is a stale row: %q\n%s", i, l, strings.Join(lines, "\n"))
		}
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %q takes %d cells on a terminal of %d columns", l, w, width)
		}
	}
	for _, l := range s.Wrapped() {
		if !strings.HasPrefix(l, "ink: ") {
			t.Errorf("the terminal wrapped a line that is not a log line, wider than its %d columns: %q", width, l)
		}
	}
	if u := s.Unknown(); len(u) > 0 {
		t.Errorf("ink wrote sequences the test's terminal does not interpret: %q", u)
	}
}

// payments is an agent name wider than a 40-column terminal, half of it
// in characters that take two cells.
const payments = "決済ゲートウェイ security reviewer for payments"

// TestLiveDisplayFitsTheTerminal: `ink run` on a terminal of 80 and of 40
// columns, its main agent running four children at once (one as an agent
// whose name is wider than the terminal): every row fits the terminal
// (the agent name cut to its start and an ellipsis), so the terminal never
// wraps a row, and every redraw erases the rows it drew: at no moment is
// there a row above the block of current rows, and when ink exits no row
// is left. Resized from 80 to 40 columns mid-run (SIGWINCH), ink redraws
// the rows for 40 columns at once.
func TestLiveDisplayFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		width, resize int
	}{
		{"80 columns", 80, 0},
		{"40 columns", 40, 0},
		{"resized from 80 to 40 columns", 80, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.write(".ink/agents/payments.md", "---\nname: "+payments+"\ndescription: reviews payment code\n---\nReview the payment code.\n")
			if p, code := e.run("trust"); code != 0 {
				t.Fatalf("ink trust: exit %d\n%s", code, p.stderr.String())
			}
			gate := filepath.Join(e.dir, "gate")
			script := e.write("s.yaml", `rules:
  - when: {depth: 0, turn: 1}
    reply:
      calls:
        - {tool: task, args: {prompt: "one"}}
        - {tool: task, args: {prompt: "two", agent: "`+payments+`"}}
        - {tool: task, args: {prompt: "three"}}
        - {tool: task, args: {prompt: "four"}}
      usage: {input: 1500, output: 60}
  - when: {depth: 0}
    reply: {text: "four children reported"}
  - when: {depth: 1, turn: 1}
    reply:
      calls: [{tool: bash, args: {command: "until [ -e gate ]; do sleep 0.05; done"}}]
      usage: {input: 700, output: 20}
  - when: {depth: 1}
    reply: {text: "child done", usage: {input: 300, output: 9}}
`)
			o := e.startOnScreen(tc.width, "run", "--model", "script:"+script, "go")
			// cut: main/2's row shows the start of its agent's name and an
			// ellipsis, within width.
			cut := func(line string, width int) bool {
				return strings.HasPrefix(line, "  main/2 決済") && strings.Contains(line, "… ") && ansi.StringWidth(line) <= width
			}
			allRows := func() bool {
				v := o.screen.Visible()
				if len(v) < 5 {
					return false
				}
				rows := v[len(v)-5:]
				for i, r := range rows {
					if !strings.HasPrefix(r, "  main"+[]string{" ", "/1 ", "/2 ", "/3 ", "/4 "}[i]) || !strings.Contains(r, " running ") {
						return false
					}
				}
				return true
			}
			o.await(t, "a running row for main and each child", allRows)
			if v := o.screen.Visible(); !cut(v[len(v)-3], tc.width) {
				t.Errorf("main/2's row %q does not show the start of its agent name and an ellipsis in %d columns", v[len(v)-3], tc.width)
			}
			final := tc.width
			if tc.resize != 0 {
				// Stop ink so that nothing it writes is on its way while
				// the terminal changes size, as when a user resizes an idle
				// terminal; SIGWINCH reaches it when it goes on.
				pid := o.cmd.Process.Pid
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				o.sync(t)
				if err := pty.Setsize(o.ptm, &pty.Winsize{Rows: 40, Cols: uint16(tc.resize)}); err != nil {
					t.Fatal(err)
				}
				o.screen.Resize(tc.resize, 40)
				written := len(o.screen.Written())
				if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				final = tc.resize
				o.await(t, "the rows redrawn for 40 columns", func() bool {
					w := o.screen.Written()
					return len(w) > written && slices.ContainsFunc(w[written:], func(l string) bool { return cut(l, tc.resize) }) && allRows()
				})
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-o.exited:
			case <-time.After(2 * time.Minute):
				t.Fatalf("ink did not exit:\n%s", strings.Join(o.screen.History(), "\n"))
			}
			if code := o.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, strings.Join(o.screen.History(), "\n"))
			}
			o.sync(t)
			o.screen.Flush()
			checkScreen(t, o.screen)
			lines := o.screen.History()
			for _, l := range lines {
				if liveRow.MatchString(l) {
					t.Errorf("a row is left after ink exited: %q", l)
				}
			}
			// Log lines wrap whole; join the screen's lines to find them.
			all := strings.Join(lines, "")
			for _, want := range []string{"ink: main/1 completed after", "ink: main/2 completed after", "ink: main/3 completed after", "ink: main/4 completed after", "ink: main completed after", "four children reported"} {
				if n := strings.Count(all, want); n != 1 {
					t.Errorf("the terminal shows %q %d times, want once:\n%s", want, n, strings.Join(lines, "\n"))
				}
			}
			if tc.resize == 0 && !strings.Contains(all, "ink: main/2 started as "+payments) {
				t.Errorf("the log line of main/2's start lacks its agent's whole name:\n%s", strings.Join(lines, "\n"))
			}
			if t.Failed() {
				t.Logf("the terminal (%d columns):\n%s", final, strings.Join(lines, "\n"))
			}
		})
	}
}
