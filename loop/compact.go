package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/inkdev/ink/model"
)

// Compaction triggers (Compaction.Trigger).
const (
	TriggerThreshold = "threshold" // the next request would pass 85% of the window
	TriggerOverflow  = "overflow"  // the provider refused a request as too long
)

// Compaction thresholds, in percent of the context window.
const (
	// compactPercent: a request estimated above this share of the window
	// is compacted first.
	compactPercent = 85
	// tailPercent: the retained tail holds at most this share of the
	// window, so that summary and tail leave room to work.
	tailPercent = 30
	// resultPercent: in the summary request, one tool result, text or
	// argument longer than this share of the window keeps only its start
	// and end.
	resultPercent = 10
)

// Compaction is what one compaction of a run did. The worker records it as
// the transcript's compaction entry.
type Compaction struct {
	// Trigger is TriggerThreshold or TriggerOverflow.
	Trigger string
	// Turn is the model turn the compaction was made for.
	Turn int
	// Summary is the model's summary of the messages it replaces.
	Summary string
	// Replaced is how many messages of the history the summary replaced.
	Replaced int
	// Kept is how many messages at the end of the history were kept as
	// they were (the retained tail); 0 when only the summary remains. The
	// tail starts at a user or assistant message and holds the result of
	// every call it makes.
	Kept int
	// TokensBefore is the size of the history before the compaction, in
	// tokens (from the provider's last usage report plus an estimate of
	// what came after it); TokensAfter is the estimated size after.
	TokensBefore, TokensAfter int64
	// Window is the context window the loop compacted for, 0 if unknown.
	Window int64
	// Usage is the usage of the model call that wrote the summary.
	Usage model.Usage
}

// contextWindow follows how full the model's context is.
type contextWindow struct {
	size int64 // the window in tokens; 0 = unknown
	// base is the context size reported by the last reply's usage, and
	// baseLen the length of the conversation it covers; 0 = no report yet
	// (or a compaction since), so the whole request is estimated.
	base    int64
	baseLen int
	// fresh is set by a compaction and cleared by the next reply: a second
	// compaction without progress in between would not help.
	fresh bool
	// fit is the largest context a provider accepted, a lower bound of an
	// unknown window.
	fit int64
}

// estimate returns the size of req in tokens: the last reply's usage plus
// an estimate of the messages after it, or an estimate of everything.
func (w *contextWindow) estimate(req model.Request) int64 {
	if w.base > 0 && w.baseLen <= len(req.Messages) {
		return w.base + model.EstimateTokens(req.Messages[w.baseLen:]...)
	}
	return model.EstimateRequestTokens(req)
}

// over reports whether req should be compacted before it is sent, with
// its estimated size.
func (w *contextWindow) over(req model.Request) (int64, bool) {
	if w.size <= 0 {
		return 0, false
	}
	tokens := w.estimate(req)
	return tokens, tokens > w.size*compactPercent/100
}

// replied takes the usage of a reply to a conversation of n messages (the
// reply included).
func (w *contextWindow) replied(u *model.Usage, n int) {
	w.fresh = false
	w.base, w.baseLen = 0, 0
	if u == nil || u.Total() == 0 {
		return
	}
	w.base, w.baseLen = u.Total(), n
	w.fit = max(w.fit, u.Input+u.CacheRead+u.CacheWrite)
}

// compacted resets the window after a compaction.
func (w *contextWindow) compacted() {
	w.fresh = true
	w.base, w.baseLen = 0, 0
}

// assumed returns the window to size the retained tail by: the known
// window, else the largest context that fitted, else half of what was
// refused.
func (w *contextWindow) assumed(refused int64) int64 {
	switch {
	case w.size > 0:
		return w.size
	case w.fit > 0:
		return w.fit
	}
	return refused / 2
}

