package session

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// decodeSeeds are message lines of every shape the message decoder meets:
// what this package writes, and what it must leave to encoding/json or
// decode exactly as encoding/json does (escapes, invalid UTF-8, lone and
// paired surrogates, nulls, unknown and differently cased keys, spaces).
func decodeSeeds(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range sampleMessages() {
		line, err := encodeEntry(Entry{Type: EntryMessage, ID: "e1", Message: &m})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","toolName":"read","content":"x\n\"y\"\u00e9\u003c\/\b\f\r\t\\"}]}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"\ud83d\ude00 \ud83d \ude00 \ud83d\u0041 \udc00\ud83d x\ud800"}]}}`,
		"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf8 \xe2\x9c and \\n \xc3\"}]}}",
		"{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"bad \xff without escapes\"}]}}",
		`{"type":"message","id":"a","message":{"role":"assistant","toolCalls":[{"id":"c","name":"n","args":{ "a" : [1, 2.5e3, "x y"] }},{"id":"d","name":"n","args":null},{"id":"e","name":"n"}],"usage":{"input":1,"output":-0,"cacheRead":3,"cacheWrite":4,"incomplete":true},"model":"m\u00e9","stopReason":"toolUse"}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[],"toolCalls":[],"results":null,"usage":null}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","content":null,"extra":{"deep":[1,{"x":null}]}},"other":true}`,
		` { "type" : "message" , "id" : "a" , "message" : { "role" : "user" , "content" : [ { "type" : "text" , "text" : "hi" } ] } } ` + "\r",
		`{"type":"message","id":"a","message":{"role":"user","Content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"message":{"role":"user"}}`,
		`{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","toolName":"task","content":"","isError":false}]},"taskRecord":{ "version" : 1 }}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"x"}]},"taskRecords":[{"a":1},{ "b" : 2 }]}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"x"}]},"taskRecords":[]}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"x"}]},"taskRecord":null,"taskRecords":null}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":null}]}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","usage":{"input":1.5}}}`,
		`{"type":"message","id":"a","message":{"role":"assistant","usage":{"input":99999999999999999999}}}`,
		`{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","toolName":"read","content":"x","isError":null}]}}`,
		`{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"x"}]}} x`,
		`{"type":"message","id":"a","message":null}`,
		`{"type":"message","id":"","message":{"role":"user"}}`,
		`{"type":"message","id":"a","message":{"role":"system","content":[{"type":"text","text":"x"}]}}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzDecodeMessage: a line the message decoder accepts is one
// encoding/json accepts (decodeEntryJSON), with the same entry, its texts
// decoded each on its own or into an arena (one of a few bytes, so that
// they span its buffers).
func FuzzDecodeMessage(f *testing.F) {
	for _, line := range decodeSeeds(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := decodeMessageLine(line, nil)
		a := newArena(7)
		ea, aerr := decodeMessageLine(line, a)
		if (err == nil) != (aerr == nil) || !reflect.DeepEqual(e, ea) {
			t.Fatalf("decoded %+v (%v), into an arena %+v (%v), of %q", e, err, ea, aerr, line)
		}
		if err != nil {
			return
		}
		want, werr := decodeEntryJSON(line)
		if werr != nil {
			t.Fatalf("decoded a line encoding/json refuses (%v): %q", werr, line)
		}
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("decoded %+v, encoding/json %+v, of %q", e, want, line)
		}
	})
}

// TestDecodeMessageTakesWhatInkWrites: every message this package writes
// is decoded by the message decoder, not left to encoding/json; escapes,
// invalid UTF-8 and surrogates it decodes as encoding/json does.
func TestDecodeMessageTakesWhatInkWrites(t *testing.T) {
	msgs := append(sampleMessages(),
		model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c", ToolName: "read", Content: "<a href=\"x\">\\ \u2028 \x00 \xff \U0001F600 ✓\n", IsError: true}}},
		model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "ok"}}, Usage: &model.Usage{Input: 1, Output: 2, Incomplete: true}},
	)
	for _, m := range msgs {
		line, err := encodeEntry(Entry{Type: EntryMessage, ID: "e1", Message: &m})
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMessageLine(line, nil)
		if err != nil {
			t.Fatalf("the message decoder leaves to encoding/json a line ink writes: %q", line)
		}
		want, err := decodeEntryJSON(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, encoding/json %+v (%v), of %q", got, want, err, line)
		}
		if in, err := decodeEntryIn(line, newArena(64)); err != nil || !reflect.DeepEqual(in, want) {
			t.Fatalf("decoded into an arena %+v (%v), encoding/json %+v, of %q", in, err, want, line)
		}
	}
	for _, line := range decodeSeeds(t) {
		got, gerr := decodeEntry(line)
		want, werr := decodeEntryJSON(line)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeEntry %+v (%v), encoding/json %+v (%v), of %q", got, gerr, want, werr, line)
		}
	}
}

// TestDecodeMessageAllocatesItsStrings: decoding a tool result line of
// 9 KB of escaped output costs the message, its result and its strings —
// one allocation each, the output's the size of its line at most — and no
// copy of the line, which is what makes a resume's decoding of the history
// cheap in time and memory (encoding/json makes some twenty allocations
// and copies the output twice).
func TestDecodeMessageAllocatesItsStrings(t *testing.T) {
	out := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { // ✓ <\n", 150)
	m := model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "call-1", ToolName: "read", Content: out}}}
	line, err := encodeEntry(Entry{Type: EntryMessage, ID: "01jd8x3k9q7m2v5n6p4r8s0t1w", Message: &m})
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := decodeEntry(line); err != nil {
			t.Fatal(err)
		}
	})
	// The reader, the message, the results slice, and the id, call id,
	// tool name and content strings.
	if allocs > 8 {
		t.Errorf("decoding a tool result line allocates %v times, want at most 8", allocs)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 20
	for range n {
		if _, err := decodeEntry(line); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// The content's allocation is rounded up to a size class, at most an
	// eighth more.
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(line))*5/4 {
		t.Errorf("decoding a tool result line of %d bytes allocates %d bytes, want at most 1.25× the line's size", len(line), per)
	}
	var w wireMessage
	if err := json.Unmarshal(line, &w); err != nil || !reflect.DeepEqual(*w.Message, m) {
		t.Fatalf("the line does not read back: %v", err)
	}
}

// TestReadForResumeDecodesTheHistoryOnce: reading a transcript for a
// resume costs, per message of the history it decodes, about a dozen
// allocations — the skim of an assistant line, the message's, its lists'
// and its short strings'; its texts share a few large buffers — where
// reading each line twice, the second time by encoding/json, made 29.
func TestReadForResumeDecodesTheHistoryOnce(t *testing.T) {
	out := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { // ✓\n", 150)
	var msgs []model.Message
	const turns = 300
	for i := range turns {
		id := "call-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		msgs = append(msgs,
			model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "Reading the next file."}},
				ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)}}},
			model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: out}}})
	}
	path := newTranscript(t, Header{}, msgs)
	var r *Resumable
	allocs := testing.AllocsPerRun(3, func() {
		var err error
		if r, err = ReadForResume(path); err != nil {
			t.Fatal(err)
		}
	})
	if got := r.View().Messages(); len(got) != len(msgs) || got[len(got)-1].Results[0].Content != out {
		t.Fatalf("the history reads back as %d messages, want %d", len(got), len(msgs))
	}
	if per := allocs / float64(len(msgs)); per > 15 {
		t.Errorf("ReadForResume allocates %.1f times per message of the history, want at most 15", per)
	}
}
