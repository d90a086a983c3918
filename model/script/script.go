// Package script owns ink's offline, deterministic model: a YAML file of rules
// that answers every model request with a scripted reply (text, tool calls, a
// delay, usage or an error). It exists for tests, benchmarks and the demo, so
// that everything ink does can run without a network or an API key.
//
// A script file looks like this:
//
//	rules:
//	  - when:              # all optional; all given must hold
//	      agent: scout     # Request.Agent, exact ("" = no profile)
//	      depth: 1         # Request.Depth
//	      user: "login"    # regexp on the newest user message
//	      tool: grep       # the newest message holds a result of this tool
//	      result: "auth/"  # regexp on such a result (of `tool` when given)
//	      turn: 2          # Request.Turn, 1-based
//	      compaction: true # the request for a compaction summary (see below)
//	    reply:
//	      text: "Entry point is src/auth/login.go"
//	      calls:
//	        - {tool: read, args: {path: src/auth/login.go}}
//	      delay: 200ms     # wait first; honours cancellation
//	      error: "overloaded"  # fail the request instead
//	      usage: {input: 1200, output: 80, cacheRead: 0, cacheWrite: 0}
//
// The first rule whose conditions all hold gives the reply. Load rejects an
// unknown key anywhere (outside a call's args), a bad regexp, a bad duration,
// a value of the wrong type and an empty rule list, each as
// "PATH:LINE: what is wrong (how to fix)".
//
// Two things exist for the agent loop's compaction. A top-level
// `contextWindow: N` (tokens) is the window the script reports
// (model.WindowReporter), so that replies with a scripted `usage` make the
// loop compact at a chosen turn. The request for a compaction summary
// (model.Request.Compaction) is answered only by a rule with
// `compaction: true`, and such a rule answers nothing else (its `turn` is
// the turn the compaction is made for, which tells compactions apart); a
// reply whose
// `error` says the prompt is too long fails as a real provider's context
// overflow does (model.KindContextLength), with zero usage unless the reply
// gives one.
package script

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

// ModelName is the Model of every assistant message a Script produces.
const ModelName = "script"

// Script is a loaded script model. It is immutable after Load and safe for
// concurrent use; it holds no resource that needs closing.
type Script struct {
	path          string
	rules         []rule
	contextWindow int64 // 0 = not given
}

var (
	_ model.Provider       = (*Script)(nil)
	_ model.WindowReporter = (*Script)(nil)
)

// rule is one entry of the rules list.
type rule struct {
	line  int // line of the rule in the script, for messages
	when  condition
	reply reply
}

// condition holds the `when` of a rule; a nil field is not checked.
type condition struct {
	agent  *string
	depth  *int
	user   *regexp.Regexp
	tool   *string
	result *regexp.Regexp
	turn   *int
	// compaction: the rule answers the compaction summary request, and
	// only it.
	compaction bool
}

// reply holds the `reply` of a rule.
type reply struct {
	text     string
	calls    []scriptedCall
	delay    time.Duration
	hasError bool
	errText  string
	usage    *model.Usage // nil: estimate
}

// scriptedCall is one entry of a reply's `calls`.
type scriptedCall struct {
	tool string
	args json.RawMessage
}

// Path returns the file the script was loaded from.
func (s *Script) Path() string { return s.path }

// ContextWindow returns the script's top-level contextWindow, 0 when it
// gives none.
func (s *Script) ContextWindow() int64 { return s.contextWindow }

