package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

// openSeeds reads the FuzzOpen seed corpus: transcripts clean, torn,
// compacted, damaged and empty.
func openSeeds(t testing.TB) map[string][]byte {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		lit = strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")")
		s, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("seed %s: %v", e.Name(), err)
		}
		out[e.Name()] = []byte(s)
	}
	return out
}

// sameAsOpen holds ReadForResume to its contract with Open on the file
// holding data. When ReadForResume refuses the file, Open refuses it with
// the same error. When it reads it, its history starts at some line
// (from); when its quick read was used, the user and toolResult message
// lines before it whose start is as ink writes it (nonAssistantPrefix)
// are the skipped lines.
// Then Open, on the file whose skipped lines the skimmer does not accept
// (damaged, or written as this package never writes) are replaced by
// intact lines of the same id and role, reads exactly what ReadForResume
// read: header, torn tail, size, history, call ids, attempts, clipping and
// omission, and ReadForResume's Skeleton is the skeleton of that history.
// When no skipped line needed replacing, that file is data itself: Open
// reads data as ReadForResume does.
func sameAsOpen(t *testing.T, data []byte) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tr, oerr := Open(path)
	r, rerr := ReadForResume(path)
	if rerr != nil {
		if oerr == nil || oerr.Error() != rerr.Error() {
			t.Fatalf("ReadForResume refused where Open did not refuse alike:\nOpen:          %v\nReadForResume: %v", oerr, rerr)
		}
		return
	}
	var after []byte
	var replaced []int
	if r.skipped {
		after, replaced = wholeSkipped(t, data, r.from)
	}
	if after != nil {
		path = filepath.Join(dir, "whole.jsonl")
		if err := os.WriteFile(path, after, 0o600); err != nil {
			t.Fatal(err)
		}
		if tr, oerr = Open(path); oerr != nil {
			t.Fatalf("ReadForResume read the file, and Open refuses it with lines %v made whole: %v", replaced, oerr)
		}
	} else if oerr != nil {
		t.Fatalf("ReadForResume read a file Open refuses, and no skipped line is damaged: %v", oerr)
	}
	// Lines made whole change the file's length, before any torn tail.
	shift := int64(len(data) - len(after))
	if after == nil {
		shift = 0
	}
	torn := tr.Torn
	if torn != nil {
		moved := *torn
		moved.Offset += shift
		torn = &moved
	}
	if !reflect.DeepEqual(r.Header, tr.Header) || !reflect.DeepEqual(r.Torn, torn) || r.Size != tr.Size+shift {
		t.Fatalf("header, torn tail or size differ:\n%+v %+v %d\n%+v %+v %d", r.Header, r.Torn, r.Size, tr.Header, torn, tr.Size+shift)
	}
	if want := historySkeleton(tr, r.from); !reflect.DeepEqual(r.Skeleton(), want) {
		t.Fatalf("skeletons differ:\n got %+v\nwant %+v", r.Skeleton(), want)
	}
	if !reflect.DeepEqual(r.CallIDs(), tr.CallIDs()) {
		t.Fatalf("call ids differ: %v / %v", r.CallIDs(), tr.CallIDs())
	}
	gv, wv := r.View(), tr.View()
	if !reflect.DeepEqual(gv.msgs, wv.msgs) || !reflect.DeepEqual(gv.ids, wv.ids) {
		t.Fatalf("histories differ:\n got %+v %v\nwant %+v %v", gv.msgs, gv.ids, wv.msgs, wv.ids)
	}
	var life Lifetime
	for _, a := range tr.Attempts() {
		life.add(a)
	}
	if r.Lifetime() != life {
		t.Fatalf("lifetime %+v, want %+v", r.Lifetime(), life)
	}
	ge, gok := r.LastAttemptEnd()
	we, wok := tr.LastAttemptEnd()
	if gok != wok || !reflect.DeepEqual(ge, we) {
		t.Fatalf("last attempt end %+v %v, want %+v %v", ge, gok, we, wok)
	}
}

