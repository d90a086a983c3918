package session

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/inkdev/ink/model"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpora in testdata/fuzz")

// FuzzOpen feeds arbitrary bytes to the transcript reader. It must never
// panic; a file that opens must encode back, entry for entry, to lines
// that read as the same messages; and the repair chosen for its final line
// must match what the reader reported, leaving exactly the bytes before a
// torn line. Everything stays in memory: the file side of writing and
// repairing is covered by the unit tests.
func FuzzOpen(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parseTranscript("fuzz.jsonl", data)
		if err != nil {
			return
		}
		if tr.Size != int64(len(data)) || tr.Header.ID == "" {
			t.Fatalf("opened with size %d header %+v", tr.Size, tr.Header)
		}
		_, out, err := encodeHeader(tr.Header)
		if err != nil {
			t.Fatalf("header that opened does not write back: %v", err)
		}
		for i, m := range tr.Messages {
			line, err := encodeEntry(Entry{Type: EntryMessage, ID: NewID(), Message: &m})
			if err != nil {
				t.Fatalf("message %d that opened does not write back: %v", i, err)
			}
			out = append(out, line...)
		}
		back, err := parseTranscript("copy.jsonl", out)
		if err != nil {
			t.Fatalf("rewritten transcript does not open: %v", err)
		}
		if back.Torn != nil || !reflect.DeepEqual(back.Messages, tr.Messages) {
			t.Fatalf("messages changed on rewrite:\n got %#v\nwant %#v", back.Messages, tr.Messages)
		}

		// The model's history is every message, or the last summary and
		// then the newest messages of the file, unchanged.
		h := tr.History()
		if cs := tr.Compactions(); len(cs) == 0 {
			if len(h) != len(tr.Messages) || len(h) > 0 && !reflect.DeepEqual(h, tr.Messages) {
				t.Fatalf("history of an uncompacted file is not its messages")
			}
		} else {
			if len(h) == 0 || !reflect.DeepEqual(h[0], model.SummaryMessage(cs[len(cs)-1].Summary)) {
				t.Fatalf("history does not start with the last summary: %#v", h)
			}
			kept := h[1:]
			if len(kept) > len(tr.Messages) || len(kept) > 0 && !reflect.DeepEqual(kept, tr.Messages[len(tr.Messages)-len(kept):]) {
				t.Fatalf("history after the summary is not the newest messages of the file")
			}
		}

		// The final line, as RepairTail finds it.
		terminated := data[len(data)-1] == '\n'
		body := data
		if terminated {
			body = data[:len(data)-1]
		}
		start := int64(bytes.LastIndexByte(body, '\n') + 1)
		action, _, err := judgeTail(data[start:], start, terminated)
		if err != nil {
			t.Fatalf("a file that opens has an unrepairable tail: %v", err)
		}
		switch {
		case tr.Torn == nil:
			if action != RepairNone {
				t.Fatalf("clean file judged %s", action)
			}
		case tr.Torn.NeedsNewline:
			if action != RepairTerminated || tr.Torn.Offset != start {
				t.Fatalf("judged %s for %+v", action, tr.Torn)
			}
			fixed, err := parseTranscript("fixed.jsonl", append(append([]byte(nil), data...), '\n'))
			if err != nil || fixed.Torn != nil || !reflect.DeepEqual(fixed.Messages, tr.Messages) {
				t.Fatalf("terminated file: %v", err)
			}
		default:
			if action != RepairTruncated || tr.Torn.Offset != start || tr.Torn.Bytes != len(data)-int(start) {
				t.Fatalf("judged %s at %d for %+v", action, start, tr.Torn)
			}
			fixed, err := parseTranscript("fixed.jsonl", data[:start])
			if err != nil || fixed.Torn != nil || !reflect.DeepEqual(fixed.Messages, tr.Messages) {
				t.Fatalf("truncated file: %v", err)
			}
		}
	})
}

// historyFromBytes turns fuzz bytes into a message history: each byte's top
// two bits pick an assistant message with calls, a result, a user message
// or a text reply; its low bits pick call ids.
func historyFromBytes(data []byte) []model.Message {
	var msgs []model.Message
	for i := 0; i < len(data); i++ {
		b := data[i]
		id := "c" + strconv.Itoa(int(b&7))
		switch b >> 6 {
		case 0:
			m := model.Message{Role: model.RoleAssistant}
			for n := 0; n <= int(b>>3&7); n++ {
				m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: "c" + strconv.Itoa((int(b&7)+n)%8), Name: "read"})
			}
			msgs = append(msgs, m)
		case 1:
			msgs = append(msgs, model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read"}}})
		case 2:
			msgs = append(msgs, model.UserText("u"))
		default:
			msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "t"}}})
		}
	}
	return msgs
}

