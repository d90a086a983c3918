// Package loop owns ink's agent loop: it asks the model for a turn, runs the
// tool calls of that turn (consecutive concurrency-safe calls at once in a
// sliding window, the rest one by one), hands every message it produces to
// the caller in order, and repeats until the model answers without calls.
//
// The loop persists nothing itself: the caller (the worker) writes each
// message through Options.OnMessage before the loop moves on, so a crash at
// any point leaves a transcript that ends at a message boundary.
package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/tools"
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxParallel = 8
	DefaultAbortGrace  = 10 * time.Second
)

// Options configures one Run. OnMessage and OnEvent are called from the
// goroutine that called Run (delta events: from wherever the provider calls
// its onDelta, during the model call); OnToolCall runs on a goroutine of its
// own while Run waits for it. None of them is called concurrently with
// another, except a gate still running when the run was interrupted, which
// Run leaves behind after AbortGrace.
type Options struct {
	// Provider produces the assistant turns. Required.
	Provider model.Provider
	// Request is the template of every model request: System, Model,
	// MaxTokens, Thinking, Agent and Depth are sent as given; Run fills
	// Messages, Tools and Turn.
	Request model.Request
	// Tools is the tool pool. A call to a name not in it gets an isError
	// result "unknown tool X; available: ..." and nothing runs.
	Tools []tools.Tool
	// History holds the messages sent to the model before this run's first
	// turn, already persisted by the caller (including the new user prompt).
	// Run never changes it and never hands it to OnMessage.
	History []model.Message
	// MaxParallel is the sliding window for a run of consecutive safe calls;
	// <= 0 means DefaultMaxParallel.
	MaxParallel int
	// AbortGrace is how long a running tool (or a pending OnToolCall) may
	// ignore cancellation before its call is abandoned; <= 0 means
	// DefaultAbortGrace.
	AbortGrace time.Duration
	// OnMessage is called with every message the run produces (assistant,
	// toolResult), in order, before the run goes on. An error stops the run:
	// running tools are cancelled (and waited for up to AbortGrace) and Run
	// returns the error. Nil means the messages are only returned.
	OnMessage func(model.Message) error
	// OnToolCall is an optional gate called for each call, in call order,
	// before any call of its parallel group runs. A non-nil error denies the
	// call: its text becomes the call's isError result and the tool never runs.
	OnToolCall func(ctx context.Context, call model.ToolCall) error
	// OnEvent, optional, receives progress events. It must be cheap: it runs
	// on the loop's own goroutine.
	OnEvent func(Event)
}

// Event types sent to Options.OnEvent.
const (
	EventTurnStart   = "turn.start"   // a model call begins (Turn)
	EventDelta       = "delta"        // a streamed piece of the turn (Delta)
	EventToolStart   = "tool.start"   // a call was read, before its gate (Call)
	EventToolRunning = "tool.running" // the tool begins to run (Call)
	EventToolEnd     = "tool.end"     // the call's result, in call order, once saved (Call, Result, Duration)
	EventMessage     = "message"      // a message was accepted by OnMessage (Message)
)

// Event is one progress report of a run.
type Event struct {
	// Type is one of the Event* constants.
	Type string
	// Turn is the model call number the event belongs to, 1-based.
	Turn int
	// Delta is the streamed piece on "delta".
	Delta *model.Delta
	// Call is the tool call on tool.start, tool.running and tool.end.
	Call *model.ToolCall
	// Result is the result of the call on tool.end.
	Result *model.ToolResult
	// Message is the message on "message".
	Message *model.Message
	// Duration is, on tool.end, how long the tool ran (queueing and gating
	// excluded; 0 for a call that never ran).
	Duration time.Duration
}

// Result is what one Run produced. Run fills it even when it returns an
// error.
type Result struct {
	// Messages are the messages of this run accepted by OnMessage, in order.
	Messages []model.Message
	// FinalText is the newest non-blank assistant text among Messages;
	// History never counts, so a resumed run cannot report an old answer.
	FinalText string
	// Turns counts the model calls made, failed ones included.
	Turns int
	// Usage sums the usage of this run's turns; it is Incomplete if any
	// turn's was, or if a model call failed.
	Usage model.Usage
}

