package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/inkdev/ink/model"
)

// call is one tool call being assembled from streamed deltas.
type call struct {
	id, name string
	args     model.ToolArgsBuffer
}

// accumulator assembles a chat completion stream into an ink message. Tool
// calls are assembled by their index, never by the SDK's accumulator, which
// mis-assembles the streams of some servers (Ollama). It is used by one
// Stream call only.
type accumulator struct {
	model       string
	onDelta     func(model.Delta)
	text        strings.Builder
	reasoning   strings.Builder
	calls       []*call
	slot        map[int64]int // delta index -> position in calls
	finish      string
	usage       model.Usage
	finished    bool // a finish_reason arrived
	usageSeen   bool
	contentSeen bool
	// meter counts the reply against ink's bounds; once meter.TooLarge
	// is set the stream must stop.
	meter model.ReplyMeter
}

func newAccumulator(modelID string, onDelta func(model.Delta)) *accumulator {
	return &accumulator{model: modelID, onDelta: onDelta, slot: map[int64]int{}}
}

func (a *accumulator) add(ch sdk.ChatCompletionChunk) {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		a.usageSeen = true
		a.usage = usageOf(ch.Usage)
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // ink asks for one choice
		}
		d := c.Delta
		if r := a.meter.Text(reasoningText(d)); r != "" {
			a.reasoning.WriteString(r)
			a.emit(model.Delta{Type: "thinking", Text: r})
		}
		if text := a.meter.Text(d.Content); text != "" {
			a.text.WriteString(text)
			a.emit(model.Delta{Type: "text", Text: text})
		}
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if c.FinishReason != "" {
			a.finished = true
			a.finish = c.FinishReason
		}
	}
}

// addCall folds one tool call delta in. A delta whose index is new starts a
// call; a delta that reuses an index but carries a different id and a name
// is a new call too (servers that number every call 0 or leave the index
// out send each call whole in one delta).
func (a *accumulator) addCall(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	pos, ok := a.slot[tc.Index]
	if ok {
		cur := a.calls[pos]
		if tc.ID != "" && cur.id != "" && tc.ID != cur.id && tc.Function.Name != "" {
			ok = false
		}
	}
	if !ok {
		a.calls = append(a.calls, &call{})
		pos = len(a.calls) - 1
		a.slot[tc.Index] = pos
		a.contentSeen = true
	}
	cur := a.calls[pos]
	if tc.ID != "" && cur.id == "" {
		cur.id = tc.ID
	}
	if tc.Function.Name != "" && cur.name == "" {
		cur.name = tc.Function.Name
	}
	a.meter.Args(&cur.args, cur.name, tc.Function.Arguments)
}

func (a *accumulator) emit(d model.Delta) {
	a.contentSeen = true
	a.onDelta(d)
}

// reasoningText returns the reasoning a server streams beside the answer:
// DeepSeek's reasoning_content, or reasoning (OpenRouter, Ollama, vLLM).
func reasoningText(d sdk.ChatCompletionChunkChoiceDelta) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		// The SDK marks fields it has no type for as not valid, so only
		// the raw JSON is looked at.
		f, ok := d.JSON.ExtraFields[key]
		if !ok || f.Raw() == "" || f.Raw() == "null" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// usageOf maps chat usage to ink's: cached prompt tokens are counted as
// cache reads and left out of Input, as Anthropic reports them, so sums
// across providers mean the same thing.
func usageOf(u sdk.CompletionUsage) model.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	if cached == 0 {
		// DeepSeek reports its cache hits in its own field.
		if f, ok := u.JSON.ExtraFields["prompt_cache_hit_tokens"]; ok && f.Raw() != "" {
			var n int64
			if json.Unmarshal([]byte(f.Raw()), &n) == nil {
				cached = n
			}
		}
	}
	if cached > u.PromptTokens {
		cached = u.PromptTokens
	}
	return model.Usage{
		Input:      u.PromptTokens - cached,
		Output:     u.CompletionTokens,
		CacheRead:  cached,
		CacheWrite: u.PromptTokensDetails.CacheWriteTokens,
	}
}

// message returns the assembled message. Tool calls are only included once
// the server finished the turn: before that their arguments may be cut off
// and must never run.
func (a *accumulator) message() model.Message {
	usage := a.usage
	usage.Incomplete = true
	m := model.Message{Role: model.RoleAssistant, Model: a.model, StopReason: a.finish, Usage: &usage}
	if a.reasoning.Len() > 0 {
		m.Content = append(m.Content, model.Block{Type: "thinking", Text: a.reasoning.String()})
	}
	if a.text.Len() > 0 {
		m.Content = append(m.Content, model.Block{Type: "text", Text: a.text.String()})
	}
	if !a.finished {
		return m
	}
	for _, c := range a.calls {
		// Arguments that are not valid JSON, or that passed the
		// tool-argument bound, make the call Invalid: the loop answers it
		// without running it.
		args, invalid := c.args.Args()
		if c.id == "" {
			c.id = syntheticID()
		}
		m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: c.id, Name: c.name, Args: args, Invalid: invalid})
	}
	return m
}

// syntheticID names a call the server sent without an id (some local
// servers do), so its result can be matched to it. Ids are random, so they
// stay unique across a whole transcript.
func syntheticID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
