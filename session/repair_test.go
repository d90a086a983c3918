package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

func TestRepairTailByteExact(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages()
	h := headerLine(t, "s1")
	cjk := model.UserText(strings.Repeat("汉字かな한글", 50) + "🙂🙃🚀")
	cjkLine := messageLine(t, cjk)
	emoji := messageLine(t, model.UserText(strings.Repeat("😀👩‍👩‍👧‍👦", 40)))
	prefix := lines(h, messageLine(t, msgs[0]), messageLine(t, cjk), messageLine(t, msgs[1]))
	// cutInRune returns a cut of line that ends inside a multibyte character.
	cutInRune := func(line []byte) []byte {
		for i := len(line) / 2; i < len(line); i++ {
			if !utf8.RuneStart(line[i]) {
				return line[:i]
			}
		}
		t.Fatal("no multibyte character")
		return nil
	}
	full := messageLine(t, msgs[2])
	for _, tc := range []struct {
		name       string
		prefix     []byte
		tail       []byte
		wantAction string
		want       []byte // whole file after repair
	}{
		{"cut mid JSON", prefix, full[:len(full)/2], RepairTruncated, prefix},
		{"cut inside CJK", prefix, cutInRune(cjkLine), RepairTruncated, prefix},
		{"cut inside emoji", prefix, cutInRune(emoji), RepairTruncated, prefix},
		{"invalid final line with newline", prefix, []byte(`{"type":"message","id":"x","message":{"role":"nobody"}}` + "\n"), RepairTruncated, prefix},
		{"blank final line", prefix, []byte("\n"), RepairTruncated, prefix},
		{"valid final line missing newline", prefix, full[:len(full)-1], RepairTerminated, lines(prefix, full)},
		{"header only without newline", nil, h[:len(h)-1], RepairTerminated, h},
		{"header only", nil, h, RepairNone, h},
		{"clean file", prefix, full, RepairNone, lines(prefix, full)},
		{"zero-filled tail after power loss", prefix, make([]byte, 4096), RepairTruncated, prefix},
		{"torn line after zeros", prefix, append(make([]byte, 100), full[:30]...), RepairTruncated, prefix},
		{"long torn line", prefix, bytes.Repeat([]byte("{"), 200<<10), RepairTruncated, prefix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeRaw(t, lines(tc.prefix, tc.tail))
			rep, err := RepairTail(path)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Action != tc.wantAction {
				t.Errorf("action = %s, want %s", rep.Action, tc.wantAction)
			}
			got := readFile(t, path)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("file after repair (%d bytes) differs from the expected %d bytes", len(got), len(tc.want))
			}
			if !bytes.HasSuffix(got, []byte("\n")) {
				t.Error("file does not end with a newline")
			}
			if tc.wantAction == RepairTruncated && (rep.Offset != int64(len(tc.prefix)) || rep.Bytes != len(tc.tail)) {
				t.Errorf("repair = %+v, want offset %d bytes %d", rep, len(tc.prefix), len(tc.tail))
			}
			if rep.String() == "" {
				t.Error("empty description")
			}
			tr, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Torn != nil {
				t.Errorf("still torn: %+v", tr.Torn)
			}
			// An append after the repair reopens cleanly.
			w, err := OpenWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.AppendMessage(model.UserText("continue")); err != nil {
				t.Fatal(err)
			}
			w.Close()
			tr2, err := Open(path)
			if err != nil || tr2.Torn != nil || len(tr2.Messages) != len(tr.Messages)+1 {
				t.Errorf("after append: %v, torn %+v, %d messages", err, tr2.Torn, len(tr2.Messages))
			}
		})
	}
}

func TestRepairTailNeverCutsAHeader(t *testing.T) {
	t.Parallel()
	for name, content := range map[string][]byte{
		"torn header":  headerLine(t, "s1")[:25],
		"empty":        nil,
		"garbage line": []byte("garbage\n"),
	} {
		path := writeRaw(t, content)
		if _, err := RepairTail(path); err == nil {
			t.Errorf("%s: RepairTail succeeded", name)
		}
		if !bytes.Equal(readFile(t, path), content) {
			t.Errorf("%s: file changed", name)
		}
	}
}

