// Package loop owns ink's agent loop: it asks the model for a turn, runs the
// tool calls of that turn (consecutive concurrency-safe calls at once in a
// sliding window, the rest one by one), hands every message it produces to
// the caller in order, and repeats until the model answers without calls.
//
// The loop persists nothing itself: the caller (the worker) writes each
// message through Options.OnMessage before the loop moves on, so a crash at
// any point leaves a transcript that ends at a message boundary.
//
// The loop also keeps a long run alive and bounded. When the next request
// would pass about 85% of the model's context window, or the provider
// refuses it as too long, it compacts: the model summarises the history
// before a retained tail of recent turns, and the run goes on from the
// summary and the tail (Options.OnCompaction records it). A turn cap
// (Options.MaxTurns) or a nearly spent token budget (Options.Budget) ends
// the run softly, with one last turn in which the model may call no tool
// and is told to write its answer. A health watch reports what a
// supervisor should know about: the same call turn after turn, edits that
// keep failing, a tool open too long.
//
// A broken or hostile model is bounded too: of one reply at most
// MaxCallsPerTurn calls are taken (the rest are answered together with an
// error telling the model to batch), a call whose arguments a provider
// could not use (model.ToolCall.Invalid, or past model.MaxToolArgBytes) is
// answered without running, and a reply past model.MaxReplyBytes ends the
// run with an error naming the bound, its text kept up to the bound.
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

	// ContextWindow is the model's context window in tokens. 0 means the
	// provider's own (model.WindowReporter), and when it has none the
	// window is unknown: the loop then compacts only when the provider
	// refuses a request as too long.
	ContextWindow int64
	// OnCompaction, optional, is called when the loop has compacted its
	// history, before the run goes on from the summary; the worker appends
	// the transcript's compaction entry here. An error stops the run, as
	// an OnMessage error does.
	OnCompaction func(Compaction) error
	// ReservedCallIDs are tool call ids used earlier in the transcript but
	// not in History (a compacted part); a new call never takes one.
	ReservedCallIDs []string
	// MaxTurns caps the model turns of the run; 0 means no cap. When the
	// run has made MaxTurns turns and the model still calls tools, the loop
	// makes one more turn in which no tool may be called, telling the model
	// to write its answer now, and Result.Capped is CappedTurns.
	MaxTurns int
	// Budget, optional, is the token budget the run shares with the rest
	// of its tree. Every model call's usage is spent on it; when what
	// remains would not pay for another turn and a final one, the run lands
	// as for MaxTurns and Result.Capped is CappedBudget.
	Budget Budget
	// Health configures the health watch.
	Health HealthOptions
}

// Budget is a token budget shared by a tree of agents; the supervisor
// implements it. Spend adds u, the usage of one model call, to what the
// tree has spent (a zero Usage only asks) and returns the tokens left,
// negative when overspent, counted as model.Usage.Total counts them. The
// loop calls it from its own goroutine; an implementation shared by several
// runs must be safe for concurrent use.
type Budget interface {
	Spend(u model.Usage) (remaining int64)
}

// Values of Result.Capped.
const (
	CappedTurns  = "turns"  // the run reached Options.MaxTurns
	CappedBudget = "budget" // the tree's token budget was nearly spent
)

// Event types sent to Options.OnEvent.
const (
	EventTurnStart   = "turn.start"   // a model call begins (Turn)
	EventDelta       = "delta"        // a streamed piece of the turn (Delta)
	EventToolStart   = "tool.start"   // a call was read, before its gate (Call)
	EventToolRunning = "tool.running" // the tool begins to run (Call)
	EventToolEnd     = "tool.end"     // the call's result, in call order, once saved (Call, Result, Duration)
	EventMessage     = "message"      // a message was accepted by OnMessage (Message)
	EventCompaction  = "compaction"   // the history was compacted and OnCompaction accepted it (Compaction)
	EventWarning     = "warning"      // a health observation or the start of a soft landing (Text)
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
	// Compaction is what was done, on "compaction".
	Compaction *Compaction
	// Text is the warning, on "warning".
	Text string
}

// Result is what one Run produced. Run fills it even when it returns an
// error.
type Result struct {
	// Messages are the messages of this run accepted by OnMessage, in order.
	Messages []model.Message
	// FinalText is the newest non-blank assistant text among Messages;
	// History never counts, so a resumed run cannot report an old answer.
	FinalText string
	// Turns counts the model turns made, a failed one included. A turn the
	// provider refused as too long and that was sent again after a
	// compaction counts once; compaction summaries are not turns.
	Turns int
	// Usage sums the usage of this run's model calls, compaction summaries
	// included; it is Incomplete if any call's was, or if a call failed.
	Usage model.Usage
	// Capped is CappedTurns or CappedBudget when the run was landed softly:
	// its last turn was the wrap-up the loop asked for, and FinalText is
	// not a confirmed completion. "" otherwise.
	Capped string
	// Compactions counts the compactions of the run.
	Compactions int
	// Health lists the health watch's observations, in order, one line
	// each (also sent as "warning" events).
	Health []string
}

