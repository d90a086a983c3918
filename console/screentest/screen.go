// Package screentest is a small terminal for tests of what ink draws: it
// interprets the bytes a program writes to a terminal of a given size (the
// cursor moves, line erases and text of ink's live display) and keeps what
// the terminal would show, its scrollback included, as lines of text.
//
// Text is placed cell by cell, a wide character (CJK, most emoji) taking
// two cells as in a terminal (github.com/charmbracelet/x/ansi measures
// it). A line longer than the width wraps onto the next, as a terminal
// with autowrap does, and the Screen records it. A line feed also returns
// the cursor to the first column, as a terminal behind a tty with onlcr
// (the default) shows a program's "\n". A resize cuts lines to the new
// width and does not rewrap them, as xterm does. Sequences it does not
// interpret are recorded, so that a test can fail on them rather than
// pass over them.
package screentest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
)

// cell is one cell of the screen: the text of a grapheme, or "" for the
// second cell of a wide one or an empty cell.
type cell struct {
	text string
	wide bool // the text takes this cell and the next
}

// Screen is a terminal of a fixed size. It is safe for concurrent use: one
// goroutine may Write what a program prints while another reads it.
type Screen struct {
	mu            sync.Mutex
	width, height int
	lines         [][]cell // the visible screen, height lines
	scrollback    []string // lines scrolled off the top, oldest first
	x, y          int      // the cursor; x == width means a wrap is pending
	pending       []byte   // the start of a sequence not yet complete
	parser        *ansi.Parser
	wrapped       []string        // lines that were too long for the width
	current       strings.Builder // the text printed since the last line feed
	wraps         bool            // the current line has wrapped
	written       []string        // each line as it stood when a line feed left it
	unknown       []string        // sequences the screen does not interpret
	osc           []string        // the data of each OSC sequence
	changed       chan struct{}
}

// New returns an empty screen of width columns and height lines, the cursor
// at the top left.
func New(width, height int) *Screen {
	s := &Screen{parser: ansi.NewParser(), changed: make(chan struct{})}
	s.resize(width, height)
	return s
}

// Write interprets p. A sequence or character cut at the end of p waits
// for the next Write (or Flush). It never fails.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, p...)
	s.interpret(false)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// Flush interprets what Write held back, once the program has written all
// it will.
func (s *Screen) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interpret(true)
	if s.wraps {
		s.wrapped = append(s.wrapped, s.current.String())
		s.current.Reset()
		s.wraps = false
	}
}

// Changed returns a channel closed at the next Write: wait on it, then
// look again.
func (s *Screen) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Resize makes the screen width columns and height lines. Lines are cut
// to the new width, not rewrapped; when the screen gets shorter its top
// lines go to the scrollback, as far as needed to keep the cursor on it.
func (s *Screen) Resize(width, height int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resize(width, height)
}

// Size returns the screen's width and height.
func (s *Screen) Size() (width, height int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.width, s.height
}

// Visible returns the lines of the screen, top to bottom, each up to its
// last written cell; trailing empty lines are left out.
func (s *Screen) Visible() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return trimEmpty(s.visible())
}

// History returns the scrollback and then the visible lines: all the
// terminal still shows or lets scroll back to, trailing empty lines left
// out.
func (s *Screen) History() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return trimEmpty(append(append([]string(nil), s.scrollback...), s.visible()...))
}

// Wrapped returns each line the terminal had to wrap because the program
// wrote past the last column: the text printed from the line feed before
// to the line feed after, whole.
func (s *Screen) Wrapped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.wrapped...)
}

// Written returns each line as it stood when a line feed left it, in
// order: every line the program finished, including those it later
// erased.
func (s *Screen) Written() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.written...)
}

// Unknown returns the sequences the screen did not interpret, quoted.
func (s *Screen) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

// OSC returns the data of every OSC sequence written ("0;title" for a
// title), in order. A test may write one of its own to the terminal to
// learn when the screen has read everything written before it.
func (s *Screen) OSC() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.osc...)
}

func (s *Screen) resize(width, height int) {
	width, height = max(width, 1), max(height, 1)
	for i, l := range s.lines {
		if len(l) > width {
			l = l[:width]
			if l[width-1].wide {
				l[width-1] = cell{}
			}
			s.lines[i] = l
		}
		for len(s.lines[i]) < width {
			s.lines[i] = append(s.lines[i], cell{})
		}
	}
	for len(s.lines) > height {
		if s.y < len(s.lines)-1 && lineText(s.lines[len(s.lines)-1]) == "" {
			s.lines = s.lines[:len(s.lines)-1]
			continue
		}
		s.scrollback = append(s.scrollback, lineText(s.lines[0]))
		s.lines = s.lines[1:]
		s.y--
	}
	for len(s.lines) < height {
		s.lines = append(s.lines, make([]cell, width))
	}
	s.width, s.height = width, height
	s.x = min(s.x, width-1)
	s.y = min(max(s.y, 0), height-1)
}

// interpret consumes s.pending; unless all, a sequence or grapheme that
// reaches its end may be incomplete and stays for the next write.
func (s *Screen) interpret(all bool) {
	for len(s.pending) > 0 {
		seq, width, n, state := ansi.DecodeSequence(s.pending, ansi.NormalState, s.parser)
		if n == 0 { // not a sequence at all: skip the byte
			s.unknown = append(s.unknown, fmt.Sprintf("%q", s.pending[:1]))
			s.pending = s.pending[1:]
			continue
		}
		cut := state != ansi.NormalState || width > 0 || seq[0] >= 0xc0 // a sequence, grapheme or rune that may go on
		if n == len(s.pending) && !all && cut {
			return
		}
		s.pending = s.pending[n:]
		s.apply(seq, width)
	}
}

