package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/inkdev/ink/model"
)

// Entry types written after the header.
const (
	EntryMessage    = "message"
	EntryAttempt    = "attempt"
	EntryCompaction = "compaction"
)

// Attempt phases.
const (
	PhaseStart = "start"
	PhaseEnd   = "end"
)

// AttemptEntry is the worker's own record of one attempt on a transcript:
// one "start" entry when the attempt begins and one "end" entry when it
// ends. A resume after the supervisor was lost reads the end entry instead
// of a parent-side TaskRecord.
type AttemptEntry struct {
	// Phase is PhaseStart or PhaseEnd.
	Phase     string `json:"phase"`
	AttemptID string `json:"attemptId"`
	// Epoch is the lease's fencing epoch the attempt ran under.
	Epoch int64     `json:"epoch,omitempty"`
	Pid   int       `json:"pid,omitempty"`
	Time  time.Time `json:"time"`
	// Status is the outcome (end only): completed, aborted, timeout, crash
	// or interrupted (Status.EndsAttempt).
	Status Status `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Turns counts the model turns of this attempt (end only).
	Turns int          `json:"turns,omitempty"`
	Usage *model.Usage `json:"usage,omitempty"`
	// FinalTextLen is the byte length of the attempt's final assistant text.
	FinalTextLen int `json:"finalTextLen"`
	// FinalText is the attempt's final assistant text, or its last
	// MaxFinalText bytes when it is longer (FinalTextTail), so a result can
	// be given again without a parent-side record. The whole text is the
	// attempt's last assistant message.
	FinalText string `json:"finalText,omitempty"`
	// Capped (end only) is CappedTurns or CappedBudget when the attempt was
	// stopped by a cap and FinalText is its wrap-up answer.
	Capped Cap `json:"capped,omitempty"`
	// Health (end only) lists the health watch's observations.
	Health []string `json:"health,omitempty"`
	// Lifetime (end only) sums every attempt of the transcript, this one
	// included, so that a reader learns it from the last end entry alone.
	Lifetime *Lifetime `json:"lifetime,omitempty"`
}

// Entry is one line of a transcript after the header.
type Entry struct {
	// Type is EntryMessage, EntryAttempt or EntryCompaction.
	Type string `json:"type"`
	// ID identifies the entry (NewID).
	ID string `json:"id"`
	// Message is set for message entries, with TaskRecord restored.
	Message *model.Message `json:"message,omitempty"`
	// TaskRecord is the raw TaskRecord of a `task` result; message entries only.
	TaskRecord json.RawMessage `json:"taskRecord,omitempty"`
	// TaskRecords are the raw TaskRecords of the background children a
	// message collects (task_wait results, ink's notes); message entries only.
	TaskRecords []json.RawMessage `json:"taskRecords,omitempty"`
	// Attempt is set for attempt entries.
	Attempt *AttemptEntry `json:"-"`
	// Compaction is set for compaction entries.
	Compaction *CompactionEntry `json:"-"`
	// Line is the entry's 1-based line number (the header is line 1).
	Line int `json:"-"`
	// Offset is the byte offset at which the entry's line starts.
	Offset int64 `json:"-"`
}

// wireHead is what every entry line starts with. The fields of attempt and
// compaction entries sit beside "type" and "id" rather than under a key.
type wireHead struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// wireMessage is the on-disk shape of a message entry.
type wireMessage struct {
	wireHead
	Message     *model.Message    `json:"message,omitempty"`
	TaskRecord  json.RawMessage   `json:"taskRecord,omitempty"`
	TaskRecords []json.RawMessage `json:"taskRecords,omitempty"`
}

// wireAttempt is the on-disk shape of an attempt entry.
type wireAttempt struct {
	wireHead
	*AttemptEntry
}

// wireCompaction is the on-disk shape of a compaction entry.
type wireCompaction struct {
	wireHead
	*CompactionEntry
}

// decodeEntry parses and validates one entry line (without or with "\n").
func decodeEntry(line []byte) (Entry, error) {
	return decodeEntryIn(line, nil)
}

// decodeEntryIn is decodeEntry, the texts of a message line decoded into a
// (nil: each its own allocation).
func decodeEntryIn(line []byte, a *arena) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.HasPrefix(line, messagePrefix) {
		// A message line as this package writes it decodes in one pass
		// (decode.go); anything else takes the general path, which also
		// words the error.
		if e, err := decodeMessageLine(line, a); err == nil {
			return e, nil
		}
	}
	return decodeEntryJSON(line)
}

// decodeEntryJSON is decodeEntry by encoding/json alone: the judge of every
// line, and the path of every line decodeMessageLine does not take.
func decodeEntryJSON(line []byte) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if bytes.HasPrefix(line, messagePrefix) {
		var w wireMessage
		if json.Unmarshal(line, &w) == nil && w.Type == EntryMessage && w.ID != "" {
			return messageEntry(w)
		}
	}
	var h wireHead
	if err := json.Unmarshal(line, &h); err != nil {
		return Entry{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if h.ID == "" {
		return Entry{}, fmt.Errorf("%s entry has no id", orUnknown(h.Type))
	}
	switch h.Type {
	case EntryMessage:
		var w wireMessage
		if err := json.Unmarshal(line, &w); err != nil {
			return Entry{}, fmt.Errorf("invalid JSON: %w", err)
		}
		w.ID = h.ID
		return messageEntry(w)
	case EntryAttempt:
		var a AttemptEntry
		if err := json.Unmarshal(line, &a); err != nil {
			var unknown *UnknownStatusError
			var unknownCap *UnknownCapError
			if errors.As(err, &unknown) || errors.As(err, &unknownCap) {
				return Entry{}, fmt.Errorf("attempt entry: %w", err)
			}
			return Entry{}, fmt.Errorf("invalid JSON: %w", err)
		}
		if err := validateAttempt(a); err != nil {
			return Entry{}, err
		}
		return Entry{Type: EntryAttempt, ID: h.ID, Attempt: &a}, nil
	case EntryCompaction:
		var c CompactionEntry
		if err := json.Unmarshal(line, &c); err != nil {
			return Entry{}, fmt.Errorf("invalid JSON: %w", err)
		}
		if err := validateCompaction(c); err != nil {
			return Entry{}, err
		}
		return Entry{Type: EntryCompaction, ID: h.ID, Compaction: &c}, nil
	case "session":
		return Entry{}, errors.New("a second session header after line 1")
	default:
		return Entry{}, fmt.Errorf("unknown entry type %q", h.Type)
	}
}

// messageEntry checks a decoded message line and returns its entry.
func messageEntry(w wireMessage) (Entry, error) {
	if w.Message == nil {
		return Entry{}, errors.New("message entry has no message")
	}
	m := normaliseMessage(*w.Message)
	if len(w.TaskRecord) > 0 && !bytes.Equal(w.TaskRecord, []byte("null")) {
		rec, err := compactObject(w.TaskRecord)
		if err != nil {
			return Entry{}, fmt.Errorf("taskRecord: %w", err)
		}
		m.TaskRecord = rec
	}
	for i, raw := range w.TaskRecords {
		rec, err := compactObject(raw)
		if err != nil {
			return Entry{}, fmt.Errorf("taskRecords[%d]: %w", i, err)
		}
		m.TaskRecords = append(m.TaskRecords, rec)
	}
	if err := validateMessage(m); err != nil {
		return Entry{}, err
	}
	return Entry{Type: EntryMessage, ID: w.ID, Message: &m, TaskRecord: m.TaskRecord, TaskRecords: m.TaskRecords}, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "untyped"
	}
	return s
}

// validateAttempt checks an attempt entry's fields.
func validateAttempt(a AttemptEntry) error {
	if a.AttemptID == "" {
		return errors.New("attempt entry has no attemptId")
	}
	switch a.Phase {
	case PhaseStart:
	case PhaseEnd:
		if !a.Status.EndsAttempt() {
			return fmt.Errorf("attempt end has status %q, want one of completed, aborted, timeout, crash, interrupted", a.Status)
		}
	default:
		return fmt.Errorf("attempt entry has phase %q, want start or end", a.Phase)
	}
	if a.Turns < 0 || a.FinalTextLen < 0 {
		return errors.New("attempt entry has a negative count")
	}
	if !a.Capped.Known() {
		return fmt.Errorf("attempt entry has capped %q, want turns or budget", a.Capped)
	}
	return nil
}

// validateMessage checks that m is a well-formed user, assistant or
// toolResult message.
func validateMessage(m model.Message) error {
	switch m.Role {
	case model.RoleUser, model.RoleAssistant:
		if len(m.Results) > 0 {
			return fmt.Errorf("%s message carries tool results", m.Role)
		}
		if m.Role == model.RoleUser && len(m.ToolCalls) > 0 {
			return errors.New("user message carries tool calls")
		}
	case model.RoleToolResult:
		if len(m.Results) == 0 {
			return errors.New("toolResult message has no results")
		}
		if len(m.ToolCalls) > 0 || len(m.Content) > 0 {
			return errors.New("toolResult message carries content or tool calls")
		}
	default:
		return fmt.Errorf("message role %q is not user, assistant or toolResult", m.Role)
	}
	for _, b := range m.Content {
		if b.Type == "" {
			return errors.New("content block has no type")
		}
	}
	for _, c := range m.ToolCalls {
		if c.ID == "" || c.Name == "" {
			return errors.New("tool call without id or name")
		}
	}
	for _, r := range m.Results {
		if r.ToolCallID == "" {
			return errors.New("tool result without toolCallId")
		}
	}
	if m.TaskRecord != nil && m.Role != model.RoleToolResult {
		return errors.New("taskRecord on a message that is not a toolResult")
	}
	if len(m.TaskRecords) > 0 && m.Role != model.RoleToolResult && m.Role != model.RoleUser {
		return errors.New("taskRecords on a message that is neither a toolResult nor a user message")
	}
	return nil
}

// normaliseMessage gives a decoded message one canonical form: empty lists
// are nil, tool call arguments are compact and JSON null arguments are nil.
// Writing the result and reading it back yields the same message.
func normaliseMessage(m model.Message) model.Message {
	if len(m.Content) == 0 {
		m.Content = nil
	}
	if len(m.Results) == 0 {
		m.Results = nil
	}
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	} else {
		calls := make([]model.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			var buf bytes.Buffer
			if len(c.Args) > 0 && json.Compact(&buf, c.Args) == nil && buf.String() != "null" {
				c.Args = json.RawMessage(buf.Bytes())
			} else {
				c.Args = nil
			}
			calls[i] = c
		}
		m.ToolCalls = calls
	}
	m.TaskRecord = nil
	m.TaskRecords = nil
	return m
}

// compactObject returns raw compacted, requiring a JSON object.
func compactObject(raw json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	if buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	return json.RawMessage(buf.Bytes()), nil
}

// encodeEntry validates e and returns its line with "\n".
func encodeEntry(e Entry) ([]byte, error) {
	head := wireHead{Type: e.Type, ID: e.ID}
	switch e.Type {
	case EntryMessage:
		if e.Message == nil {
			return nil, errors.New("message entry without message")
		}
		m := *e.Message
		if err := validateMessage(m); err != nil {
			return nil, err
		}
		w := wireMessage{wireHead: head, Message: &m}
		if m.TaskRecord != nil {
			rec, err := compactObject(m.TaskRecord)
			if err != nil {
				return nil, fmt.Errorf("taskRecord: %w", err)
			}
			w.TaskRecord = rec
		}
		for i, raw := range m.TaskRecords {
			rec, err := compactObject(raw)
			if err != nil {
				return nil, fmt.Errorf("taskRecords[%d]: %w", i, err)
			}
			w.TaskRecords = append(w.TaskRecords, rec)
		}
		return marshalLine(w)
	case EntryAttempt:
		if e.Attempt == nil {
			return nil, errors.New("attempt entry without attempt")
		}
		if err := validateAttempt(*e.Attempt); err != nil {
			return nil, err
		}
		return marshalLine(wireAttempt{wireHead: head, AttemptEntry: e.Attempt})
	case EntryCompaction:
		if e.Compaction == nil {
			return nil, errors.New("compaction entry without compaction")
		}
		if err := validateCompaction(*e.Compaction); err != nil {
			return nil, err
		}
		return marshalLine(wireCompaction{wireHead: head, CompactionEntry: e.Compaction})
	default:
		return nil, fmt.Errorf("unknown entry type %q", e.Type)
	}
}
