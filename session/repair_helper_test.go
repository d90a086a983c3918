package session

import (
	"errors"
	"fmt"

	"github.com/inkdev/ink/model"
)

// This file is test code only. ink repairs a transcript in one place,
// OpenAttempt (a resume's Repair: true), which composes ScanPairs,
// Resumable.RepairTail and UnknownOutcomeResults and then writes the
// attempt's start entry. Repair composes the same blocks on their own, so
// that these tests can check what the repair alone does to the file.

// ErrRepairRefused marks a transcript whose history is inconsistent beyond
// a crash tail; Repair left it byte-identical.
var ErrRepairRefused = errors.New("transcript cannot be repaired")

// ResumeRepair reports what Repair did.
type ResumeRepair struct {
	// Tail is what RepairTail did to the final line.
	Tail TailRepair
	// Interrupted lists the calls that were given an unknown-outcome result.
	Interrupted []model.ToolCall
}

// Changed reports whether Repair wrote anything.
func (r ResumeRepair) Changed() bool {
	return r.Tail.Action != RepairNone || len(r.Interrupted) > 0
}

// String words the repair for a user, e.g. "transcript repaired: 1
// interrupted tool call(s)".
func (r ResumeRepair) String() string {
	if !r.Changed() {
		return "transcript needed no repair"
	}
	s := "transcript repaired:"
	if r.Tail.Action != RepairNone {
		s += " " + r.Tail.String() + ";"
	}
	return s + fmt.Sprintf(" %d interrupted tool call(s)", len(r.Interrupted))
}

// Repair prepares the transcript at path to be resumed (docs/architecture.md,
// "Resume", step 4):
// it reads the whole file, checks the tool call/result pairs of the history
// (the torn final line left out), and when they are Consistent or
// Repairable, repairs the tail (RepairTail) and appends an unknown-outcome
// result for every call of the last assistant message that has none.
// Recorded calls are never re-run. When the history is refused, or the file
// cannot be read, nothing is written: the error wraps ErrRepairRefused for
// an inconsistent history. The caller must hold the transcript's lease.
func Repair(path string) (ResumeRepair, error) {
	t, err := Open(path)
	if err != nil {
		return ResumeRepair{}, fmt.Errorf("repair: %w", err)
	}
	scan := ScanPairs(t.Messages)
	if scan.State == Refused {
		return ResumeRepair{}, fmt.Errorf("repair %s: %w: %s", path, ErrRepairRefused, scan.Reason)
	}
	var rep ResumeRepair
	if t.Torn != nil {
		if rep.Tail, err = RepairTail(path); err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
	} else {
		rep.Tail = TailRepair{Action: RepairNone, Offset: t.Size}
	}
	if scan.State == Repairable {
		w, err := OpenWriter(path)
		if err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
		for _, m := range UnknownOutcomeResults(scan.Missing) {
			if _, err := w.AppendMessage(m); err != nil {
				w.Close()
				return rep, fmt.Errorf("repair: %w", err)
			}
		}
		if err := w.Close(); err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
		rep.Interrupted = scan.Missing
	}
	return rep, nil
}

// String names the state.
func (s PairState) String() string {
	switch s {
	case Consistent:
		return "consistent"
	case Repairable:
		return "repairable"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("PairState(%d)", int(s))
}
