package session

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
)

// CompactionEntry records that the history a model sees was compacted: the
// messages before the retained tail were replaced by a summary the model
// wrote. Every original message stays in the transcript; readers rebuild
// the model's history from the last compaction (View).
type CompactionEntry struct {
	// Summary is the model's summary of the messages it replaces.
	Summary string `json:"summary"`
	// FirstKept is the id of the first message entry of the retained tail,
	// the recent messages kept as they are after the summary; "" when no
	// message was kept. It names a user or assistant message the model saw
	// when the compaction was made.
	FirstKept string `json:"firstKept,omitempty"`
	// TokensBefore is the size, in tokens, of the history the compaction
	// replaced (reported by the provider or estimated).
	TokensBefore int64 `json:"tokensBefore"`
	// Trigger says why it happened: "threshold" (the history neared the
	// model's context window) or "overflow" (the provider refused it as too
	// long).
	Trigger string `json:"trigger,omitempty"`
	// Usage is the usage of the model call that wrote the summary.
	Usage *model.Usage `json:"usage,omitempty"`
	Time  time.Time    `json:"time"`
}

// validateCompaction checks a compaction entry's fields; whether FirstKept
// names a message the model saw is checked against the history (View.Apply).
func validateCompaction(c CompactionEntry) error {
	if strings.TrimSpace(c.Summary) == "" {
		return errors.New("compaction entry has no summary")
	}
	if c.TokensBefore < 0 {
		return errors.New("compaction entry has a negative tokensBefore")
	}
	if u := c.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0) {
		return errors.New("compaction entry has a negative usage count")
	}
	return nil
}

// View is the history a model sees on a transcript, each message with the
// id of its entry: every message in file order until the first compaction;
// after a compaction, the compaction's summary (model.SummaryMessage)
// followed by the messages from its FirstKept entry on.
//
// Transcript.View builds one from a file; the worker running an attempt
// keeps its own in step by applying every entry it appends, so that the
// tail of a compaction can be named by its entry id. A View is not safe for
// concurrent use.
type View struct {
	msgs []model.Message
	ids  []string // entry id of each message; "" for a compaction's summary
}

// NewView returns the empty view of a transcript without messages.
func NewView() *View { return &View{} }

// Messages returns a copy of the messages the model sees, in order.
func (v *View) Messages() []model.Message {
	return slices.Clone(v.msgs)
}

// Len returns the number of messages in the view (a summary counts as one).
func (v *View) Len() int { return len(v.msgs) }

// Apply adds an entry as written to the transcript: a message entry is
// appended to the view; a compaction entry replaces every message before
// its FirstKept entry (all of them when it kept none) by its summary;
// other entries change nothing. A compaction whose FirstKept is not a user
// or assistant message of the view is an error, and the view is left as it
// was.
func (v *View) Apply(e Entry) error {
	switch {
	case e.Type == EntryMessage && e.Message != nil:
		v.msgs = append(v.msgs, *e.Message)
		v.ids = append(v.ids, e.ID)
	case e.Type == EntryCompaction && e.Compaction != nil:
		from := len(v.msgs)
		if id := e.Compaction.FirstKept; id != "" {
			from = slices.Index(v.ids, id)
			if from < 0 {
				return fmt.Errorf("compaction %s keeps the history from entry %s, which is not a message the model saw", e.ID, id)
			}
			if r := v.msgs[from].Role; r != model.RoleUser && r != model.RoleAssistant {
				return fmt.Errorf("compaction %s keeps the history from entry %s, a %s message; a retained tail starts at a user or assistant message", e.ID, id, r)
			}
		}
		msgs := append([]model.Message{model.SummaryMessage(e.Compaction.Summary)}, v.msgs[from:]...)
		ids := append([]string{""}, v.ids[from:]...)
		v.msgs, v.ids = msgs, ids
	}
	return nil
}

// ViewEntry is one message of a View with the id of the entry that holds
// it ("" for a compaction's summary), as a remote worker receives its
// history.
type ViewEntry struct {
	ID      string        `json:"id,omitempty"`
	Message model.Message `json:"message"`
}

// Export returns the view's messages with their entry ids.
func (v *View) Export() []ViewEntry {
	out := make([]ViewEntry, len(v.msgs))
	for i := range v.msgs {
		out[i] = ViewEntry{ID: v.ids[i], Message: v.msgs[i]}
	}
	return out
}

// ViewFrom rebuilds a view from what Export returned.
func ViewFrom(entries []ViewEntry) *View {
	v := &View{msgs: make([]model.Message, len(entries)), ids: make([]string, len(entries))}
	for i, e := range entries {
		v.msgs[i], v.ids[i] = e.Message, e.ID
	}
	return v
}

// FirstKept returns the entry id of the first of the last kept messages of
// the view, the value of CompactionEntry.FirstKept for a compaction that
// keeps them; "" when kept is 0. It is an error when kept is out of range
// or would keep the summary of an earlier compaction, which has no entry of
// its own.
func (v *View) FirstKept(kept int) (string, error) {
	if kept == 0 {
		return "", nil
	}
	if kept < 0 || kept > len(v.msgs) {
		return "", fmt.Errorf("cannot keep the last %d messages of a history of %d", kept, len(v.msgs))
	}
	id := v.ids[len(v.ids)-kept]
	if id == "" {
		return "", fmt.Errorf("the last %d messages of the history start with an earlier summary or an unsaved message, which has no entry to name", kept)
	}
	return id, nil
}