// Stream answers req with the reply of the first matching rule, calling
// onDelta (which may be nil) with the text and then each tool call.
//
// A reply's `delay` is waited first; when ctx is done during the wait (or
// before the call) Stream returns promptly with an error wrapping ctx.Err().
// A reply with `error` fails the request with that message; its `text`, if
// any, is streamed first and returned as the partial message, with Usage
// marked Incomplete. No matching rule is an error that names the request.
//
// Usage: a reply's `usage` is returned as given (missing fields are zero).
// Without it Stream returns a deterministic estimate of one token per four
// bytes (rounded up): input counts the system prompt, every message and the
// tool specs of req; output counts the reply's text, tool names and args.
func (s *Script) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	if err := ctx.Err(); err != nil {
		return model.Message{}, fmt.Errorf("script model: %w", err)
	}
	r, ok := s.match(req)
	if !ok {
		return model.Message{}, s.noMatch(req)
	}
	if r.reply.delay > 0 {
		timer := time.NewTimer(r.reply.delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return model.Message{}, fmt.Errorf("script model: %w", ctx.Err())
		case <-timer.C:
		}
	}
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}

	msg := model.Message{Role: model.RoleAssistant, Model: ModelName}
	if r.reply.text != "" {
		msg.Content = []model.Block{{Type: "text", Text: r.reply.text}}
		onDelta(model.Delta{Type: "text", Text: r.reply.text})
	}
	if r.reply.hasError {
		err := replyError(r.reply.errText)
		u := r.reply.estimate(req, nil)
		u.Incomplete = true
		if model.IsContextOverflow(err) && r.reply.usage == nil {
			// A provider refuses such a request before reading it: it
			// costs nothing.
			u = model.Usage{}
		}
		msg.Usage = &u
		msg.StopReason = "error"
		return msg, err
	}

	suffix := randomSuffix()
	for i, c := range r.reply.calls {
		call := model.ToolCall{
			ID:   fmt.Sprintf("call_%d_%d_%s", req.Turn, i+1, suffix),
			Name: c.tool,
			Args: append(json.RawMessage(nil), c.args...),
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
		onDelta(model.Delta{Type: "toolCall", ToolCall: &call})
	}
	msg.StopReason = "stop"
	if len(msg.ToolCalls) > 0 {
		msg.StopReason = "toolUse"
	}
	u := r.reply.estimate(req, msg.ToolCalls)
	msg.Usage = &u
	return msg, nil
}

// estimate returns the reply's usage, or the documented estimate when the
// rule gives none.
func (rp reply) estimate(req model.Request, calls []model.ToolCall) model.Usage {
	if rp.usage != nil {
		return *rp.usage
	}
	in := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			in += len(b.Text)
		}
		for _, c := range m.ToolCalls {
			in += len(c.Name) + len(c.Args)
		}
		for _, r := range m.Results {
			in += len(r.Content)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	out := len(rp.text)
	for _, c := range calls {
		out += len(c.Name) + len(c.Args)
	}
	return model.Usage{Input: int64((in + 3) / 4), Output: int64((out + 3) / 4)}
}

// replyError is the error of a reply with `error`: a context overflow when
// the text says the prompt is too long, as a provider's would be, else the
// text as it is.
func replyError(text string) error {
	if model.IsContextLengthMessage(text) {
		return &model.ProviderError{
			Provider: "script", Kind: model.KindContextLength, Status: 400, Reason: "context too long",
			Message: "script: the conversation is longer than the model's context window: " + text,
		}
	}
	return errors.New(text)
}

// randomSuffix returns 8 random hex digits, so that call ids never collide
// across turns, attempts or resumed transcripts.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// noMatch builds the error for a request no rule answers.
func (s *Script) noMatch(req model.Request) error {
	user, _ := newestUserText(req.Messages)
	user = strings.Join(strings.Fields(user), " ")
	if len(user) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(user[cut]) {
			cut--
		}
		user = user[:cut] + "…"
	}
	var tools []string
	for _, r := range trailingResults(req.Messages) {
		tools = append(tools, r.ToolName)
	}
	desc := fmt.Sprintf("agent %q, depth %d, turn %d, newest user message %q", req.Agent, req.Depth, req.Turn, user)
	if req.Compaction {
		return fmt.Errorf("script %s: no rule answers the compaction summary request (%s); add a rule with `when: {compaction: true}` whose reply text is the summary", s.path, desc)
	}
	if len(tools) > 0 {
		desc += fmt.Sprintf(", results of %s", strings.Join(tools, ", "))
	}
	return fmt.Errorf("script %s: no rule matches the request (%s); add a rule whose `when` matches it, or a last rule with no `when` as a fallback", s.path, desc)
}
