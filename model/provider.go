package model

import (
	"context"
	"encoding/json"
)

// ToolSpec describes a tool to a model: its name, what it does and the JSON
// schema of its arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is everything a provider needs for one assistant turn.
type Request struct {
	System    string
	Messages  []Message
	Tools     []ToolSpec
	Model     string
	MaxTokens int
	// Thinking is a thinking level ("", "off", "minimal", "low", "medium",
	// "high", "xhigh", "max"); providers clamp it to what the model supports.
	Thinking string

	// TextOnly asks for an answer in text, without tool calls: the tools
	// are still described (providers refuse a history holding tool calls
	// without them) but the provider is told not to call any (tool_choice
	// "none"). The summary request of a compaction and the final turn of a
	// capped run set it.
	TextOnly bool

	// Agent, Depth and Turn describe who is asking. Real providers ignore
	// them; the script model matches rules on them.
	Agent string // profile name of the requesting agent ("" = none)
	Depth int    // 0 = main agent
	Turn  int    // model call number within this attempt, 1-based
	// Compaction marks the request that asks the model to summarise the
	// history for a compaction (its last user message is
	// CompactionInstruction). Real providers ignore it; the script model
	// answers it only with a rule that says `compaction: true`.
	Compaction bool
}

// Delta is one streamed piece of an assistant turn.
type Delta struct {
	// Type is "text", "thinking", "toolCall" (a complete call) or "retry"
	// (a transient error is being retried; Text says why).
	Type     string
	Text     string
	ToolCall *ToolCall
}

// Provider produces assistant turns.
//
// Stream sends one request and returns the complete assistant message,
// calling onDelta (which may be nil) for each streamed piece. It honours ctx:
// when ctx is done it returns promptly with ctx.Err() (wrapped). On failure
// the returned message holds whatever arrived before it (with Usage marked
// Incomplete) and the error says why. Implementations are safe for
// concurrent use.
type Provider interface {
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Message, error)
}