// apply interprets one decoded sequence.
func (s *Screen) apply(seq []byte, width int) {
	switch {
	case width > 0:
		s.print(string(seq), width)
	case len(seq) == 1 && (seq[0] < 0x20 || seq[0] == 0x7f):
		s.control(seq[0])
	case ansi.HasCsiPrefix(seq):
		s.csi(seq)
	case ansi.HasOscPrefix(seq):
		s.osc = append(s.osc, string(s.parser.Data()))
	default:
		s.unknown = append(s.unknown, fmt.Sprintf("%q", seq))
	}
}

func (s *Screen) control(c byte) {
	switch c {
	case '\r':
		s.x = 0
	case '\n':
		s.written = append(s.written, lineText(s.lines[s.y]))
		if s.wraps {
			s.wrapped = append(s.wrapped, s.current.String())
		}
		s.current.Reset()
		s.wraps = false
		s.x = 0
		s.lineFeed()
	case '\b':
		s.x = max(min(s.x, s.width-1)-1, 0)
	case '\t':
		s.x = min((s.x/8+1)*8, s.width-1)
	case 0x07: // bell
	default:
		s.unknown = append(s.unknown, fmt.Sprintf("%q", []byte{c}))
	}
}

// lineFeed moves the cursor down a line, scrolling the top line off the
// screen at the bottom.
func (s *Screen) lineFeed() {
	if s.y < s.height-1 {
		s.y++
		return
	}
	s.scrollback = append(s.scrollback, lineText(s.lines[0]))
	s.lines = append(s.lines[1:], make([]cell, s.width))
}

// print puts a grapheme of w cells at the cursor, wrapping first if it
// does not fit on the line.
func (s *Screen) print(text string, w int) {
	w = min(w, s.width)
	s.current.WriteString(text)
	if s.x+w > s.width {
		s.wraps = true
		s.x = 0
		s.lineFeed()
	}
	line := s.lines[s.y]
	s.free(line, s.x)
	if w == 2 {
		s.free(line, s.x+1)
		line[s.x+1] = cell{}
	}
	line[s.x] = cell{text: text, wide: w == 2}
	s.x += w
}

// free blanks the wide character cell i of line belongs to, if any.
func (s *Screen) free(line []cell, i int) {
	if i > 0 && line[i-1].wide {
		line[i-1] = cell{}
	}
	if line[i].wide && i+1 < len(line) {
		line[i+1] = cell{}
	}
	line[i] = cell{}
}

// csi interprets the control sequence just decoded.
func (s *Screen) csi(seq []byte) {
	cmd := ansi.Cmd(s.parser.Command())
	param := func(i, def int) int {
		n, _ := s.parser.Param(i, def)
		if n == 0 {
			return def
		}
		return n
	}
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		s.unknown = append(s.unknown, fmt.Sprintf("%q", seq))
		return
	}
	x := min(s.x, s.width-1) // a pending wrap ends with any move
	switch cmd.Final() {
	case 'A': // CUU
		s.x, s.y = x, max(s.y-param(0, 1), 0)
	case 'B': // CUD
		s.x, s.y = x, min(s.y+param(0, 1), s.height-1)
	case 'C': // CUF
		s.x = min(x+param(0, 1), s.width-1)
	case 'D': // CUB
		s.x = max(x-param(0, 1), 0)
	case 'E': // CNL
		s.x, s.y = 0, min(s.y+param(0, 1), s.height-1)
	case 'F': // CPL
		s.x, s.y = 0, max(s.y-param(0, 1), 0)
	case 'G': // CHA
		s.x = min(param(0, 1), s.width) - 1
	case 'H', 'f': // CUP
		s.y, s.x = min(param(0, 1), s.height)-1, min(param(1, 1), s.width)-1
	case 'K': // EL
		n, _ := s.parser.Param(0, 0)
		s.x = x
		s.erase(s.y, n)
	case 'J': // ED
		n, _ := s.parser.Param(0, 0)
		s.x = x
		switch n {
		case 0:
			s.erase(s.y, 0)
			for y := s.y + 1; y < s.height; y++ {
				s.erase(y, 2)
			}
		case 1:
			s.erase(s.y, 1)
			for y := 0; y < s.y; y++ {
				s.erase(y, 2)
			}
		case 2:
			for y := range s.height {
				s.erase(y, 2)
			}
		case 3:
			s.scrollback = nil
		default:
			s.unknown = append(s.unknown, fmt.Sprintf("%q", seq))
		}
	case 'm': // SGR: colours and styles do not change the text
	default:
		s.unknown = append(s.unknown, fmt.Sprintf("%q", seq))
	}
}

// erase erases line y: from the cursor to its end (how 0), from its start
// to the cursor (1) or all of it (2).
func (s *Screen) erase(y, how int) {
	line := s.lines[y]
	from, to := 0, len(line)
	switch how {
	case 0:
		from = min(s.x, len(line))
	case 1:
		to = min(s.x+1, len(line))
	}
	for i := from; i < to; i++ {
		s.free(line, i)
	}
}

func (s *Screen) visible() []string {
	out := make([]string, len(s.lines))
	for i, l := range s.lines {
		out[i] = lineText(l)
	}
	return out
}

// lineText is a line's text up to its last written cell: spaces the
// program wrote stay, empty cells after them do not show.
func lineText(l []cell) string {
	end := len(l)
	for end > 0 && l[end-1].text == "" && (end < 2 || !l[end-2].wide) {
		end--
	}
	var b strings.Builder
	for i, c := range l[:end] {
		switch {
		case c.text != "":
			b.WriteString(c.text)
		case i > 0 && l[i-1].wide:
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func trimEmpty(lines []string) []string {
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
