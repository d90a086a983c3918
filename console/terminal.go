package console

import (
	"io"
	"os"

	"golang.org/x/term"
)

// defaultWidth is the width the live rows are fitted to when the terminal
// does not tell its own: that of a classic terminal.
const defaultWidth = 80

// size reports the terminal's width and height in cells; a height of 0
// means unknown (the rows are then not cut to fit it).
type size func() (width, height int)

// terminalSize returns the size of the terminal w writes to, read afresh on
// each call, or the default width when w is not a terminal that tells it.
func terminalSize(w io.Writer) size {
	f, ok := w.(*os.File)
	if !ok {
		return func() (int, int) { return defaultWidth, 0 }
	}
	fd := int(f.Fd())
	return func() (int, int) {
		width, height, err := term.GetSize(fd)
		if err != nil || width <= 0 {
			return defaultWidth, 0
		}
		return width, max(height, 0)
	}
}