// pairedByHand reports whether every call has exactly one later result,
// every result has one earlier call, and ids are unique.
func pairedByHand(msgs []model.Message) bool {
	calls := map[string]int{}
	results := map[string]int{}
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			if _, dup := calls[c.ID]; dup {
				return false
			}
			calls[c.ID] = i
		}
		for _, r := range m.Results {
			at, ok := calls[r.ToolCallID]
			if !ok || at > i {
				return false
			}
			results[r.ToolCallID]++
		}
	}
	for id := range calls {
		if results[id] != 1 {
			return false
		}
	}
	for _, n := range results {
		if n != 1 {
			return false
		}
	}
	return true
}

// FuzzScanPairs checks ScanPairs on generated histories: it never panics,
// Consistent means paired, Refused gives a reason, and a Repairable history
// becomes Consistent with its unknown-outcome results appended.
func FuzzScanPairs(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := historyFromBytes(data)
		s := ScanPairs(msgs)
		switch s.State {
		case Consistent:
			if len(s.Missing) > 0 || !pairedByHand(msgs) {
				t.Fatalf("consistent but not paired: %+v", msgs)
			}
		case Refused:
			if s.Reason == "" || len(s.Missing) > 0 {
				t.Fatalf("refused without a reason: %+v", s)
			}
		case Repairable:
			if len(s.Missing) == 0 {
				t.Fatal("repairable with nothing missing")
			}
			fixed := append(append([]model.Message(nil), msgs...), UnknownOutcomeResults(s.Missing)...)
			if r := ScanPairs(fixed); r.State != Consistent || !pairedByHand(fixed) {
				t.Fatalf("repair left %v %s", r.State, r.Reason)
			}
		default:
			t.Fatalf("state %v", s.State)
		}
	})
}

// TestFuzzSeedCorpora keeps testdata/fuzz in step with the cases above;
// run with -update to rewrite it.
func TestFuzzSeedCorpora(t *testing.T) {
	opens := map[string][]byte{}
	full := newTranscript(t, Header{}, sampleMessages())
	data := readFile(t, full)
	opens["clean"] = data
	opens["torn-mid-json"] = data[:len(data)-25]
	opens["no-final-newline"] = data[:len(data)-1]
	opens["header-only"] = headerLine(t, "h")
	opens["interior-garbage"] = lines(headerLine(t, "h"), []byte("x\n"), messageLine(t, model.UserText("y")))
	opens["empty"] = nil
	child := validLaunch("p", "c")
	opens["child-with-attempts"] = func() []byte {
		p := newTranscript(t, Header{ID: "c", Parent: "p", Launch: &child}, sampleMessages()[:2])
		w, _ := OpenWriter(p)
		w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: "a", Status: "interrupted", Reason: "host lost"})
		w.Close()
		return readFile(t, p)
	}()
	opens["compacted"] = func() []byte {
		p := newTranscript(t, Header{}, nil)
		w, _ := OpenWriter(p)
		var ids []string
		for _, m := range sampleMessages() {
			e, _ := w.AppendMessage(m)
			ids = append(ids, e.ID)
		}
		w.AppendCompaction(CompactionEntry{Summary: "found login", FirstKept: ids[1], TokensBefore: 9000, Usage: &model.Usage{Input: 8000, Output: 40}})
		w.AppendMessage(model.UserText("and logout?"))
		w.AppendCompaction(CompactionEntry{Summary: "found login; asked about logout"})
		w.Close()
		return readFile(t, p)
	}()
	args, _ := json.Marshal(map[string]string{"k": "<v> & 🙂"})
	opens["args-and-null"] = lines(headerLine(t, "h"),
		messageLine(t, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "read", Args: args}, {ID: "2", Name: "ls"}}}))

	pairs := map[string][]byte{
		"consistent":     {0x00, 0x40, 0x80, 0xc0},
		"repairable":     {0x80, 0x08, 0x40},
		"orphan-user":    {0x00, 0x80},
		"duplicate-call": {0x00, 0x40, 0x00},
		"result-first":   {0x41, 0x01},
		"double-result":  {0x00, 0x40, 0x40},
	}
	for target, seeds := range map[string]map[string][]byte{"FuzzOpen": opens, "FuzzScanPairs": pairs} {
		dir := filepath.Join("testdata", "fuzz", target)
		for name, b := range seeds {
			path := filepath.Join(dir, name)
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if *update {
				os.MkdirAll(dir, 0o755)
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("seed %s missing (run go test -run TestFuzzSeedCorpora -update): %v", path, err)
			}
		}
	}
}
