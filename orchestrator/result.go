package orchestrator

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

// maxResultBytes caps a task result's text; the tail is kept. It is what
// an attempt's end entry keeps of its final text, so a result recovered
// from the entry reads as the one first given.
const maxResultBytes = session.MaxFinalText

// truncateTail keeps the last max bytes of s without splitting a UTF-8
// sequence and reports how many bytes were dropped.
func truncateTail(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:], cut
}

// CompactTokens renders a token count the way ink shows it everywhere: 950,
// 1.4k, 12k, 2.1M.
func CompactTokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 10_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	case n < 1_000_000:
		return fmt.Sprintf("%dk", (n+500)/1000)
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1_000_000), ".0") + "M"
	}
}

// Turns renders a number of turns: "1 turn", "3 turns".
func Turns(n int) string {
	return fmt.Sprintf("%d %s", n, Plural(n, "turn", "turns"))
}

// Plural is one when n is 1, else many: the words ink's messages agree
// with a count ("1 child", "3 children"; "it is", "they are").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// usageTrailer is "(child: N turns, 12k in / 1.4k out[ / 9.8k cache])".
func usageTrailer(turns int, u model.Usage) string {
	ge := ""
	if u.Incomplete {
		ge = "≥"
	}
	s := fmt.Sprintf("(child: %s, %s%s in / %s%s out", Turns(turns), ge, CompactTokens(u.Input), ge, CompactTokens(u.Output))
	if c := u.CacheRead + u.CacheWrite; c > 0 {
		s += fmt.Sprintf(" / %s cache", CompactTokens(c))
	}
	return s + ")"
}

// FirstRunes returns the first n code points of s, with "…" when cut.
func FirstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// resultInput is everything a task result is composed from.
type resultInput struct {
	Status        Status
	Reason        string
	Text          string // this attempt's final text only (or its tail: see TextLen)
	TextLen       int    // the whole final text's length when Text is its tail; 0: len(Text)
	Turns         int
	Usage         model.Usage
	Timeout       string // human timeout, for timeout results
	ChildID       string
	Transcript    string // path when the transcript exists, else ""
	Prompt        string // the task's prompt, for the handoff
	WorktreeLines []string
	ExtraLines    []string    // repair notes, lifetime line, …
	Health        []string    // health observations
	Capped        session.Cap // the cap that wrapped the child up early, if one did
	MaxTurns      int         // the turn cap it ran under (for a "turns" cap)
	// Shell selects hints for a person at a shell (`ink task --resume`)
	// rather than for a model (`task({resume: …})`).
	Shell bool
	// Command runs ink at that shell ("" means "ink").
	Command string
}

// resumeHint tells the reader how to continue the child id; command runs
// ink at the reader's shell ("" means "ink").
func resumeHint(id string, shell bool, command string) string {
	if shell {
		if command == "" {
			command = "ink"
		}
		return fmt.Sprintf("child session id: %s — continue it with: %s task --resume %s \"…\"", id, command, id)
	}
	return fmt.Sprintf("child session id: %s — continue it with task({resume: %q, prompt: \"…\"})", id, id)
}

// composeResult renders a task result and reports whether it is an error
// for the calling model: the child's final text (or what went wrong), what
// became of its worktree, its usage, the id to resume it, and for a failure
// a handoff (the transcript path and the original prompt).
func composeResult(in resultInput) (string, bool) {
	var b strings.Builder
	hasText := strings.TrimSpace(in.Text) != ""
	isError := false
	switch in.Status {
	case StatusCompleted:
		switch {
		case hasText:
			b.WriteString(shownAnswer(in))
			if in.Capped != "" {
				fmt.Fprintf(&b, "\n\n%s", cappedLine(in))
			}
		case in.Capped != "":
			isError = true
			fmt.Fprintf(&b, "[task] child spent %s without producing a final answer (%s).", Turns(in.Turns), cappedWhy(in.Capped))
		default:
			b.WriteString("(subagent completed with no output)")
		}
	case StatusCrash:
		if hasText {
			b.WriteString(shownAnswer(in))
			fmt.Fprintf(&b, "\n\n[task] child failed after %s: %s; partial result above.", Turns(in.Turns), in.Reason)
		} else {
			isError = true
			fmt.Fprintf(&b, "task failed after %s: %s.", Turns(in.Turns), in.Reason)
		}
	case StatusTimeout:
		isError = true
		fmt.Fprintf(&b, "task timed out after %s (%s ran).", in.Timeout, Turns(in.Turns))
	case StatusInterrupted:
		isError = true
		fmt.Fprintf(&b, "task interrupted after %s: %s.", Turns(in.Turns), in.Reason)
	default: // aborted
		isError = true
		fmt.Fprintf(&b, "task aborted before completion (%s ran): %s.", Turns(in.Turns), in.Reason)
	}
	for _, h := range in.Health {
		b.WriteString("\n[health] ")
		b.WriteString(h)
	}
	for _, l := range in.WorktreeLines {
		b.WriteString("\n")
		b.WriteString(l)
	}
	for _, l := range in.ExtraLines {
		b.WriteString("\n")
		b.WriteString(l)
	}
	b.WriteString("\n")
	b.WriteString(usageTrailer(in.Turns, in.Usage))
	if in.Transcript != "" {
		b.WriteString("\n")
		b.WriteString(resumeHint(in.ChildID, in.Shell, in.Command))
	}
	if isError || in.Status == StatusCrash {
		b.WriteString("\n")
		if in.Transcript != "" {
			fmt.Fprintf(&b, "work is preserved in the full transcript:\n  %s\n", in.Transcript)
		} else {
			b.WriteString("(transcript not persisted — work was not saved)\n")
		}
		fmt.Fprintf(&b, "the child's task was: %q\n", FirstRunes(in.Prompt, 200))
		b.WriteString("Continue it with the resume id above, or start a new task with a narrower prompt.")
	}
	return b.String(), isError
}

// cappedLine says that a child's answer is a wrap-up, not a completion.
func cappedLine(in resultInput) string {
	if in.Capped == session.CappedBudget {
		return "[task] the run's token budget ran out; this is the child's wrap-up answer, not a confirmed completion."
	}
	return fmt.Sprintf("[task] hit the %d-turn cap; this is the child's wrap-up answer, not a confirmed completion.", cmp.Or(in.MaxTurns, in.Turns))
}

func cappedWhy(capped session.Cap) string {
	if capped == session.CappedBudget {
		return "the run's token budget ran out"
	}
	return "it hit its turn cap"
}

// shownAnswer is the child's answer as its task result shows it, first
// thing in the result: its final text, cut to its last 50KB (saying so)
// when longer; "" when the result carries no answer (no text, or a status
// whose result is a failure message).
func shownAnswer(in resultInput) string {
	if strings.TrimSpace(in.Text) == "" || (in.Status != StatusCompleted && in.Status != StatusCrash) {
		return ""
	}
	kept, dropped := truncateTail(in.Text, maxResultBytes)
	dropped = max(dropped, in.TextLen-len(kept))
	if dropped > 0 {
		return fmt.Sprintf("[task] result truncated to its last 50KB (dropped %d bytes). Ask the child to write long output to a file and report its path instead.\n", dropped) + kept
	}
	return kept
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
