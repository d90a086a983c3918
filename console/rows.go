package console

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// rowCells is one live row's fields as text, before they are fitted to the
// terminal: who (label, agent), what it is doing (state) and the details
// (elapsed time, turns, tokens, the last tool).
type rowCells struct {
	label, agent, state     string
	elapsed, turns, in, out string
	tool                    string
}

// How wide the agent column may be: at most agentCap cells, and details are
// dropped before it gets fewer than agentMin cells.
const (
	agentCap = 24
	agentMin = 8
	toolMin  = 4
)

// A detail column; the details are dropped from the last to the first
// while the rows do not fit.
type detail int

const (
	detailElapsed detail = iota
	detailTurns
	detailTokens
	detailTool
	detailCount
)

// columns are the widths, in terminal cells, the rows are aligned to.
type columns struct {
	label, agent, state, elapsed, turns, in, out, tool int
}

// natural is every column as wide as its widest field, the agent column at
// most agentCap.
func natural(rows []rowCells) columns {
	var c columns
	for _, r := range rows {
		c.label = max(c.label, ansi.StringWidth(r.label))
		c.agent = max(c.agent, ansi.StringWidth(r.agent))
		c.state = max(c.state, ansi.StringWidth(r.state))
		c.elapsed = max(c.elapsed, ansi.StringWidth(r.elapsed))
		c.turns = max(c.turns, ansi.StringWidth(r.turns))
		c.in = max(c.in, ansi.StringWidth(r.in))
		c.out = max(c.out, ansi.StringWidth(r.out))
		c.tool = max(c.tool, ansi.StringWidth(r.tool))
	}
	c.agent = min(c.agent, agentCap)
	return c
}

// widthOf is how many cells a row laid out in c with the first keep details
// takes; the agent column counts only when it is shown (agent > 0).
func (c columns) widthOf(keep detail) int {
	w := 2 + c.label + 1 + c.state
	if c.agent > 0 {
		w += c.agent + 1
	}
	if keep > detailElapsed {
		w += 1 + c.elapsed
	}
	if keep > detailTurns {
		w += 2 + c.turns
	}
	if keep > detailTokens {
		w += 2 + c.in + len(" in / ") + c.out + len(" out")
	}
	if keep > detailTool {
		w += 2 + c.tool
	}
	return w
}

// layoutRows lays the live rows out in aligned columns no wider than width
// terminal cells (each row is then one line on the terminal, never
// wrapped). Cells are counted as the terminal counts them: a CJK character
// or an emoji takes two. What gives way when the rows do not fit, in order:
// the last tool is cut short, the agent name is cut to agentMin cells
// (keeping its start, with an ellipsis), then the details go one by one
// (the tool, the tokens, the turns, the elapsed time), then the agent name
// shrinks further and goes; the label and the state stay, and are cut last.
func layoutRows(rows []rowCells, width int) []string {
	if len(rows) == 0 {
		return nil
	}
	width = max(width, 1)
	nat := natural(rows)
	c, keep := fit(nat, width)
	lines := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		b.WriteString(padRight(r.label, c.label))
		b.WriteByte(' ')
		if c.agent > 0 {
			b.WriteString(padRight(ansi.Truncate(r.agent, c.agent, "…"), c.agent))
			b.WriteByte(' ')
		}
		b.WriteString(padRight(r.state, c.state))
		if keep > detailElapsed {
			b.WriteString(" " + padLeft(r.elapsed, c.elapsed))
		}
		if keep > detailTurns {
			b.WriteString("  " + padLeft(r.turns, c.turns))
		}
		if keep > detailTokens {
			b.WriteString("  " + padLeft(r.in, c.in) + " in / " + padLeft(r.out, c.out) + " out")
		}
		if keep > detailTool {
			b.WriteString("  " + ansi.Truncate(r.tool, c.tool, "…"))
		}
		line := b.String()
		if keep <= detailTool {
			line = strings.TrimRight(line, " ")
		}
		// The label and the state alone may still be too wide for a very
		// narrow terminal: cut them rather than let the line wrap.
		lines[i] = ansi.Truncate(line, width, "…")
	}
	return lines
}

// fit picks the column widths and how many details the rows keep at width.
func fit(nat columns, width int) (columns, detail) {
	for keep := detailCount; ; keep-- {
		c := nat
		c.tool = min(nat.tool, toolMin) // the least the tool may take
		if keep == detailElapsed || c.widthOf(keep) > width {
			// The agent name shrinks before the next detail goes; with no
			// detail left, it takes what there is or goes.
			least := min(nat.agent, agentMin)
			if keep == detailElapsed {
				least = min(nat.agent, 2)
			}
			c.agent = 0
			room := width - c.widthOf(keep) - 1
			switch {
			case nat.agent > 0 && room >= least:
				c.agent = min(room, nat.agent)
			case keep > detailElapsed:
				continue
			}
		}
		if keep > detailTool {
			// The tool takes what is left.
			c.tool = 0
			c.tool = min(nat.tool, width-c.widthOf(keep))
		}
		return c, keep
	}
}

// padRight pads s with spaces to w cells.
func padRight(s string, w int) string {
	return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
}

// padLeft pads s with spaces on the left to w cells.
func padLeft(s string, w int) string {
	return strings.Repeat(" ", max(w-ansi.StringWidth(s), 0)) + s
}
