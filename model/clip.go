package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// ClipMessage returns m with every piece longer than limit bytes — a tool
// result, a text or thinking block, a call's arguments — cut to its start
// and end around a note "[… N bytes of this result left out <where> …]".
// Arguments, which must stay JSON, become an object holding the note; a
// clipped thinking block loses its signature. m is not changed; a limit of
// 0 or less clips nothing.
func ClipMessage(m Message, limit int, where string) Message {
	if limit <= 0 {
		return m
	}
	if slices.ContainsFunc(m.Results, func(r ToolResult) bool { return len(r.Content) > limit }) {
		m.Results = slices.Clone(m.Results)
		for j := range m.Results {
			m.Results[j].Content = clipMiddle(m.Results[j].Content, limit, "result", where)
		}
	}
	if slices.ContainsFunc(m.Content, func(b Block) bool { return len(b.Text) > limit }) {
		m.Content = slices.Clone(m.Content)
		for j := range m.Content {
			if b := &m.Content[j]; len(b.Text) > limit {
				b.Text, b.Signature = clipMiddle(b.Text, limit, b.Type, where), ""
			}
		}
	}
	if slices.ContainsFunc(m.ToolCalls, func(c ToolCall) bool { return len(c.Args) > limit }) {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			if c := &m.ToolCalls[j]; len(c.Args) > limit {
				note := fmt.Sprintf("[… %d bytes of arguments left out %s …]", len(c.Args), where)
				c.Args, _ = json.Marshal(map[string]string{"ink_note": note})
			}
		}
	}
	return m
}

// clipMiddle returns s when it fits limit, else its start and end with a
// note naming what (a "result", "text" block…) was left out between them.
func clipMiddle(s string, limit int, what, where string) string {
	if len(s) <= limit {
		return s
	}
	head, tail := ClipText(s, limit/2), clipStart(s, limit/2)
	return head + fmt.Sprintf("\n[… %d bytes of this %s left out %s …]\n", len(s)-len(head)-len(tail), what, where) + tail
}

// clipStart returns at most n bytes from the end of s, cut on a character
// boundary.
func clipStart(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
