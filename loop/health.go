package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

// Health watch limits.
const (
	// DefaultToolOpenLimit is how long a tool may run before the watch
	// reports it, when HealthOptions.ToolOpenLimit is zero.
	DefaultToolOpenLimit = 10 * time.Minute
	// RepeatTurns is how many consecutive turns must make the same call
	// (same tool, same arguments) before the watch reports it.
	RepeatTurns = 5
	// FailedEdits is how many failed edit or write calls within
	// FailedEditsWindow the watch reports.
	FailedEdits       = 3
	FailedEditsWindow = 5 * time.Minute
)

// HealthOptions configures the health watch. The zero value watches with
// the defaults.
type HealthOptions struct {
	// Off turns the watch off (the worker sets it when INK_HEALTH=0).
	Off bool
	// ToolOpenLimit is how long a tool may run before it is reported;
	// <= 0 means DefaultToolOpenLimit.
	ToolOpenLimit time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// healthWatch makes the observations of one run. It reports what it sees
// and judges nothing: the run goes on as it would have. It is used from
// the run's goroutine only.
type healthWatch struct {
	off   bool
	limit time.Duration
	now   func() time.Time
	// streaks maps the key (tool and canonical arguments) of each call of
	// the previous turn to the first turn of its run of consecutive turns.
	streaks map[string]int
	// failed holds the times of failed edit/write calls not yet reported.
	failed []time.Time
}

func newHealthWatch(o HealthOptions) *healthWatch {
	h := &healthWatch{off: o.Off, limit: o.ToolOpenLimit, now: o.Now, streaks: map[string]int{}}
	if h.limit <= 0 {
		h.limit = DefaultToolOpenLimit
	}
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

// turn takes the calls of one assistant turn and reports any call made in
// RepeatTurns consecutive turns, once per run of turns.
func (h *healthWatch) turn(turn int, calls []model.ToolCall) []string {
	if h.off {
		return nil
	}
	next := make(map[string]int, len(calls))
	var lines []string
	for _, c := range calls {
		key := c.Name + " " + canonicalArgs(c.Args)
		if _, seen := next[key]; seen {
			continue
		}
		first, ok := h.streaks[key]
		if !ok {
			first = turn
		}
		next[key] = first
		if turn-first+1 == RepeatTurns {
			lines = append(lines, fmt.Sprintf("the same call to %s %s in %d consecutive turns (turns %d-%d)",
				c.Name, shorten(canonicalArgs(c.Args), 120), RepeatTurns, first, turn))
		}
	}
	h.streaks = next
	return lines
}

// result takes the result of a call and reports FailedEdits failed edit or
// write calls within FailedEditsWindow; the count starts again after a
// report.
func (h *healthWatch) result(call model.ToolCall, res model.ToolResult) []string {
	if h.off || !res.IsError || (call.Name != "edit" && call.Name != "write") {
		return nil
	}
	now := h.now()
	kept := h.failed[:0]
	for _, t := range h.failed {
		if now.Sub(t) < FailedEditsWindow {
			kept = append(kept, t)
		}
	}
	h.failed = append(kept, now)
	if len(h.failed) < FailedEdits {
		return nil
	}
	h.failed = h.failed[:0]
	why := strings.TrimSpace(res.Content)
	if i := strings.IndexByte(why, '\n'); i >= 0 {
		why = why[:i]
	}
	return []string{fmt.Sprintf("%d failed edit/write calls within %s (the last: %s %s: %s)",
		FailedEdits, FailedEditsWindow, call.Name, shorten(canonicalArgs(pathOnly(call.Args)), 80), shorten(why, 160))}
}

// openTooLong words the report of a call whose tool has run longer than
// the limit.
func (h *healthWatch) openTooLong(call model.ToolCall) string {
	return fmt.Sprintf("tool %s %s has been running for more than %s", call.Name, shorten(canonicalArgs(call.Args), 120), h.limit)
}

// observe records health lines in the Result and sends each as a warning.
func (r *runner) observe(turn int, lines []string) {
	for _, l := range lines {
		r.res.Health = append(r.res.Health, l)
		r.emit(Event{Type: EventWarning, Turn: turn, Text: l})
	}
}

// canonicalArgs renders call arguments as compact JSON with sorted keys, so
// that the same arguments written differently compare equal. Arguments that
// are not JSON are compared as they are.
func canonicalArgs(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// pathOnly keeps the path of edit/write arguments, the part that says
// which file; the rest (the content) would only clutter the report.
func pathOnly(raw json.RawMessage) json.RawMessage {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Path == "" {
		return raw
	}
	b, _ := json.Marshal(a)
	return b
}

// shorten cuts s to at most n bytes on a character boundary, ending in "…"
// when it was cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
