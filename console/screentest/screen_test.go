package screentest

import (
	"slices"
	"testing"
)

// write feeds s the text, one byte at a time when bytewise (as a pty may
// hand it over), then flushes.
func write(s *Screen, text string, bytewise bool) {
	if !bytewise {
		s.Write([]byte(text))
	} else {
		for i := range len(text) {
			s.Write([]byte{text[i]})
		}
	}
	s.Flush()
}

// TestScreen: what a terminal of 10 columns and 4 lines shows for what a
// program writes, whether it arrives at once or byte by byte.
func TestScreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		history    []string
		wrapped    []string
		unknown    int
	}{
		{name: "lines", text: "one\ntwo\r\nthree\n", history: []string{"one", "two", "three"}},
		{name: "a full line does not wrap", text: "0123456789\nnext\n", history: []string{"0123456789", "next"}},
		{name: "a long line wraps", text: "0123456789AB\n", history: []string{"0123456789", "AB"}, wrapped: []string{"0123456789AB"}},
		{name: "wide characters take two cells", text: "ab決済ゲートウェイ\n", history: []string{"ab決済ゲー", "トウェイ"}, wrapped: []string{"ab決済ゲートウェイ"}},
		{name: "a wide character does not fit the last cell", text: "abcdefghi決\n", history: []string{"abcdefghi", "決"}, wrapped: []string{"abcdefghi決"}},
		{name: "emoji", text: "🔒 ok\n", history: []string{"🔒 ok"}},
		{name: "cursor up and erase below", text: "log\nrow 1\nrow 2\n\r\x1b[2A\x1b[Jnew\n", history: []string{"log", "new"}},
		{name: "erase line", text: "abc\n\x1b[A\x1b[2Kx\n", history: []string{"x"}},
		{name: "erase to the end of the line", text: "abcdef\x1b[3D\x1b[K\n", history: []string{"abc"}},
		{name: "overwrite half a wide character", text: "決x\r \n", history: []string{"  x"}},
		{name: "scrolling keeps the scrollback", text: "1\n2\n3\n4\n5\n6\n", history: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "erase below does not reach the scrollback", text: "1\n2\n3\n4\n5\n\x1b[9A\x1b[J", history: []string{"1", "2"}},
		{name: "colours", text: "\x1b[1;31mred\x1b[m\n", history: []string{"red"}},
		{name: "unknown sequences are recorded", text: "\x1b[?25lx\x1b7\n", history: []string{"x"}, unknown: 2},
	} {
		for _, bytewise := range []bool{false, true} {
			s := New(10, 4)
			write(s, tc.text, bytewise)
			if got := s.History(); !slices.Equal(got, tc.history) {
				t.Errorf("%s (bytewise %v): history %q, want %q", tc.name, bytewise, got, tc.history)
			}
			if got := s.Wrapped(); !slices.Equal(got, tc.wrapped) {
				t.Errorf("%s (bytewise %v): wrapped %q, want %q", tc.name, bytewise, got, tc.wrapped)
			}
			if got := s.Unknown(); len(got) != tc.unknown {
				t.Errorf("%s (bytewise %v): unknown %q, want %d", tc.name, bytewise, got, tc.unknown)
			}
		}
	}
}

// TestScreenResize: a narrower screen cuts its lines and does not rewrap
// them; a shorter one pushes its top lines to the scrollback to keep the
// cursor on it; what follows is laid out at the new size.
func TestScreenResize(t *testing.T) {
	t.Parallel()
	s := New(10, 4)
	write(s, "0123456789\nab決\nc\n", false)
	s.Resize(3, 2)
	if w, h := s.Size(); w != 3 || h != 2 {
		t.Fatalf("size %dx%d, want 3x2", w, h)
	}
	if got, want := s.Visible(), []string{"c"}; !slices.Equal(got, want) {
		t.Errorf("visible %q, want %q", got, want)
	}
	write(s, "wxyz\n", false)
	if got, want := s.History(), []string{"012", "ab", "c", "wxy", "z"}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got, want := s.Written(), []string{"0123456789", "ab決", "c", "z"}; !slices.Equal(got, want) {
		t.Errorf("written %q, want %q", got, want)
	}
}

// TestScreenOSC: the data of OSC sequences is kept, and Changed tells of
// each write.
func TestScreenOSC(t *testing.T) {
	t.Parallel()
	s := New(10, 4)
	changed := s.Changed()
	s.Write([]byte("\x1b]0;title\x07\x1b]7777;mark\x1b\\"))
	<-changed
	if got, want := s.OSC(), []string{"0;title", "7777;mark"}; !slices.Equal(got, want) {
		t.Errorf("OSC %q, want %q", got, want)
	}
}