// Run drives the agent until a model turn has no tool calls, the context is
// done, the provider fails, or OnMessage fails.
//
// When ctx is done, every call of the current turn still gets a result
// (queued calls: not started; running calls: their own result, to which an
// error result gets the line "interrupted: <cause>", or abandoned after
// AbortGrace) and those results pass through OnMessage before Run returns an
// error that wraps context.Cause(ctx) and ctx.Err(), so errors.Is works with
// the cause as well as with context.Canceled or context.DeadlineExceeded. A provider
// failure keeps the partial assistant text, if any, as a message without
// tool calls, and returns the provider's error wrapped.
//
// A tool call whose id is empty or already used in the conversation gets a
// fresh id before its assistant message reaches OnMessage (delta events still
// show the id the provider sent).
//
// Run is safe to call concurrently with other Runs; Options are not shared
// state, but the tools and the provider must then be safe for concurrent use.
func Run(ctx context.Context, opts Options) (Result, error) {
	var res Result
	if opts.Provider == nil {
		return res, errors.New("agent loop: no model provider (Options.Provider is nil)")
	}
	pool, specs, err := newPool(opts.Tools)
	if err != nil {
		return res, err
	}
	r := &runner{opts: opts, pool: pool, res: &res}
	if r.opts.MaxParallel <= 0 {
		r.opts.MaxParallel = DefaultMaxParallel
	}
	if r.opts.AbortGrace <= 0 {
		r.opts.AbortGrace = DefaultAbortGrace
	}

	conv := slices.Clone(opts.History)
	ids := newCallIDs(conv)
	for turn := 1; ; turn++ {
		if ctx.Err() != nil {
			return res, interruptedError(ctx)
		}
		r.emit(Event{Type: EventTurnStart, Turn: turn})
		req := opts.Request
		req.Messages = slices.Clip(conv)
		req.Tools = specs
		req.Turn = turn
		msg, err := opts.Provider.Stream(ctx, req, func(d model.Delta) {
			r.emit(Event{Type: EventDelta, Turn: turn, Delta: &d})
		})
		res.Turns++
		if msg.Usage != nil {
			res.Usage = res.Usage.Add(*msg.Usage)
		}
		if err != nil {
			res.Usage.Incomplete = true
			if partial, ok := partialMessage(ctx, msg); ok {
				if derr := r.deliver(turn, partial); derr != nil {
					return res, errors.Join(providerError(ctx, turn, err), derr)
				}
			}
			return res, providerError(ctx, turn, err)
		}
		msg.Role = model.RoleAssistant
		ids.assign(turn, &msg)
		if err := r.deliver(turn, msg); err != nil {
			return res, err
		}
		conv = append(conv, msg)
		if len(msg.ToolCalls) == 0 {
			return res, nil
		}
		results, err := r.runCalls(ctx, turn, msg.ToolCalls)
		conv = append(conv, results...)
		if err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			return res, interruptedError(ctx)
		}
	}
}

// newPool indexes the tool pool by name and lists its specs in pool order.
func newPool(list []tools.Tool) (map[string]tools.Tool, []model.ToolSpec, error) {
	pool := make(map[string]tools.Tool, len(list))
	specs := make([]model.ToolSpec, 0, len(list))
	for _, t := range list {
		if t == nil {
			return nil, nil, errors.New("agent loop: the tool pool holds a nil tool")
		}
		spec := t.Spec()
		if _, dup := pool[spec.Name]; dup {
			return nil, nil, fmt.Errorf("agent loop: the tool pool lists %q twice; give each tool once", spec.Name)
		}
		pool[spec.Name] = t
		specs = append(specs, spec)
	}
	return pool, specs, nil
}

// partialMessage returns what to keep of the assistant message of a failed
// model call: its content with the tool calls stripped, when it has text.
func partialMessage(ctx context.Context, msg model.Message) (model.Message, bool) {
	if strings.TrimSpace(msg.Text()) == "" {
		return model.Message{}, false
	}
	partial := model.Message{
		Role:       model.RoleAssistant,
		Content:    msg.Content,
		Model:      msg.Model,
		StopReason: "error",
	}
	if ctx.Err() != nil {
		partial.StopReason = "aborted"
	}
	u := model.Usage{Incomplete: true}
	if msg.Usage != nil {
		u = *msg.Usage
		u.Incomplete = true
	}
	partial.Usage = &u
	return partial, true
}

// providerError wraps the error of a failed model call; when ctx is done the
// interruption is the reason.
func providerError(ctx context.Context, turn int, err error) error {
	if ctx.Err() != nil {
		return interruptedError(ctx)
	}
	return fmt.Errorf("model turn %d: %w", turn, err)
}

// runner is the state of one Run.
type runner struct {
	opts Options
	pool map[string]tools.Tool
	res  *Result
}

// emit sends ev to OnEvent, if set.
func (r *runner) emit(ev Event) {
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(ev)
	}
}

// deliver hands msg to OnMessage and, once accepted, records it in the
// Result and reports it.
func (r *runner) deliver(turn int, msg model.Message) error {
	if r.opts.OnMessage != nil {
		if err := r.opts.OnMessage(msg); err != nil {
			return fmt.Errorf("save %s message: %w", msg.Role, err)
		}
	}
	r.res.Messages = append(r.res.Messages, msg)
	if msg.Role == model.RoleAssistant {
		if text := msg.Text(); strings.TrimSpace(text) != "" {
			r.res.FinalText = text
		}
	}
	r.emit(Event{Type: EventMessage, Turn: turn, Message: &msg})
	return nil
}
