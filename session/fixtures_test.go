package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
)

// hash64 is a well-formed sha256 hex digest for fixtures.
var hash64 = strings.Repeat("ab", 32)

// validLaunch returns a launch record that passes Validate.
func validLaunch(parent, child string) LaunchRecord {
	return LaunchRecord{
		Version:         1,
		ParentSessionID: parent,
		ChildID:         child,
		InkVersion:      "0.1.0",
		Agent:           &AgentRef{Name: "scout", Source: "/home/me/.ink/agents/scout.md", RoleSHA256: hash64},
		Binding:         model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-5"},
		Cwd:             "/home/me/proj",
		Tools:           []string{"find", "grep", "ls", "read"},
		System:          SystemRef{SHA256: hash64, Files: []FileRef{{Path: "/home/me/proj/AGENTS.md", SHA256: hash64}}},
		Depth:           1,
		MaxDepth:        1,
	}
}

// sampleMessages is a history with multibyte text, tool calls and a task
// record.
func sampleMessages() []model.Message {
	return []model.Message{
		model.UserText("find the login code — 登录 🔐 <b>&amp;</b>"),
		{
			Role:       model.RoleAssistant,
			Content:    []model.Block{{Type: "thinking", Text: "look around", Signature: "sig"}, {Type: "text", Text: "Looking…"}},
			ToolCalls:  []model.ToolCall{{ID: "call_1", Name: "grep", Args: json.RawMessage(`{"pattern":"login","path":"src"}`)}, {ID: "call_2", Name: "task", Args: json.RawMessage(`{"prompt":"找测试 <x>"}`)}},
			Usage:      &model.Usage{Input: 1200, Output: 80, CacheRead: 3},
			Model:      "claude-sonnet-4-5",
			StopReason: "toolUse",
		},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "call_1", ToolName: "grep", Content: "src/auth/login.go:12: func Login()\n"}}},
		{
			Role:       model.RoleToolResult,
			Results:    []model.ToolResult{{ToolCallID: "call_2", ToolName: "task", Content: "tests are in auth_test.go", IsError: false}},
			TaskRecord: json.RawMessage(`{"version":1,"attemptId":"01jd8x3k9q7m2v5n6p4r8s0t1w","status":"completed","launched":true,"childId":"01jd8x3k9q7m2v5n6p4r8s0t1x","turns":2}`),
		},
		{Role: model.RoleAssistant, Content: []model.Block{{Type: "text", Text: "Entry point is src/auth/login.go ✅"}}},
	}
}

// newTranscript creates a transcript in a temp dir holding msgs and returns
// its path.
func newTranscript(t *testing.T, h Header, msgs []model.Message) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s", NewID()+".jsonl")
	if h.ID == "" {
		h.ID = NewID()
	}
	if h.Cwd == "" {
		h.Cwd = "/home/me/proj"
	}
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := w.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readFile returns the bytes of path.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendRaw appends raw bytes to path.
func appendRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// writeRaw writes b as a new file in a temp dir and returns its path.
func writeRaw(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// headerLine returns a valid header line with "\n".
func headerLine(t *testing.T, id string) []byte {
	t.Helper()
	_, line, err := encodeHeader(Header{ID: id, Cwd: "/p", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// messageLine returns the entry line of m with "\n".
func messageLine(t *testing.T, m model.Message) []byte {
	t.Helper()
	line, err := encodeEntry(Entry{Type: EntryMessage, ID: NewID(), Message: &m})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// lines joins byte slices.
func lines(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