// Run drives the agent until a model turn has no tool calls, the context is
// done, the provider fails, OnMessage or OnCompaction fails, or a soft
// landing's final turn is answered.
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
// Before each turn the loop compacts the history when the request would
// pass 85% of the context window, and it compacts and retries once when the
// provider refuses the request as too long (model.IsContextOverflow). A
// compaction that fails, or after which the history still does not fit,
// ends the run with an error that says so.
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
	r := &runner{opts: opts, pool: pool, specs: specs, res: &res, health: newHealthWatch(opts.Health)}
	if r.opts.MaxParallel <= 0 {
		r.opts.MaxParallel = DefaultMaxParallel
	}
	if r.opts.AbortGrace <= 0 {
		r.opts.AbortGrace = DefaultAbortGrace
	}
	r.window.size = opts.ContextWindow
	if r.window.size <= 0 {
		if wr, ok := opts.Provider.(model.WindowReporter); ok {
			r.window.size = wr.ContextWindow()
		}
	}

	conv := slices.Clone(opts.History)
	ids := newCallIDs(conv)
	for _, id := range opts.ReservedCallIDs {
		ids[id] = true
	}
	landing := "" // the cap being landed on, once the final turn is asked for
	for turn := 1; ; turn++ {
		if ctx.Err() != nil {
			return res, interruptedError(ctx)
		}
		if tokens, over := r.window.over(r.request(conv, turn, false)); over {
			if conv, err = r.compact(ctx, turn, conv, TriggerThreshold, tokens, nil); err != nil {
				return res, err
			}
		}
		// The request for the final answer comes after any compaction, so
		// that it is the last thing the model reads.
		if landing == "" {
			if landing = r.capReached(turn, conv); landing != "" {
				res.Capped = landing
				ask := model.UserText(landingText(landing, opts.MaxTurns))
				if err := r.deliver(turn, ask); err != nil {
					return res, err
				}
				conv = append(conv, ask)
				r.emit(Event{Type: EventWarning, Turn: turn, Text: landingWarning(landing, opts.MaxTurns)})
			}
		}

		r.emit(Event{Type: EventTurnStart, Turn: turn})
		msg, err := r.call(ctx, turn, conv, landing != "")
		if err != nil && model.IsContextOverflow(err) && ctx.Err() == nil {
			if r.window.fresh {
				err = fmt.Errorf("the history still does not fit the model's context window after a compaction: %w", err)
			} else {
				tokens := r.window.estimate(r.request(conv, turn, false))
				if conv, err = r.compact(ctx, turn, conv, TriggerOverflow, tokens, err); err != nil {
					return res, err
				}
				msg, err = r.call(ctx, turn, conv, landing != "")
				if err != nil && model.IsContextOverflow(err) {
					err = fmt.Errorf("the history still does not fit the model's context window after a compaction: %w", err)
				}
			}
		}
		if err == nil {
			err = tooLarge(msg)
		}
		res.Turns++
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
		r.window.replied(msg.Usage, len(conv))
		if len(msg.ToolCalls) == 0 {
			return res, nil
		}
		calls, over := splitCalls(msg.ToolCalls)
		if landing != "" {
			// The model was told it may call no tool; answer its calls
			// without running them so the transcript stays paired.
			results, err := r.refuseCalls(turn, calls, landing)
			conv = append(conv, results...)
			if err == nil && len(over) > 0 {
				_, err = r.refuseOver(turn, len(msg.ToolCalls), over)
			}
			return res, err
		}
		r.observe(turn, r.health.turn(turn, msg.ToolCalls))
		results, err := r.runCalls(ctx, turn, calls)
		conv = append(conv, results...)
		if err != nil {
			return res, err
		}
		if len(over) > 0 {
			refused, err := r.refuseOver(turn, len(msg.ToolCalls), over)
			if err != nil {
				return res, err
			}
			conv = append(conv, refused)
		}
		if ctx.Err() != nil {
			return res, interruptedError(ctx)
		}
	}
}

// request returns the request of turn for conv: the template with the
// conversation, the tools and the turn filled in.
func (r *runner) request(conv []model.Message, turn int, textOnly bool) model.Request {
	req := r.opts.Request
	req.Messages = slices.Clip(conv)
	req.Tools = r.specs
	req.Turn = turn
	req.TextOnly = textOnly
	return req
}

// call makes the model call of turn and accounts for its usage.
func (r *runner) call(ctx context.Context, turn int, conv []model.Message, textOnly bool) (model.Message, error) {
	msg, err := r.opts.Provider.Stream(ctx, r.request(conv, turn, textOnly), func(d model.Delta) {
		r.emit(Event{Type: EventDelta, Turn: turn, Delta: &d})
	})
	if err != nil && model.IsContextOverflow(err) && msg.Usage != nil {
		// A refused request produced nothing; what it reports (usually
		// nothing) is complete, and the turn is retried after a compaction.
		u := *msg.Usage
		u.Incomplete = false
		msg.Usage = &u
	}
	r.spend(msg.Usage)
	return msg, err
}

// spend adds a model call's usage to the Result and the budget.
func (r *runner) spend(u *model.Usage) {
	if u == nil {
		return
	}
	r.res.Usage = r.res.Usage.Add(*u)
	if r.opts.Budget != nil {
		r.opts.Budget.Spend(*u)
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
// model call: its content with the tool calls stripped, when it has text,
// cut to the reply bound.
func partialMessage(ctx context.Context, msg model.Message) (model.Message, bool) {
	if strings.TrimSpace(msg.Text()) == "" {
		return model.Message{}, false
	}
	partial := model.Message{
		Role:       model.RoleAssistant,
		Content:    clipReply(msg).Content,
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
	opts   Options
	pool   map[string]tools.Tool
	specs  []model.ToolSpec
	res    *Result
	window contextWindow
	health *healthWatch
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
