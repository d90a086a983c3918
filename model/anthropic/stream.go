package anthropic

import (
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/inkdev/ink/model"
)

// block is one content block being assembled from stream events.
type block struct {
	kind      string // "text", "thinking", "redacted_thinking", "tool_use", or another type ink ignores
	text      strings.Builder
	signature string
	id, name  string
	input     model.ToolArgsBuffer
	done      bool
}

// accumulator assembles a Messages API stream into an ink message. It is
// used by one Stream call only.
type accumulator struct {
	model       string
	onDelta     func(model.Delta)
	blocks      map[int64]*block
	order       []int64
	usage       model.Usage
	stopReason  string
	stopped     bool // message_stop arrived
	contentSeen bool // a delta reached onDelta
	// meter counts the reply against ink's bounds; once meter.TooLarge
	// is set the stream must stop.
	meter model.ReplyMeter
}

func newAccumulator(modelID string, onDelta func(model.Delta)) *accumulator {
	return &accumulator{model: modelID, onDelta: onDelta, blocks: map[int64]*block{}}
}

func (a *accumulator) add(ev sdk.MessageStreamEventUnion) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage = model.Usage{
			Input: u.InputTokens, Output: u.OutputTokens,
			CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens,
		}
		if ev.Message.Model != "" {
			a.model = string(ev.Message.Model)
		}
	case "content_block_start":
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature}
		switch cb.Type {
		case "text":
			b.text.WriteString(cb.Text)
		case "thinking":
			b.text.WriteString(cb.Thinking)
		case "redacted_thinking":
			b.signature = redactedPrefix + cb.Data
		}
		if _, seen := a.blocks[ev.Index]; !seen {
			a.order = append(a.order, ev.Index)
		}
		a.blocks[ev.Index] = b
		if cb.Type == "text" && cb.Text != "" {
			a.emit(model.Delta{Type: "text", Text: cb.Text})
		}
	case "content_block_delta":
		b := a.blocks[ev.Index]
		if b == nil {
			return
		}
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			if text := a.meter.Text(d.Text); text != "" {
				b.text.WriteString(text)
				a.emit(model.Delta{Type: "text", Text: text})
			}
		case "thinking_delta":
			if text := a.meter.Text(d.Thinking); text != "" {
				b.text.WriteString(text)
				a.emit(model.Delta{Type: "thinking", Text: text})
			}
		case "signature_delta":
			b.signature += d.Signature
		case "input_json_delta":
			a.meter.Args(&b.input, b.name, d.PartialJSON)
		}
	case "content_block_stop":
		b := a.blocks[ev.Index]
		if b == nil || b.done {
			return
		}
		b.done = true
		if b.kind == "tool_use" {
			tc := b.toolCall()
			a.emit(model.Delta{Type: "toolCall", ToolCall: &tc})
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stopReason = string(ev.Delta.StopReason)
		}
		// message_delta usage is cumulative; input and cache counts are
		// only present on some API versions, so keep message_start's when
		// they are absent.
		u := ev.Usage
		a.usage.Output = u.OutputTokens
		if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
			a.usage.Input = u.InputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() && u.CacheReadInputTokens > 0 {
			a.usage.CacheRead = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() && u.CacheCreationInputTokens > 0 {
			a.usage.CacheWrite = u.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
}

func (a *accumulator) emit(d model.Delta) {
	a.contentSeen = true
	a.onDelta(d)
}

// toolCall returns the assembled call. Arguments that are not valid JSON
// (which a complete tool_use block never has) or that passed the
// tool-argument bound make the call Invalid (model.ToolArgs,
// model.DroppedArgs): the loop answers it without running it.
func (b *block) toolCall() model.ToolCall {
	args, invalid := b.input.Args()
	return model.ToolCall{ID: b.id, Name: b.name, Args: args, Invalid: invalid}
}

// message returns what has arrived so far. Tool calls whose block did not
// finish are left out: their arguments are incomplete and must never run.
// Usage is marked incomplete; Stream clears that on a finished stream.
func (a *accumulator) message() model.Message {
	usage := a.usage
	usage.Incomplete = true
	m := model.Message{Role: model.RoleAssistant, Model: a.model, StopReason: a.stopReason, Usage: &usage}
	for _, idx := range a.order {
		b := a.blocks[idx]
		switch b.kind {
		case "text":
			if b.text.Len() > 0 {
				m.Content = append(m.Content, model.Block{Type: "text", Text: b.text.String()})
			}
		case "thinking":
			m.Content = append(m.Content, model.Block{Type: "thinking", Text: b.text.String(), Signature: b.signature})
		case "redacted_thinking":
			m.Content = append(m.Content, model.Block{Type: "thinking", Signature: b.signature})
		case "tool_use":
			if b.done {
				m.ToolCalls = append(m.ToolCalls, b.toolCall())
			}
		}
	}
	return m
}
