package orchestrator

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// JSONLines returns a sink that writes each event as one JSON line to w
// (the `--json` stream). It is safe for concurrent use.
func JSONLines(w io.Writer) func(Event) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	}
}

// Display renders events for people on stderr: live rows per child on a
// terminal, plain lines otherwise. It is safe for concurrent use; Close
// stops the live redraw.
type Display struct {
	w    io.Writer
	live bool

	mu     sync.Mutex
	rows   map[string]*row
	order  []string
	drawn  int
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
	status   string
	queued   bool
}

// NewDisplay returns a display writing to w; live selects redrawn rows.
func NewDisplay(w io.Writer, live bool) *Display {
	d := &Display{w: w, live: live, rows: map[string]*row{}, stop: make(chan struct{})}
	if live {
		go d.tick()
	}
	return d
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
	}
}

func (d *Display) tick() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.mu.Lock()
			d.redraw()
			d.mu.Unlock()
		}
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
func worktreeSummary(w *session.WorktreeOutcome, childID any) string {
	switch w.Disposition {
	case "removed":
		return "; worktree removed (no changes)"
	case "kept-work":
		return fmt.Sprintf("; worktree kept on branch %s at %s (review with `ink worktrees diff %v`)", w.Branch, w.Path, childID)
	case "kept-resumed", "kept-resumable":
		return fmt.Sprintf("; worktree kept (no changes) on branch %s at %s for the child's resume", w.Branch, w.Path)
	case "kept-unknown":
		return fmt.Sprintf("; worktree kept for safety at %s: %s", w.Path, w.Detail)
	default:
		return fmt.Sprintf("; worktree %s: %s (see `ink worktrees ls`)", w.Disposition, w.Detail)
	}
}

// Handle consumes one event.
func (d *Display) Handle(e Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := ""
	switch e.Type {
	case "run.start":
		r := d.rowFor(e.Agent)
		r.status = "running"
		line = fmt.Sprintf("%s started (session %s, model %v)", e.Agent, e.Session, e.Fields["model"])
	case "task.queued":
		child, _ := e.Fields["child"].(string)
		r := d.rowFor(child)
		r.queued, r.status = true, "queued"
		line = fmt.Sprintf("%s queued: the window of parallel children is full", child)
	case "task.start":
		r := d.rowFor(e.Agent)
		r.queued, r.status, r.start = false, "running", time.Now()
		r.agent, _ = e.Fields["agentName"].(string)
		extra := ""
		if wt, _ := e.Fields["worktree"].(string); wt != "" {
			extra = " in worktree " + wt
		}
		line = fmt.Sprintf("%s started%s (pid %v, child %v%s)", e.Agent, agentSuffix(r.agent), e.Fields["pid"], e.Fields["childId"], extra)
	case "turn.start":
		r := d.rowFor(e.Agent)
		if t, ok := e.Fields["turn"].(float64); ok {
			r.turns = int(t)
		}
	case "message":
		r := d.rowFor(e.Agent)
		if u := usageField(e.Fields); u != nil {
			r.usage = r.usage.Add(*u)
		}
	case "tool.start":
		r := d.rowFor(e.Agent)
		name, _ := e.Fields["name"].(string)
		r.lastTool = name
		if !d.live {
			line = fmt.Sprintf("%s %s %s", e.Agent, name, argSummary(e.Fields["args"]))
		}
	case "task.end":
		r := d.rowFor(e.Agent)
		r.status, _ = e.Fields["status"].(string)
		if t, ok := e.Fields["turns"].(int); ok {
			r.turns = t
		}
		if u, ok := e.Fields["usage"].(model.Usage); ok {
			r.usage = u
		}
		line = fmt.Sprintf("%s %s after %s: %d turns, %s in / %s out", e.Agent, r.status, time.Since(r.start).Round(100*time.Millisecond), r.turns, CompactTokens(r.usage.Input), CompactTokens(r.usage.Output))
		if reason, _ := e.Fields["reason"].(string); reason != "" && r.status != "completed" {
			line += " — " + reason
		}
		if w, ok := e.Fields["worktree"].(*session.WorktreeOutcome); ok && w != nil {
			line += worktreeSummary(w, e.Fields["childId"])
		}
	case "warning":
		line = fmt.Sprintf("%s warning: %v", e.Agent, e.Fields["text"])
		if e.Agent == "ink" { // not tied to one agent (profile reloads)
			line = fmt.Sprintf("warning: %v", e.Fields["text"])
		}
	case "run.end":
		r := d.rowFor(e.Agent)
		r.status, _ = e.Fields["status"].(string)
		line = fmt.Sprintf("%s %s after %s", e.Agent, r.status, time.Since(r.start).Round(100*time.Millisecond))
	}
	if line == "" {
		return
	}
	if d.live {
		d.clear()
		fmt.Fprintf(d.w, "ink: %s\n", line)
		d.redraw()
		return
	}
	fmt.Fprintf(d.w, "ink: %s\n", line)
}

// clear erases the live rows drawn last time.
func (d *Display) clear() {
	for i := 0; i < d.drawn; i++ {
		fmt.Fprint(d.w, "\x1b[1A\x1b[2K")
	}
	d.drawn = 0
}

// redraw draws one row per running or queued agent.
func (d *Display) redraw() {
	if !d.live {
		return
	}
	d.clear()
	labels := append([]string(nil), d.order...)
	sort.Strings(labels)
	for _, l := range labels {
		r := d.rows[l]
		if r.status != "running" && r.status != "queued" {
			continue
		}
		el := time.Since(r.start).Round(time.Second)
		if r.queued {
			el = 0
		}
		fmt.Fprintf(d.w, "  %-10s %-12s %-8s %6s  %2d turns  %6s in / %6s out  %s\n", r.label, strings.TrimSpace(r.agent), r.status, el, r.turns, CompactTokens(r.usage.Input), CompactTokens(r.usage.Output), r.lastTool)
		d.drawn++
	}
}

func agentSuffix(a string) string {
	if a == "" {
		return ""
	}
	return " as " + a
}

func usageField(f map[string]any) *model.Usage {
	m, ok := f["message"].(map[string]any)
	if !ok {
		return nil
	}
	u, ok := m["usage"].(map[string]any)
	if !ok {
		return nil
	}
	num := func(k string) int64 {
		v, _ := u[k].(float64)
		return int64(v)
	}
	return &model.Usage{Input: num("input"), Output: num("output"), CacheRead: num("cacheRead"), CacheWrite: num("cacheWrite")}
}

// argSummary shortens tool arguments for a one-line display.
func argSummary(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"command", "pattern", "path", "prompt"} {
		if s, ok := m[k].(string); ok {
			s = strings.Join(strings.Fields(s), " ")
			return firstRunes(s, 60)
		}
	}
	return ""
}
