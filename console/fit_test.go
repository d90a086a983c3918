package console

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/inkdev/ink/console/screentest"
	"github.com/inkdev/ink/event"
)

// longAgent is an agent name wider than a 40-column terminal, in Japanese
// and English.
const longAgent = "決済ゲートウェイ security reviewer for the payments team"

// terminal is a screen whose size the display reads, as it reads a real
// terminal's; resize changes both and tells the display, as SIGWINCH does.
type terminal struct {
	*screentest.Screen
	mu            sync.Mutex
	width, height int
}

func newTerminal(width, height int) *terminal {
	return &terminal{Screen: screentest.New(width, height), width: width, height: height}
}

func (t *terminal) size() (int, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.width, t.height
}

func (t *terminal) resize(d *Display, width, height int) {
	t.mu.Lock()
	t.width, t.height = width, height
	t.mu.Unlock()
	t.Screen.Resize(width, height)
	d.resized <- syscall.SIGWINCH
}

// await waits until cond holds for what the terminal shows.
func (t *terminal) await(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	timeout := time.After(10 * time.Second)
	for {
		changed := t.Changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			tb.Fatalf("the terminal never showed %s:\n%s", what, strings.Join(t.History(), "\n"))
		}
	}
}

// rowLine matches a live row on the terminal.
var rowLine = regexp.MustCompile(`^  (main|main/\d+|… and \d+ more)( |$)`)

// checkNoStale fails if the terminal's lines hold a row anywhere but in
// the last rows lines, or if it wrapped any line but a log line.
func checkNoStale(t *testing.T, term *terminal, rows int) {
	t.Helper()
	lines := term.History()
	for i, l := range lines {
		if rowLine.MatchString(l) && i < len(lines)-rows {
			t.Errorf("line %d is a stale row: %q\n%s", i, l, strings.Join(lines, "\n"))
		}
	}
	for _, l := range term.Wrapped() {
		if !strings.HasPrefix(l, "ink: ") {
			t.Errorf("a row was wider than the terminal and wrapped: %q", l)
		}
	}
}

// TestDisplayFitsTheTerminal: at 80 and at 40 columns the live rows of a
// run of four children, one of them with an agent name wider than the
// terminal, fit the width (the agent name cut with an ellipsis), so the
// redraw leaves no stale line; long log lines wrap and stay whole. A
// resize redraws the rows for the new width at once, and a terminal too
// short for every row shows how many more there are.
func TestDisplayFitsTheTerminal(t *testing.T) {
	t.Parallel()
	// run shows a run of four children; during runs while they all have a
	// row. A terminal resized to fewer columns has cut the lines it showed,
	// so then only the lines after it are checked whole.
	run := func(t *testing.T, term *terminal, d *Display, during func(), narrowed bool) {
		d.Handle(env("main", event.RunStart{Model: "script:s.yaml"}))
		d.Handle(env("main/1", event.TaskStart{ChildID: "c1", AgentName: "scout", Pid: 11}))
		d.Handle(env("main/2", event.TaskStart{ChildID: "c2", AgentName: longAgent, Pid: 12}))
		d.Handle(env("main/3", event.TaskStart{ChildID: "c3", AgentName: "🔒 auditor", Pid: 13}))
		d.Handle(env("main", event.TaskQueued{Child: "main/4"}))
		for _, l := range []string{"main/1", "main/2", "main/3"} {
			d.Handle(env(l, event.ToolStart{Name: "web_fetch", Args: json.RawMessage(`{"url":"x"}`)}))
			d.Handle(env(l, event.TurnStart{Turn: 2}))
		}
		d.Handle(env("main/2", event.Warning{Text: "the model answered slowly; " + strings.Repeat("retrying ", 12)}))
		checkNoStale(t, term, 5)
		if during != nil {
			during()
		}
		d.Handle(env("main/4", event.TaskStart{ChildID: "c4", Pid: 14}))
		for i, l := range []string{"main/1", "main/2", "main/3", "main/4"} {
			d.Handle(env(l, event.TaskEnd{ChildID: "c" + string(rune('1'+i)), Status: "completed", Turns: 2}))
			checkNoStale(t, term, 4-i)
		}
		d.Handle(env("main", event.RunEnd{Status: "completed"}))
		d.Close()
		checkNoStale(t, term, 0)
		history := strings.Join(term.History(), "\n")
		wants := []string{"ink: main/4 started", "ink: main/1 completed after", "ink: main/4 completed after", "ink: main completed after"}
		if !narrowed {
			wants = append(wants, "ink: main started", "ink: main/2 started as "+longAgent, "ink: main/4 queued", "ink: main/2 warning: the model")
		}
		for _, want := range wants {
			if strings.Count(strings.ReplaceAll(history, "\n", ""), want) != 1 {
				t.Errorf("the terminal does not show %q once:\n%s", want, history)
			}
		}
		if u := term.Unknown(); len(u) > 0 {
			t.Errorf("the display wrote sequences a terminal screen does not know: %q", u)
		}
	}
	// cut is the long agent name as a row shows it: its start, an ellipsis.
	cut := func(line string) bool {
		return strings.HasPrefix(line, "  main/2 決済") && strings.Contains(line, "… ") && !strings.Contains(line, longAgent)
	}
	for _, width := range []int{80, 40} {
		t.Run(fmt.Sprintf("%d columns", width), func(t *testing.T) {
			t.Parallel()
			term := newTerminal(width, 24)
			d := newDisplay(term, true, term.size)
			defer d.Close()
			run(t, term, d, func() {
				rows := term.Visible()[len(term.Visible())-5:]
				for _, r := range rows {
					if ansi.StringWidth(r) > width || !rowLine.MatchString(r) {
						t.Errorf("row %q: not a row no wider than %d", r, width)
					}
				}
				if !cut(rows[2]) {
					t.Errorf("main/2's row %q does not show the start of its agent name and an ellipsis", rows[2])
				}
			}, false)
		})
	}
	t.Run("resized from 80 to 40 columns", func(t *testing.T) {
		t.Parallel()
		term := newTerminal(80, 24)
		d := newDisplay(term, true, term.size)
		defer d.Close()
		run(t, term, d, func() {
			wrote := len(term.Written())
			term.resize(d, 40, 24)
			term.await(t, "rows redrawn for 40 columns", func() bool {
				w := term.Written()
				return len(w) >= wrote+5 && strings.HasPrefix(w[len(w)-1], "  main/4 ") && ansi.StringWidth(w[len(w)-3]) <= 40 && cut(w[len(w)-3])
			})
			checkNoStale(t, term, 5)
		}, true)
	})
	t.Run("a terminal of 4 lines", func(t *testing.T) {
		t.Parallel()
		term := newTerminal(40, 4)
		d := newDisplay(term, true, term.size)
		defer d.Close()
		run(t, term, d, func() {
			if got := term.Visible(); len(got) != 3 || got[2] != "  … and 3 more" {
				t.Errorf("a terminal of 4 lines shows %q, want 2 rows and the count of the others", got)
			}
		}, false)
	})
}
