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

	// Agent, Depth and Turn describe who is asking. Real providers ignore
	// them; the script model matches rules on them.
	Agent string // profile name of the requesting agent ("" = none)
	Depth int    // 0 = main agent
	Turn  int    // model call number within this attempt, 1-based
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