// wholeSkipped returns data with every skipped line before line from
// (see sameAsOpen) that the skimmer does not accept as the message its
// start names replaced by an intact one of the same id and role, and the
// numbers of the lines replaced; nil when none needed it.
func wholeSkipped(t *testing.T, data []byte, from int) ([]byte, []int) {
	t.Helper()
	lines := strings.SplitAfter(string(data), "\n")
	var replaced []int
	for i := 1; i < len(lines) && i+1 < from; i++ {
		line := []byte(lines[i])
		id, role, ok := nonAssistantPrefix(line)
		if !ok || !bytes.HasSuffix(line, []byte("\n")) {
			continue
		}
		if s, err := skimMessageLine(line); err == nil && s.id == id && s.msg.Role == role {
			continue
		}
		whole := Entry{Type: EntryMessage, ID: id, Message: &model.Message{Role: role, Content: []model.Block{{Type: "text", Text: "made whole"}}}}
		if role == model.RoleToolResult {
			whole.Message = &model.Message{Role: role, Results: []model.ToolResult{{ToolCallID: "made-whole", Content: "made whole"}}}
		}
		b, err := encodeEntry(whole)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(b)
		replaced = append(replaced, i+1)
	}
	if replaced == nil {
		return nil, nil
	}
	return []byte(strings.Join(lines, "")), replaced
}

// historySkeleton is what Skeleton must return for the transcript tr whose
// history starts at line from: the skeletons of its message lines from
// there on, after one assistant skeleton holding the calls made before
// that its results answer, if any.
func historySkeleton(tr *Transcript, from int) []model.Message {
	var in []model.Message
	made := map[string]bool{}
	for _, e := range tr.Entries {
		if e.Message != nil && e.Line >= from {
			sk := skeletonOf(*e.Message)
			in = append(in, sk)
			for _, c := range sk.ToolCalls {
				made[c.ID] = true
			}
		}
	}
	before := model.Message{Role: model.RoleAssistant}
	for _, e := range tr.Entries {
		if e.Message == nil || e.Line >= from {
			continue
		}
		for _, c := range e.Message.ToolCalls {
			if answeredIn(in, c.ID) && !made[c.ID] {
				before.ToolCalls = append(before.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name})
				made[c.ID] = true
			}
		}
	}
	if len(before.ToolCalls) > 0 {
		in = append([]model.Message{before}, in...)
	}
	if in == nil {
		in = []model.Message{}
	}
	return in
}

// answeredIn reports whether a result of msgs answers call id.
func answeredIn(msgs []model.Message, id string) bool {
	for _, m := range msgs {
		for _, r := range m.Results {
			if r.ToolCallID == id {
				return true
			}
		}
	}
	return false
}

