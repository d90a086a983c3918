// Package model owns the messages that flow between an agent and a language
// model, the Provider interface that produces assistant turns, and model
// bindings ("anthropic/claude-sonnet-4-5", "script:PATH").
//
// Providers live in subpackages (script, anthropic, openai) and are opened by
// binding through package providers. Everything in this package is plain data
// and safe to copy; nothing here owns a resource that needs cleaning up.
package model

import (
	"encoding/json"
	"strings"
)

// Role says who produced a message.
type Role string

// The three message roles of a transcript.
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "toolResult"
)

// Block is one content block of a user or assistant message.
type Block struct {
	// Type is "text" or "thinking".
	Type string `json:"type"`
	Text string `json:"text"`
	// Signature is an opaque provider token some providers require when a
	// thinking block is sent back to them.
	Signature string `json:"signature,omitempty"`
}

// ToolCall is one tool invocation requested by the assistant.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Invalid, set by the provider that read the call, says why its Args
	// cannot be used: they were not valid JSON (ToolArgs) or passed
	// MaxToolArgBytes and were dropped (DroppedArgs). The agent loop
	// answers such a call with an error result that says so and never
	// runs it. It is not stored: the result that answers the call is.
	Invalid string `json:"-"`
}

// ToolResult is the answer to one ToolCall.
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	Content    string `json:"content"`
	IsError    bool   `json:"isError,omitempty"`
}

// Usage counts the tokens of one model turn (or a sum of turns).
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead,omitempty"`
	CacheWrite int64 `json:"cacheWrite,omitempty"`
	// Incomplete is set when a stream ended before the provider reported
	// its final usage, so the counts are a lower bound.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Add returns the sum of u and v; the sum is incomplete if either is.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Input:      u.Input + v.Input,
		Output:     u.Output + v.Output,
		CacheRead:  u.CacheRead + v.CacheRead,
		CacheWrite: u.CacheWrite + v.CacheWrite,
		Incomplete: u.Incomplete || v.Incomplete,
	}
}

// Message is one user, assistant or toolResult message.
//
// User messages use Content (text blocks). Assistant messages use Content
// (text and thinking blocks), ToolCalls, Usage, Model and StopReason.
// ToolResult messages use Results; ink writes one result per message, but
// readers accept several.
type Message struct {
	Role       Role         `json:"role"`
	Content    []Block      `json:"content,omitempty"`
	ToolCalls  []ToolCall   `json:"toolCalls,omitempty"`
	Usage      *Usage       `json:"usage,omitempty"`
	Model      string       `json:"model,omitempty"`
	StopReason string       `json:"stopReason,omitempty"`
	Results    []ToolResult `json:"results,omitempty"`

	// TaskRecord is the record of a `task` tool result. It is stored beside
	// the message in a transcript entry and never sent to a model.
	TaskRecord json.RawMessage `json:"-"`
	// TaskRecords are the records of background children whose results
	// this message collects (a task_wait result, or ink's note to an agent
	// that ended its turn while they ran). Stored beside the message like
	// TaskRecord and never sent to a model.
	TaskRecords []json.RawMessage `json:"-"`
}

// UserText returns a user message holding one text block.
func UserText(text string) Message {
	return Message{Role: RoleUser, Content: []Block{{Type: "text", Text: text}}}
}

// Text returns the concatenated text blocks of m (thinking excluded).
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// CompactionInstruction is the user message that ends the request for a
// compaction summary: the history before the retained tail, then this.
const CompactionInstruction = `[ink] Context compaction: the conversation so far no longer fits your context window, so the part above will be replaced by a summary that you write now. The most recent messages are kept as they are after your summary. Do not call any tools; reply with the summary only, written so that you can carry on the task without the messages it replaces. Include:
1. Every request and instruction the user gave, quoted in full where the wording matters.
2. What you have done and found so far, with exact file paths, names, commands, numbers and error messages.
3. Decisions taken and why; approaches that failed and why.
4. What is in progress and what remains to be done, in order.
If the conversation starts with an earlier summary, carry everything in it that still matters into yours.`

// summaryPreamble opens the user message that stands for a compacted
// history.
const summaryPreamble = "[ink] The earlier part of this conversation was compacted to fit the model's context window. This is the summary of it; the messages after this one, if any, are the most recent ones, kept as they were. Continue the task from there.\n\n"

// SummaryMessage returns the user message that stands for the compacted
// part of a history: summary, framed so that the model knows what it is.
// The agent loop sends it after a compaction, and transcript readers
// rebuild the same message from a compaction entry.
func SummaryMessage(summary string) Message {
	return UserText(summaryPreamble + summary)
}
