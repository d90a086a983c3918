package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/inkdev/ink/durable"
	"github.com/inkdev/ink/model"
)

// OpenRequest asks OpenAttempt to open a transcript for one attempt.
type OpenRequest struct {
	// FS is what the transcript is written through (durable.OS if nil).
	FS   durable.FS
	Path string
	// Create, when set, is the header of a transcript that does not exist
	// yet; nil continues the one at Path.
	Create *Header
	// SyncBefore, for a new transcript, runs before its creation is synced
	// (the lease record's sync, the directories').
	SyncBefore func() error
	// ExpectHeader, when continuing, is the header that was validated; a
	// file whose header differs is refused.
	ExpectHeader json.RawMessage
	// Repair allows repairing a crash tail (a torn last line, tool calls
	// without results) before the start entry.
	Repair bool
	// Answers are results (TaskRecord set) for task calls left without one,
	// found in the children's own transcripts; they come before the
	// crash-tail repair.
	Answers []model.Message
	// Start and Prompt are the attempt's start entry and its prompt.
	Start  AttemptEntry
	Prompt model.Message
	// Lost decides, for an attempt the transcript started and never ended,
	// whether its end is written now, and with which reason (its holder
	// is provably gone); nil never writes one.
	Lost func(AttemptEntry) (reason string, write bool)
}

// Opened is a transcript opened for an attempt, its start entry and prompt
// written as one durable point.
type Opened struct {
	// Writer appends the attempt's later entries; the caller closes it.
	Writer *Writer
	// View is the history the model sees, start and prompt included, kept
	// in step by the caller with every entry written.
	View *View
	// Reserved are the call ids of the transcript: new calls must not
	// reuse them.
	Reserved []string
	// Lifetime sums the transcript's attempts, this one's start included.
	Lifetime Lifetime
	// Repaired counts the results the repair appended.
	Repaired int
	// Clipped lists the lines the model sees clipped (MaxResumeLine).
	Clipped []ClippedLine
	// Omitted is the part of the history the View leaves out
	// (MaxResumeHistory); nil when it holds the whole history.
	Omitted *Omitted
}

// Refusal is why OpenAttempt refused: nothing was written.
type Refusal struct {
	// Code is what kind of refusal it is: CodeCreateFailed, CodeMalformed
	// or CodeHeaderChanged.
	Code Code
	// Reason says what was found and what to do.
	Reason string
}

