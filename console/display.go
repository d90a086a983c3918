// Package console owns what ink shows people and scripts while it runs:
// the live rows and plain lines on stderr ([Display]), the `--json` event
// stream on stdout ([JSONLines]) and the offline walk-through of `ink demo`
// ([Demo]). It reads the supervisor's events (package event) and never
// changes what the agents do.
package console

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/inkdev/ink/event"
	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// JSONLines returns a sink that writes each event as one JSON line to w
// (the `--json` stream). After a write fails (stdout closed early) it
// writes nothing more, and calls failed (when not nil), once, with that
// write's error (EPIPE when the reader of stdout went away), so that the
// caller can stop the run nobody reads any more. failed runs on the
// caller's goroutine with no lock held. It is safe for concurrent use.
func JSONLines(w io.Writer, failed func(error)) func(event.Envelope) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	broken := false
	return func(e event.Envelope) {
		mu.Lock()
		if broken {
			mu.Unlock()
			return
		}
		err := enc.Encode(e)
		broken = err != nil
		mu.Unlock()
		if err != nil && failed != nil {
			failed(err)
		}
	}
}

// Display renders events for people on stderr: live rows per child on a
// terminal, plain lines otherwise. It is safe for concurrent use; Close
// stops the live redraw.
//
// The live rows are fitted to the terminal's width, read afresh for each
// redraw and at once on a resize (SIGWINCH): each row is one line on the
// terminal, never wrapped, so that the redraw erases exactly the lines it
// drew. A terminal that rewraps its lines when it is made narrower may
// keep parts of the rows drawn just before the resize.
type Display struct {
	w       io.Writer
	live    bool
	verbose bool
	size    size
	resized chan os.Signal // a resize of the terminal (SIGWINCH)

	mu     sync.Mutex
	rows   map[string]*row
	order  []string
	frame  strings.Builder // what the next write puts on the terminal
	drawn  int             // terminal lines the live rows take
	stop   chan struct{}
	closed bool
}

type row struct {
	label    string
	agent    string
	start    time.Time
	turns    int
	usage    model.Usage
	lastTool string
	// state is orchestrator.ChildQueued, ChildRunning or ChildEnded;
	// status says how it ended.
	state  string
	status orchestrator.Status
	queued bool
}

// NewDisplay returns a display writing to w; live selects redrawn rows,
// fitted to the size of the terminal w is (80 columns when w is no
// terminal). A live display redraws until Close.
func NewDisplay(w io.Writer, live bool) *Display {
	return newDisplay(w, live, terminalSize(w))
}

// newDisplay is NewDisplay with the terminal's size read from size.
func newDisplay(w io.Writer, live bool, size size) *Display {
	d := &Display{w: w, live: live, size: size, rows: map[string]*row{}, stop: make(chan struct{}), resized: make(chan os.Signal, 1)}
	if live {
		notifyResize(d.resized)
		go d.tick()
	}
	return d
}

// SetVerbose makes the display show more: every worker's pid, each model
// turn, each tool call and how it ended, and where transcripts are. Call it
// before the first event.
func (d *Display) SetVerbose(v bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.verbose = v
}

// Note shows one line of ink's own ("ink: text"), above the live rows.
func (d *Display) Note(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.print(text)
	d.flush()
}

// print puts one "ink: " line in the frame, keeping the live rows below
// it. The line is not cut to the terminal's width: it stays, and the
// terminal wraps it whole.
func (d *Display) print(line string) {
	if d.live {
		d.clear()
		fmt.Fprintf(&d.frame, "ink: %s\n", line)
		d.redraw()
		return
	}
	fmt.Fprintf(&d.frame, "ink: %s\n", line)
}

// flush writes the frame in one write, so that the terminal never shows
// rows half erased or half drawn.
func (d *Display) flush() {
	if d.frame.Len() == 0 {
		return
	}
	io.WriteString(d.w, d.frame.String())
	d.frame.Reset()
}

// Close stops redrawing and leaves the final rows on screen.
func (d *Display) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	close(d.stop)
	if d.live {
		d.redraw()
		d.flush()
	}
}

// tick redraws the rows four times a second, for their clocks, and at once
// when the terminal is resized, until Close.
func (d *Display) tick() {
	defer stopResize(d.resized)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		case <-d.resized:
		}
		d.mu.Lock()
		if !d.closed {
			d.redraw()
			d.flush()
		}
		d.mu.Unlock()
	}
}