// TestReadForResumeMatchesOpen: on every kind of transcript the seeds hold,
// and on lines the skimmer must leave to the decoder, inside the history,
// last or before the history, the one-pass reader keeps its contract with
// Open (sameAsOpen).
func TestReadForResumeMatchesOpen(t *testing.T) {
	t.Parallel()
	for name, data := range openSeeds(t) {
		t.Run(name, func(t *testing.T) { sameAsOpen(t, data) })
	}
	head := `{"type":"session","version":1,"id":"h","createdAt":"2026-01-02T03:04:05Z","cwd":"/p"}` + "\n"
	odd := map[string]string{
		"cased key":           `{"type":"message","id":"a","Message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`,
		"duplicate key":       `{"type":"message","id":"a","id":"b","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`,
		"escaped id":          `{"type":"message","id":"a\u0062","message":{"role":"assistant","toolCalls":[{"id":"c\u0031","name":"read"}]}}`,
		"null text":           `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":null}]}}`,
		"unknown keys":        `{"type":"message","id":"a","extra":[1,{"x":null}],"message":{"role":"user","more":true,"content":[{"type":"text","text":"hi","z":1}]}}`,
		"float usage":         `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input":1.5,"output":2}}}`,
		"record on user":      `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"taskRecord":{"v":1}}`,
		"record not object":   `{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","toolName":"task","content":"x"}]},"taskRecord":[1]}`,
		"control in string":   "{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\tb\"}]}}",
		"bad escape":          `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"a\qb"}]}}`,
		"invalid utf8 id":     "{\"type\":\"message\",\"id\":\"a\xff\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}",
		"trailing garbage":    `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hi"}]}} x`,
		"whitespace":          ` { "type" : "message" , "id" : "a" , "message" : { "role" : "user" , "content" : [ { "type" : "text" , "text" : "hi" } ] } } `,
		"number forms":        `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"toolCalls":[{"id":"c","name":"n","args":{"a":-0.5e+3,"b":[true,false,null]}}],"usage":{"input":-7,"output":0}}}`,
		"bad number":          `{"type":"message","id":"a","message":{"role":"assistant","toolCalls":[{"id":"c","name":"n","args":{"a":01}}]}}`,
		"empty lists":         `{"type":"message","id":"a","message":{"role":"toolResult","content":[],"toolCalls":null,"results":[{"toolCallId":"c","toolName":"read","content":"","isError":true}]}}`,
		"result on assistant": `{"type":"message","id":"a","message":{"role":"assistant","results":[{"toolCallId":"c"}]}}`,
		// Lines whose body says other than their start: where ReadForResume
		// reads only the start, the contract replaces them.
		"role repeated": `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hi"}],"role":"assistant","toolCalls":[{"id":"cx","name":"read"}]}}`,
		"id repeated":   `{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"id":"b"}`,
		"type repeated": `{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c"}]},"type":"attempt","phase":"start","attemptId":"x"}`,
		"cut short":     `{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","content":"x`,
	}
	after := `{"type":"message","id":"z","message":{"role":"user","content":[{"type":"text","text":"after"}]}}` + "\n"
	compaction := `{"type":"compaction","id":"k","summary":"earlier","firstKept":"z","tokensBefore":1,"time":"2026-01-02T03:04:05Z"}` + "\n"
	for name, line := range odd {
		// interior: a line of the history; final: the last line;
		// compacted: a line before the history (read from its start alone
		// when its start is as ink writes it).
		for _, where := range []string{"interior", "final", "compacted"} {
			t.Run(name+"/"+where, func(t *testing.T) {
				data := head + line + "\n"
				switch where {
				case "interior":
					data += after
				case "compacted":
					data += after + compaction + after
				}
				sameAsOpen(t, []byte(data))
			})
		}
	}
}

// FuzzReadForResume holds the one-pass reader to its contract with Open
// (sameAsOpen) on arbitrary files.
func FuzzReadForResume(f *testing.F) {
	for _, data := range openSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsOpen(t, data) })
}