// OpenAttempt creates or continues the transcript of req for one attempt:
// a new one gets its header, start entry and prompt in one write; a
// continued one is read in one pass, checked against the validated
// header, repaired (torn tail, answers, outcome-unknown results, the end
// of an attempt lost with its host) and given the start entry and prompt,
// as one durable point. The caller holds the transcript's lease. It
// returns a *Refusal, having written nothing, when the transcript cannot
// be opened as asked, and an error when a write failed.
func OpenAttempt(req OpenRequest) (*Opened, *Refusal, error) {
	fsys := req.FS
	if fsys == nil {
		fsys = durable.OS
	}
	refuse := func(code Code, format string, args ...any) (*Opened, *Refusal, error) {
		return nil, &Refusal{Code: code, Reason: fmt.Sprintf(format, args...)}, nil
	}
	start, prompt := req.Start, req.Prompt
	first := []Entry{{Attempt: &start}, {Message: &prompt}}
	if req.Create != nil {
		w, written, err := CreateSyncing(fsys, req.Path, *req.Create, req.SyncBefore, first...)
		if err != nil {
			return refuse(CodeCreateFailed, "create transcript: %v", err)
		}
		view := NewView()
		_ = view.Apply(written[1])
		return &Opened{Writer: w, View: view, Lifetime: Lifetime{}.Started()}, nil, nil
	}
	tr, err := ReadForResume(req.Path)
	if err != nil {
		return refuse(CodeMalformed, "%v", err)
	}
	if len(req.ExpectHeader) > 0 {
		if changed, err := headerChanged(tr.Header, req.ExpectHeader); err != nil || changed {
			return refuse(CodeHeaderChanged, "the transcript %s changed since it was validated (its header differs); nothing was written", req.Path)
		}
	}
	// Decide everything before changing a byte: a refusal leaves the file
	// byte-identical. The pair check covers the model's history (Skeleton);
	// a call id written twice is refused anywhere in the file.
	if id, ok := ReusedCallID(tr.CallIDs()); ok {
		return refuse(CodeMalformed, "the transcript %s cannot be continued: inconsistent beyond a crash tail: tool call id %s is used twice", req.Path, id)
	}
	msgs := tr.Skeleton()
	answers := DanglingAnswers(msgs, req.Answers)
	scan := ScanPairs(append(slices.Clone(msgs), answers...))
	if scan.State == Refused {
		return refuse(CodeMalformed, "the transcript %s cannot be continued: %s", req.Path, scan.Reason)
	}
	if (tr.Torn != nil || scan.State == Repairable) && !req.Repair {
		return refuse(CodeMalformed, "the transcript %s ends in an interrupted state and repair was not allowed", req.Path)
	}
	if tr.Torn != nil {
		if _, err := tr.RepairTail(fsys); err != nil {
			return refuse(CodeMalformed, "repair %s: %v", req.Path, err)
		}
	}
	w, err := tr.OpenWriter(fsys)
	if err != nil {
		return refuse(CodeMalformed, "%v", err)
	}
	repairs := answers
	if scan.State == Repairable {
		repairs = append(repairs, UnknownOutcomeResults(scan.Missing)...)
	}
	InCallOrder(msgs, repairs)
	life := tr.Lifetime()
	batch := make([]Entry, 0, len(repairs)+len(first)+1)
	if lost, ok := tr.Unfinished(); ok && req.Lost != nil {
		if reason, write := req.Lost(lost); write {
			end := LostEnd(lost, reason, life)
			life = *end.Lifetime
			batch = append(batch, Entry{Attempt: &end})
		}
	}
	view := tr.View()
	for i := range repairs {
		batch = append(batch, Entry{Message: &repairs[i]})
	}
	written, err := w.Append(append(batch, first...)...)
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("transcript write: %w", err)
	}
	for _, e := range written {
		_ = view.Apply(e)
	}
	return &Opened{Writer: w, View: view, Reserved: tr.CallIDs(), Lifetime: life.Started(), Repaired: len(repairs), Clipped: tr.Clipped, Omitted: tr.Omitted}, nil, nil
}

// DanglingAnswers keeps the answers (one result each) whose tool call is
// in msgs without a result yet, in call order.
func DanglingAnswers(msgs []model.Message, answers []model.Message) []model.Message {
	if len(answers) == 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, r := range m.Results {
			answered[r.ToolCallID] = true
		}
	}
	byID := map[string]model.Message{}
	for _, ans := range answers {
		if len(ans.Results) == 1 {
			byID[ans.Results[0].ToolCallID] = ans
		}
	}
	var out []model.Message
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if ans, ok := byID[c.ID]; ok && !answered[c.ID] {
				out = append(out, ans)
				answered[c.ID] = true
			}
		}
	}
	return out
}

// InCallOrder sorts repair results (one result each) into the order of
// their calls in msgs, so that answers from children and outcome-unknown
// results interleave as the calls did.
func InCallOrder(msgs []model.Message, repairs []model.Message) {
	pos := map[string]int{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			pos[c.ID] = len(pos)
		}
	}
	sort.SliceStable(repairs, func(i, j int) bool {
		return pos[repairs[i].Results[0].ToolCallID] < pos[repairs[j].Results[0].ToolCallID]
	})
}

// headerChanged compares the transcript's header with the validated one.
func headerChanged(h Header, want json.RawMessage) (bool, error) {
	var w Header
	if err := json.Unmarshal(want, &w); err != nil {
		return true, err
	}
	a, err := json.Marshal(h)
	if err != nil {
		return true, err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return true, err
	}
	return !bytes.Equal(a, b), nil
}