func (d *Display) rowFor(label string) *row {
	r := d.rows[label]
	if r == nil {
		r = &row{label: label, start: time.Now()}
		d.rows[label] = r
		d.order = append(d.order, label)
	}
	return r
}

// worktreeSummary tells, on a child's end line, what became of its worktree.
func worktreeSummary(w *session.WorktreeOutcome, childID string) string {
	switch worktree.Disposition(w.Disposition) {
	case worktree.DispositionRemoved:
		return "; worktree removed (no changes)"
	case worktree.DispositionKeptWork:
		return fmt.Sprintf("; worktree kept on branch %s at %s (review with `ink worktrees diff %s`)", w.Branch, w.Path, childID)
	case worktree.DispositionKeptResumed, worktree.DispositionKeptResumable:
		return fmt.Sprintf("; worktree kept (no changes) on branch %s at %s for the child's resume", w.Branch, w.Path)
	case worktree.DispositionKeptUnknown:
		return fmt.Sprintf("; worktree kept for safety at %s: %s", w.Path, w.Detail)
	default:
		return fmt.Sprintf("; worktree %s: %s (see `ink worktrees ls`)", w.Disposition, w.Detail)
	}
}

// shownModel is a model as the progress lines show it: a script model
// inside the run's directory by its path relative to it, as it was most
// likely given.
func shownModel(model, cwd string) string {
	path, ok := strings.CutPrefix(model, "script:")
	if !ok || cwd == "" || !filepath.IsAbs(path) {
		return model
	}
	if rel, err := filepath.Rel(cwd, path); err == nil && filepath.IsLocal(rel) {
		return "script:" + rel
	}
	return model
}

// Handle consumes one event.
func (d *Display) Handle(e event.Envelope) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := ""
	switch b := e.Body.(type) {
	case event.RunStart:
		r := d.rowFor(e.Agent)
		r.state = orchestrator.ChildRunning
		line = fmt.Sprintf("%s started (session %s, model %s)", e.Agent, e.Session, shownModel(b.Model, b.Cwd))
	case event.TaskQueued:
		r := d.rowFor(b.Child)
		r.queued, r.state = true, orchestrator.ChildQueued
		line = fmt.Sprintf("%s queued: the window of parallel children is full", b.Child)
	case event.TaskStart:
		r := d.rowFor(e.Agent)
		r.queued, r.state, r.start = false, orchestrator.ChildRunning, time.Now()
		r.agent = b.AgentName
		extra := ""
		if b.Worktree != "" {
			extra = " in worktree " + b.Worktree
		}
		if b.Background {
			extra += ", in the background"
		}
		line = fmt.Sprintf("%s started%s (pid %d, child %s%s)", e.Agent, agentSuffix(r.agent), b.Pid, b.ChildID, extra)
	case event.WorkerStart:
		if d.verbose {
			line = fmt.Sprintf("%s worker started (pid %d, attempt %s)", e.Agent, b.Pid, b.AttemptID)
		}
	case event.TurnStart:
		d.rowFor(e.Agent).turns = b.Turn
		if d.verbose {
			line = fmt.Sprintf("%s turn %d", e.Agent, b.Turn)
		}
	case event.Message:
		r := d.rowFor(e.Agent)
		if u := b.Message.Usage; u != nil {
			r.usage = r.usage.Add(*u)
			if d.verbose {
				line = fmt.Sprintf("%s model answered: %s in / %s out", e.Agent, orchestrator.CompactTokens(u.Input), orchestrator.CompactTokens(u.Output))
			}
		}
	case event.ToolStart:
		r := d.rowFor(e.Agent)
		r.lastTool = b.Name
		if !d.live || d.verbose {
			line = fmt.Sprintf("%s %s %s", e.Agent, b.Name, argSummary(b.Args))
		}
	case event.ToolEnd:
		if d.verbose {
			how := "done"
			if b.IsError {
				how = "failed"
			}
			line = fmt.Sprintf("%s %s %s after %s", e.Agent, b.Name, how, (time.Duration(b.DurationMs) * time.Millisecond).String())
		}
	case event.Compaction:
		line = fmt.Sprintf("%s compacted its history (%s tokens before) to fit its model's context window", e.Agent, orchestrator.CompactTokens(b.TokensBefore))
	case event.TaskEnd:
		r := d.rowFor(e.Agent)
		r.state, r.status = orchestrator.ChildEnded, b.Status
		if b.Status == orchestrator.StatusRejected {
			line = fmt.Sprintf("%s rejected: %s", e.Agent, firstLine(b.Reason))
			break
		}
		r.turns = b.Turns
		if b.Usage != nil {
			r.usage = *b.Usage
		}
		line = fmt.Sprintf("%s %s after %s: %s, %s in / %s out", e.Agent, r.status, time.Since(r.start).Round(100*time.Millisecond), orchestrator.Turns(r.turns), orchestrator.CompactTokens(r.usage.Input), orchestrator.CompactTokens(r.usage.Output))
		if b.Reason != "" && r.status != orchestrator.StatusCompleted {
			line += " — " + b.Reason
		}
		if b.Worktree != nil {
			line += worktreeSummary(b.Worktree, b.ChildID)
		}
		if d.verbose && b.Transcript != "" {
			line += "; transcript " + b.Transcript
		}
	case event.Warning:
		line = fmt.Sprintf("%s warning: %s", e.Agent, b.Text)
		if e.Agent == "ink" { // not tied to one agent (profile reloads)
			line = fmt.Sprintf("warning: %s", b.Text)
		}
	case event.RunEnd:
		r := d.rowFor(e.Agent)
		r.state, r.status = orchestrator.ChildEnded, b.Status
		line = fmt.Sprintf("%s %s after %s", e.Agent, r.status, time.Since(r.start).Round(100*time.Millisecond))
		if b.Rejected > 0 {
			line += fmt.Sprintf(" (%d task call(s) rejected)", b.Rejected)
		}
		if b.Budget != nil {
			line += fmt.Sprintf("; the tree spent %s of its %s-token budget", orchestrator.CompactTokens(b.Budget.Spent), orchestrator.CompactTokens(b.Budget.Limit))
		}
		if d.verbose && b.Transcript != "" {
			line += "; transcript " + b.Transcript
		}
	}
	if line == "" {
		return
	}
	d.print(line)
	d.flush()
}