// compact replaces the history before a retained tail by a summary the
// model writes, records it through OnCompaction and returns the new
// conversation. tokens is the size of conv that made it necessary; refusal
// is the provider's error when it refused conv as too long.
func (r *runner) compact(ctx context.Context, turn int, conv []model.Message, trigger string, tokens int64, refusal error) ([]model.Message, error) {
	window := r.window.assumed(tokens)
	fail := func(format string, args ...any) ([]model.Message, error) {
		why := fmt.Sprintf("the history is about %d tokens", tokens)
		if r.window.size > 0 {
			why += fmt.Sprintf(" for a %d-token window", r.window.size)
		}
		if refusal != nil {
			why += "; " + refusal.Error()
		}
		return nil, fmt.Errorf("context compaction failed (%s): %s", why, fmt.Sprintf(format, args...))
	}
	cut := tailStart(conv, window*tailPercent/100)
	if cut == 0 {
		return fail("there is nothing before the most recent message to summarise; the system prompt, tools and prompt alone are too large for the model")
	}

	summary, usage, err := r.summarise(ctx, turn, conv[:cut], window)
	r.spend(&usage)
	if err != nil {
		if ctx.Err() != nil {
			return nil, interruptedError(ctx)
		}
		if model.IsContextOverflow(err) {
			return fail("the model refused even the summary request as too long: %v", err)
		}
		return fail("the summary request failed: %v", err)
	}
	if strings.TrimSpace(summary) == "" {
		return fail("the model answered the summary request with no text")
	}

	next := append([]model.Message{model.SummaryMessage(summary)}, conv[cut:]...)
	after := model.EstimateRequestTokens(r.request(next, turn, false))
	if r.window.size > 0 && after > r.window.size*compactPercent/100 {
		return fail("after it the history would still take about %d tokens, more than %d%% of the window; the system prompt, tools and most recent messages alone are too large", after, compactPercent)
	}
	c := Compaction{
		Trigger: trigger, Turn: turn, Summary: summary,
		Replaced: cut, Kept: len(conv) - cut,
		TokensBefore: tokens, TokensAfter: after, Window: r.window.size, Usage: usage,
	}
	if r.opts.OnCompaction != nil {
		if err := r.opts.OnCompaction(c); err != nil {
			return nil, fmt.Errorf("save compaction: %w", err)
		}
	}
	r.window.compacted()
	r.res.Compactions++
	r.emit(Event{Type: EventCompaction, Turn: turn, Compaction: &c})
	return next, nil
}

// summarise asks the model for a summary of head. Tool results, texts and
// arguments longer than a tenth of the window keep only their start and end
// in the request. Only
// "retry" deltas are passed on: the summary is not the agent's answer.
func (r *runner) summarise(ctx context.Context, turn int, head []model.Message, window int64) (string, model.Usage, error) {
	// Three bytes to a token, as model.EstimateTokens counts them.
	msgs := clipForSummary(head, int(window*resultPercent/100)*3)
	msgs = append(msgs, model.UserText(model.CompactionInstruction))
	req := r.request(msgs, turn, true)
	req.Compaction = true
	msg, err := r.opts.Provider.Stream(ctx, req, func(d model.Delta) {
		if d.Type == "retry" {
			r.emit(Event{Type: EventDelta, Turn: turn, Delta: &d})
		}
	})
	var usage model.Usage
	if msg.Usage != nil {
		usage = *msg.Usage
	}
	if err != nil {
		usage.Incomplete = usage.Incomplete || !model.IsContextOverflow(err)
		return "", usage, err
	}
	return strings.TrimSpace(msg.Text()), usage, nil
}

// tailStart returns where the retained tail of conv starts: the earliest
// index at which a tail of at most budget tokens may start, len(conv) when
// none fits (only the summary remains), or 0 when nothing may be summarised.
// A tail starts at a user or assistant message (never at the summary of an
// earlier compaction, index 0) and holds the result of every call it makes,
// so a tool call is never split from its result.
func tailStart(conv []model.Message, budget int64) int {
	if len(conv) <= 1 {
		return 0
	}
	// callAt[id] is the index of the message that makes call id.
	callAt := map[string]int{}
	for i, m := range conv {
		for _, c := range m.ToolCalls {
			callAt[c.ID] = i
		}
	}
	// firstCallNeeded[i]: the smallest index of a call answered in conv[i:].
	earliest := len(conv)
	firstCallNeeded := make([]int, len(conv)+1)
	firstCallNeeded[len(conv)] = len(conv)
	var size int64
	sizes := make([]int64, len(conv)+1) // sizes[i] = tokens of conv[i:]
	for i := len(conv) - 1; i >= 0; i-- {
		for _, res := range conv[i].Results {
			if at, ok := callAt[res.ToolCallID]; ok && at < earliest {
				earliest = at
			}
		}
		firstCallNeeded[i] = earliest
		size += model.EstimateTokens(conv[i])
		sizes[i] = size
	}
	for i := 1; i < len(conv); i++ {
		role := conv[i].Role
		if (role == model.RoleUser || role == model.RoleAssistant) && firstCallNeeded[i] >= i && sizes[i] <= budget {
			return i
		}
	}
	return len(conv)
}

// clipForSummary returns msgs with every piece longer than limit bytes —
// a tool result, a text or thinking block, a call's arguments — cut to its
// start and end with a note of what was left out (model.ClipMessage). A
// transcript line of tens of megabytes (a reply from before ink bounded
// replies, a huge prompt) then still fits the summary request. msgs is not
// changed.
func clipForSummary(msgs []model.Message, limit int) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		out[i] = model.ClipMessage(m, limit, "of the summary request")
	}
	return out
}