// pairHistories are the ScanPairs cases, shared with the repair flow test.
func pairHistories() []struct {
	name    string
	msgs    []model.Message
	state   PairState
	missing []string
	reason  string
} {
	call := func(ids ...string) model.Message {
		m := model.Message{Role: model.RoleAssistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: id, Name: "read", Args: json.RawMessage(`{"path":"a"}`)})
		}
		return m
	}
	res := func(ids ...string) model.Message {
		m := model.Message{Role: model.RoleToolResult}
		for _, id := range ids {
			m.Results = append(m.Results, model.ToolResult{ToolCallID: id, ToolName: "read", Content: "ok"})
		}
		return m
	}
	user := model.UserText("go on")
	text := model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "done"}}}
	wrongTool := res("a")
	wrongTool.Results[0].ToolName = "bash"
	return []struct {
		name    string
		msgs    []model.Message
		state   PairState
		missing []string
		reason  string
	}{
		{"empty", nil, Consistent, nil, ""},
		{"consistent", []model.Message{user, call("a", "b"), res("a"), res("b"), text, user, call("c"), res("c")}, Consistent, nil, ""},
		{"several results in one message", []model.Message{user, call("a", "b"), res("b", "a")}, Consistent, nil, ""},
		{"repairable single", []model.Message{user, call("a"), res("a"), call("b")}, Repairable, []string{"b"}, ""},
		{"repairable multiple after results", []model.Message{user, call("a", "b", "c"), res("b")}, Repairable, []string{"a", "c"}, ""},
		{"repairable none answered", []model.Message{user, call("a", "b")}, Repairable, []string{"a", "b"}, ""},
		{"orphan in non-last assistant", []model.Message{user, call("a"), call("b"), res("b")}, Refused, nil, "tool call a"},
		{"orphan followed by user", []model.Message{user, call("a"), user}, Refused, nil, "tool call a"},
		{"orphan followed by user then results", []model.Message{user, call("a", "b"), res("a"), user, res("b")}, Refused, nil, "tool call b"},
		{"duplicate call id", []model.Message{user, call("a"), res("a"), call("a"), res("a")}, Refused, nil, "used twice"},
		{"duplicate call id in one message", []model.Message{user, call("a", "a")}, Refused, nil, "used twice"},
		{"result without call", []model.Message{user, call("a"), res("a"), res("z")}, Refused, nil, "no earlier assistant"},
		{"result before its call", []model.Message{user, res("a"), call("a")}, Refused, nil, "no earlier assistant"},
		{"duplicated result", []model.Message{user, call("a"), res("a"), res("a")}, Refused, nil, "second result"},
		{"result names another tool", []model.Message{user, call("a"), wrongTool}, Refused, nil, "as tool bash"},
	}
}

func TestScanPairs(t *testing.T) {
	t.Parallel()
	for _, tc := range pairHistories() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ScanPairs(tc.msgs)
			if got.State != tc.state {
				t.Fatalf("state = %v (%s), want %v", got.State, got.Reason, tc.state)
			}
			var ids []string
			for _, c := range got.Missing {
				ids = append(ids, c.ID)
			}
			if !reflect.DeepEqual(ids, tc.missing) {
				t.Errorf("missing = %v, want %v", ids, tc.missing)
			}
			if tc.state == Refused && (!strings.Contains(got.Reason, tc.reason) || !strings.HasPrefix(got.Reason, "inconsistent beyond a crash tail")) {
				t.Errorf("reason = %q, want it to mention %q", got.Reason, tc.reason)
			}
		})
	}
}

func TestUnknownOutcomeResults(t *testing.T) {
	t.Parallel()
	got := UnknownOutcomeResults([]model.ToolCall{{ID: "a", Name: "bash"}, {ID: "b", Name: "edit"}})
	if len(got) != 2 {
		t.Fatalf("%d messages", len(got))
	}
	for i, id := range []string{"a", "b"} {
		m := got[i]
		if m.Role != model.RoleToolResult || len(m.Results) != 1 || m.Results[0].ToolCallID != id || !m.Results[0].IsError ||
			m.Results[0].Content != "interrupted before a result was recorded — the outcome is unknown; check before relying on it" {
			t.Errorf("result %d = %+v", i, m)
		}
	}
	if got[1].Results[0].ToolName != "edit" {
		t.Error("tool name not kept")
	}
}

func TestRepairFlow(t *testing.T) {
	t.Parallel()
	for _, tc := range pairHistories() {
		for _, torn := range []bool{false, true} {
			name := tc.name
			if torn {
				name += " with torn tail"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				path := newTranscript(t, Header{}, tc.msgs)
				if torn {
					appendRaw(t, path, []byte(`{"type":"message","id":"q","message":{"role":"toolRes`))
				}
				before := readFile(t, path)
				rep, err := Repair(path)
				after := readFile(t, path)
				switch tc.state {
				case Refused:
					if !errors.Is(err, ErrRepairRefused) {
						t.Fatalf("Repair error = %v, want ErrRepairRefused", err)
					}
					if !bytes.Equal(before, after) {
						t.Fatal("a refused repair changed the file")
					}
					return
				case Consistent:
					if err != nil {
						t.Fatal(err)
					}
					if !torn && !bytes.Equal(before, after) {
						t.Fatal("a consistent transcript was changed")
					}
				case Repairable:
					if err != nil {
						t.Fatal(err)
					}
				}
				if torn != (rep.Tail.Action == RepairTruncated) {
					t.Errorf("tail repair = %+v", rep.Tail)
				}
				if len(rep.Interrupted) != len(tc.missing) {
					t.Errorf("interrupted = %v, want %v", rep.Interrupted, tc.missing)
				}
				tr, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if tr.Torn != nil {
					t.Errorf("still torn after repair")
				}
				if s := ScanPairs(tr.Messages); s.State != Consistent {
					t.Errorf("after repair: %v %s", s.State, s.Reason)
				}
				if !reflect.DeepEqual(tr.Messages[:len(tc.msgs)], tc.msgs) && len(tc.msgs) > 0 {
					t.Error("recorded messages changed")
				}
				if len(tc.missing) > 0 && !strings.Contains(rep.String(), "interrupted tool call") {
					t.Errorf("description %q", rep.String())
				}
				// The repaired prefix is byte-identical to the original.
				cut := len(before)
				if torn {
					cut = bytes.LastIndexByte(before, '\n') + 1
				}
				if !bytes.Equal(after[:cut], before[:cut]) {
					t.Error("bytes before the tail changed")
				}
			})
		}
	}
}