// clear erases the live rows drawn last time: the cursor goes back up to
// the first of them, and everything from there down is erased.
func (d *Display) clear() {
	if d.drawn == 0 {
		return
	}
	d.frame.WriteString("\r" + ansi.CursorUp(d.drawn) + ansi.EraseScreenBelow)
	d.drawn = 0
}

// redraw draws one row per running or queued agent, each fitted to the
// terminal's width; on a terminal too short for them all, the last line
// tells how many more there are.
func (d *Display) redraw() {
	if !d.live {
		return
	}
	d.clear()
	labels := append([]string(nil), d.order...)
	sort.Strings(labels)
	var cells []rowCells
	for _, l := range labels {
		r := d.rows[l]
		if r.state != orchestrator.ChildRunning && r.state != orchestrator.ChildQueued {
			continue
		}
		el := time.Since(r.start).Round(time.Second)
		if r.queued {
			el = 0
		}
		cells = append(cells, rowCells{
			label: r.label, agent: strings.TrimSpace(r.agent), state: r.state,
			elapsed: el.String(), turns: orchestrator.Turns(r.turns),
			in: orchestrator.CompactTokens(r.usage.Input), out: orchestrator.CompactTokens(r.usage.Output),
			tool: r.lastTool,
		})
	}
	width, height := d.size()
	more := ""
	if height > 1 && len(cells) > height-1 {
		// The rows and the cursor's line fill the screen, no more: a row
		// scrolled off the top could not be erased.
		shown := max(height-2, 0)
		more = ansi.Truncate(fmt.Sprintf("  … and %d more", len(cells)-shown), width, "…")
		cells = cells[:shown]
	}
	for _, line := range layoutRows(cells, width) {
		d.frame.WriteString(line + "\n")
		d.drawn++
	}
	if more != "" {
		d.frame.WriteString(more + "\n")
		d.drawn++
	}
}

func agentSuffix(a string) string {
	if a == "" {
		return ""
	}
	return " as " + a
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// argSummary shortens tool arguments for a one-line display.
func argSummary(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "pattern", "path", "prompt"} {
		if s, ok := m[k].(string); ok {
			s = strings.Join(strings.Fields(s), " ")
			return orchestrator.FirstRunes(s, 60)
		}
	}
	return ""
}
