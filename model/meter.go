package model

import (
	"encoding/json"
	"strings"
)

// ReplyMeter counts what one streamed reply brought against the reply
// bound and the tool-argument bound. A provider's accumulator keeps one
// per Stream call and stops reading once TooLarge is set. The zero value
// is ready; it is not safe for concurrent use.
type ReplyMeter struct {
	size int64
	// TooLarge is set once the reply passed MaxReplyBytes.
	TooLarge *ReplyTooLargeError
}

// Text counts a piece of text or thinking and returns the part of it that
// fits the reply bound.
func (m *ReplyMeter) Text(s string) string {
	room := MaxReplyBytes - m.size
	m.size += int64(len(s))
	if m.size > MaxReplyBytes {
		m.TooLarge = &ReplyTooLargeError{}
		return ClipText(s, int(max(room, 0)))
	}
	return s
}

// Args counts a piece of the arguments of the call named name into a: past
// MaxToolArgBytes the arguments are dropped (a keeps counting), past
// MaxReplyBytes the reply is TooLarge.
func (m *ReplyMeter) Args(a *ToolArgsBuffer, name, piece string) {
	m.size += int64(len(piece))
	a.n += int64(len(piece))
	switch {
	case m.size > MaxReplyBytes:
		m.TooLarge = &ReplyTooLargeError{}
		if a.dropped {
			m.TooLarge.Dropped = name
		}
	case a.n > MaxToolArgBytes:
		a.dropped = true
		a.b.Reset()
	default:
		a.b.WriteString(piece)
	}
}

// ToolArgsBuffer gathers the streamed arguments of one tool call (see
// ReplyMeter.Args). The zero value is ready.
type ToolArgsBuffer struct {
	b       strings.Builder
	n       int64 // the bytes received
	dropped bool  // they passed MaxToolArgBytes and were dropped
}

// Args returns the call's Args and Invalid (ToolArgs, or DroppedArgs when
// the arguments passed the tool-argument bound).
func (a *ToolArgsBuffer) Args() (json.RawMessage, string) {
	if a.dropped {
		return DroppedArgs(a.n)
	}
	return ToolArgs(a.b.String())
}