// FuzzSkim: a message line the skimmer accepts is one decodeEntry accepts,
// with the same id and skeleton.
func FuzzSkim(f *testing.F) {
	for _, m := range sampleMessages() {
		line, err := encodeEntry(Entry{Type: EntryMessage, ID: "e1", Message: &m})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Add([]byte(`{"type":"message","id":"a","message":{"role":"toolResult","results":[{"toolCallId":"c","toolName":"task","content":"x\n\"y\"\u00e9"}]},"taskRecord":{"version":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := skimMessageLine(line)
		if err != nil {
			return
		}
		e, derr := decodeEntry(line)
		if derr != nil {
			t.Fatalf("skimmed a line decodeEntry refuses (%v): %q", derr, line)
		}
		if e.ID != s.id || e.Message == nil || !reflect.DeepEqual(skeletonOf(*e.Message), s.msg) {
			t.Fatalf("skim %+v differs from decode %+v of %q", s, e, line)
		}
	})
}

// TestReadForResumeKeepsOnlyTheHistory: of a long compacted transcript the
// reader decodes only what follows the last compaction's retained tail,
// while every call id and the attempts of the whole file are known.
func TestReadForResumeKeepsOnlyTheHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "long.jsonl")
	w, err := Create(path, Header{ID: "s1", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	var lastIDs []string
	for round := range 5 {
		w.AppendAttempt(AttemptEntry{Phase: PhaseStart, AttemptID: fmt.Sprint("a", round)})
		var ids []string
		for i := range 20 {
			id := fmt.Sprintf("c%d-%d", round, i)
			e, _ := w.AppendMessage(model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "read", Args: json.RawMessage(`{"path":"x"}`)}}})
			ids = append(ids, e.ID)
			w.AppendMessage(model.Message{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: id, ToolName: "read", Content: strings.Repeat("line\n", 200)}}})
		}
		w.AppendCompaction(CompactionEntry{Summary: fmt.Sprint("summary ", round), FirstKept: ids[18]})
		lastIDs = ids
		u := model.Usage{Input: 10, Output: 1}
		w.AppendAttempt(AttemptEntry{Phase: PhaseEnd, AttemptID: fmt.Sprint("a", round), Status: "completed", Usage: &u})
	}
	w.Close()
	r, err := ReadForResume(path)
	if err != nil {
		t.Fatal(err)
	}
	v := r.View()
	if v.Len() != 5 || v.ids[1] != lastIDs[18] || !strings.Contains(v.msgs[0].Text(), "summary 4") {
		t.Fatalf("history: %d messages from %v; want the last summary and the last four messages", v.Len(), v.ids)
	}
	var tail int64
	for _, m := range r.View().Messages()[1:] {
		line, err := encodeEntry(Entry{Type: EntryMessage, ID: "x", Message: &m})
		if err != nil {
			t.Fatal(err)
		}
		tail += int64(len(line))
	}
	// Only the four lines of the last retained tail were decoded (their
	// entry ids are as long as "x" give or take the id's length).
	if r.decoded < tail || r.decoded > tail+4*64 {
		t.Errorf("decoded %d bytes, want the %d of the last tail's lines", r.decoded, tail)
	}
	// The skeleton is the history's; the call ids are the whole file's.
	if n := len(r.CallIDs()); n != 100 || len(r.Skeleton()) != 4 {
		t.Fatalf("%d call ids and %d skeletons, want 100 and 4", n, len(r.Skeleton()))
	}
	if l := r.Lifetime().Total(); l.Attempts != 5 || l.Usage.Input != 50 || l.Usage.Incomplete {
		t.Fatalf("lifetime %+v", l)
	}
	sameAsOpen(t, readFile(t, path))
}

// TestResumableRepairThenAppend: a torn transcript is repaired and
// appended to without being read again; the result reads back whole, with
// the entries where the writer said they are.
func TestResumableRepairThenAppend(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{25, 1} { // mid-line, and only the final newline
		t.Run(strconv.Itoa(cut), func(t *testing.T) {
			full := readFile(t, newTranscript(t, Header{}, sampleMessages()))
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, full[:len(full)-cut], 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := ReadForResume(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.Torn == nil {
				t.Fatal("the torn tail was not seen")
			}
			if _, err := r.OpenWriter(nil); err == nil {
				t.Fatal("a torn transcript was opened for appending")
			}
			if _, err := r.RepairTail(nil); err != nil {
				t.Fatal(err)
			}
			w, err := r.OpenWriter(nil)
			if err != nil {
				t.Fatal(err)
			}
			more := model.UserText("more")
			out, err := w.Append(Entry{Message: &more})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			tr, err := Open(path)
			if err != nil || tr.Torn != nil {
				t.Fatalf("after repair and append: %v, torn %+v", err, tr.Torn)
			}
			last := tr.Entries[len(tr.Entries)-1]
			if last.ID != out[0].ID || last.Line != out[0].Line || last.Offset != out[0].Offset {
				t.Fatalf("appended entry read at line %d offset %d, the writer said %d %d", last.Line, last.Offset, out[0].Line, out[0].Offset)
			}
			// A file changed behind the reader's back is not appended to.
			os.WriteFile(path, append(readFile(t, path), []byte("{}\n")...), 0o600)
			if _, err := r.OpenWriter(nil); err == nil || !strings.Contains(err.Error(), "size changed") {
				t.Fatalf("OpenWriter on a changed file: %v", err)
			}
		})
	}
}
