package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// The bounds on what one model reply may bring. A model is an input ink
// does not control: a broken or hostile one can stream without end. Each
// bound is far above what a model writes in one reply (the largest output
// limits are a few hundred thousand tokens, about 1–2 MB), and below what
// would make a worker's memory or a transcript line grow without limit.
const (
	// MaxReplyBytes is the reply bound: the text, thinking and tool
	// arguments of one reply, and any one line of its response stream.
	// Past it a provider stops reading and the reply fails with a
	// *ReplyTooLargeError; what text came is kept, cut at the bound.
	MaxReplyBytes = 8 << 20
	// MaxToolArgBytes is the tool-argument bound: the arguments of one
	// tool call. Past it a provider keeps reading the reply but drops the
	// call's arguments; the call is answered with an error result and
	// never runs (ToolCall.Invalid).
	MaxToolArgBytes = 1 << 20
)

// ReplyTooLargeError is a reply that passed MaxReplyBytes. It is never
// worth retrying: the model would write the same again.
type ReplyTooLargeError struct {
	// Line is set when one line of the response stream passed the bound
	// (the reply's content is then unknown).
	Line bool
	// Dropped names the tool call whose arguments were being dropped when
	// the reply passed the bound (they passed MaxToolArgBytes first).
	Dropped string
}

// Error names the bound and says what to do.
func (e *ReplyTooLargeError) Error() string {
	what := "the model's reply passed ink's reply bound of " + SizeString(MaxReplyBytes) + " (text, thinking and tool arguments of one reply)"
	if e.Line {
		what = "one line of the model's response stream passed ink's reply bound of " + SizeString(MaxReplyBytes)
	}
	if e.Dropped != "" {
		what += fmt.Sprintf("; the arguments of its %s call alone passed the tool-argument bound of %s", e.Dropped, SizeString(MaxToolArgBytes))
	}
	return what + ", so ink stopped reading it and kept only the text before the bound. A reply this large is a model looping or asked for too much at once: ask for the work in smaller steps, with long output written to files part by part"
}

// SizeString writes a byte count as people read it: "8 MiB", "512 KiB",
// "300 bytes".
func SizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// NewReplyTooLargeError returns the *ProviderError of a reply that passed
// MaxReplyBytes: not retryable, its message naming the bound.
func NewReplyTooLargeError(provider string, e *ReplyTooLargeError) *ProviderError {
	return &ProviderError{
		Provider: provider, Kind: KindOther, Reason: "reply too large", Err: e,
		Message: provider + ": " + e.Error(),
	}
}

// ToolArgs turns the raw arguments a model streamed for one call into
// the call's Args and, when they cannot be used, the reason for its
// Invalid field. Empty arguments are "{}". Arguments that are not valid
// JSON are kept as a JSON string, so that the transcript stays valid and
// shows what the model sent; the reason says what is wrong with them.
func ToolArgs(raw string) (json.RawMessage, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return json.RawMessage("{}"), ""
	}
	args := json.RawMessage(raw)
	if json.Valid(args) {
		return args, ""
	}
	var probe json.RawMessage
	why := "unexpected end of JSON input"
	if err := json.Unmarshal(args, &probe); err != nil {
		why = err.Error()
	}
	quoted, _ := json.Marshal(raw)
	return quoted, fmt.Sprintf("its arguments are not valid JSON (%s); send them as one JSON object that matches the tool's schema", why)
}

// DroppedArgs is the Args and Invalid of a call whose arguments passed
// MaxToolArgBytes and were dropped after n bytes.
func DroppedArgs(n int64) (json.RawMessage, string) {
	return json.RawMessage("{}"), fmt.Sprintf("its arguments passed ink's tool-argument bound of %s (more than %s arrived), so ink dropped them. Send large content in parts of under %s each: for example write the first part, then append the rest with edit, or generate it with a bash command",
		SizeString(MaxToolArgBytes), SizeString(n), SizeString(MaxToolArgBytes))
}

// ReplyBytes is the size of m's content as the reply bound counts it: its
// text and thinking and its tool calls' arguments.
func ReplyBytes(m Message) int64 {
	var n int64
	for _, b := range m.Content {
		n += int64(len(b.Text))
	}
	for _, c := range m.ToolCalls {
		n += int64(len(c.Args))
	}
	return n
}

// ClipText returns s cut to at most limit bytes on a character boundary.
func ClipText(s string, limit int) string {
	if limit >= len(s) {
		return s
	}
	for limit > 0 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return s[:limit]
}

// lineGuardTransport wraps every response body of base in a LineGuard.
type lineGuardTransport struct{ base http.RoundTripper }

func (t lineGuardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err == nil {
		res.Body = LineGuard(res.Body)
	}
	return res, err
}

// LineGuard wraps a response body so that a line longer than
// MaxReplyBytes fails the read with a *ReplyTooLargeError instead of
// being buffered whole by an SSE reader. Closing it closes body.
func LineGuard(body io.ReadCloser) io.ReadCloser {
	return &lineGuard{body: body}
}

type lineGuard struct {
	body io.ReadCloser
	run  int64 // bytes since the last newline
	err  error
}

func (g *lineGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	for rest := p[:n]; ; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			g.run += int64(len(rest))
			break
		}
		if g.run+int64(i) > MaxReplyBytes {
			g.run += int64(i)
			break
		}
		g.run, rest = 0, rest[i+1:]
	}
	if g.run > MaxReplyBytes {
		g.err = &ReplyTooLargeError{Line: true}
		return 0, g.err
	}
	return n, err
}

func (g *lineGuard) Close() error { return g.body.Close() }

// IsReplyTooLarge reports whether err is or wraps a *ReplyTooLargeError.
//
// It is kept for the tests of the providers and the loop, which check that
// a reply over the bound fails with this error; ink itself returns it
// (NewReplyTooLargeError) and never branches on it.
func IsReplyTooLarge(err error) bool {
	var e *ReplyTooLargeError
	return errors.As(err, &e)
}
