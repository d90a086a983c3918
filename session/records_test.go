package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// patchJSON loads testdata/records/<file>, sets or deletes (nil value) the
// dotted keys given and returns the JSON.
func patchJSON(t *testing.T, file string, patch map[string]any) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "records", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for key, v := range patch {
		parts := strings.Split(key, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		if v == nil {
			delete(m, parts[len(parts)-1])
		} else {
			m[parts[len(parts)-1]] = v
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseLaunchRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		patch map[string]any
		want  string // "" = accepted
	}{
		{"fixture with unknown fields", nil, ""},
		{"no agent, no worktree", map[string]any{"agent": nil, "worktree": nil}, ""},
		{"sha256 baseline", map[string]any{"worktree.baseline": hash64}, ""},
		{"version 2", map[string]any{"version": 2}, "version 2"},
		{"version missing", map[string]any{"version": nil}, "version 0"},
		{"relative cwd", map[string]any{"cwd": "proj/src"}, "cwd"},
		{"relative agent source", map[string]any{"agent.source": "agents/scout.md"}, "agent source"},
		{"relative worktree path", map[string]any{"worktree.path": "wt"}, "worktree path"},
		{"relative repo root", map[string]any{"worktree.repoRoot": "."}, "repoRoot"},
		{"relative system file", map[string]any{"system.files": []any{map[string]any{"path": "AGENTS.md", "sha256": hash64}}}, "system file"},
		{"uppercase hash", map[string]any{"system.sha256": strings.ToUpper(hash64)}, "system sha256"},
		{"short hash", map[string]any{"agent.roleSha256": "abc"}, "roleSha256"},
		{"non-hex hash", map[string]any{"system.sha256": strings.Repeat("zz", 32)}, "system sha256"},
		{"bad baseline", map[string]any{"worktree.baseline": "HEAD"}, "baseline"},
		{"unknown provider", map[string]any{"binding.provider": "acme"}, "provider"},
		{"no model", map[string]any{"binding.model": ""}, "no model"},
		{"baseURL not http", map[string]any{"binding.baseURL": "file:///etc"}, "baseURL"},
		{"unsorted tools", map[string]any{"tools": []any{"read", "grep"}}, "sorted"},
		{"duplicate tools", map[string]any{"tools": []any{"grep", "grep"}}, "sorted"},
		{"bad child id", map[string]any{"childId": "../x"}, "childId"},
		{"bad parent id", map[string]any{"parentSessionId": "A"}, "parentSessionId"},
		{"depth 0", map[string]any{"depth": 0}, "depth"},
		{"depth above max", map[string]any{"depth": 3, "maxDepth": 2}, "depth"},
		{"wrong type", map[string]any{"depth": "one"}, "cannot unmarshal"},
		{"no ink version", map[string]any{"inkVersion": ""}, "inkVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := ParseLaunchRecord(patchJSON(t, "launch.json", tc.patch))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if l.ChildID != "01jd8x3m0a1b2c3d4e5f6g7h8j" || l.Binding.BaseURL != "http://127.0.0.1:8080/v1" {
					t.Errorf("parsed %+v", l)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := ParseLaunchRecord([]byte(`{"version":1} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

func TestLaunchRecordEncodeSortsAndOmits(t *testing.T) {
	t.Parallel()
	l := validLaunch("p1", "c1")
	l.Agent, l.Worktree = nil, nil
	l.Tools = []string{"read", "bash", "grep"}
	raw, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if strings.Contains(s, `"agent"`) || strings.Contains(s, `"worktree"`) || !strings.Contains(s, `"tools":["bash","grep","read"]`) {
		t.Errorf("encoded %s", s)
	}
	if !reflect.DeepEqual(l.Tools, []string{"read", "bash", "grep"}) {
		t.Error("Encode changed the caller's tools")
	}
	back, err := ParseLaunchRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.ParentSessionID != "p1" || back.Agent != nil {
		t.Errorf("round trip %+v", back)
	}
	for _, key := range []string{`"parentSessionId"`, `"childId"`, `"inkVersion"`, `"maxDepth"`, `"sha256"`} {
		if !strings.Contains(s, key) {
			t.Errorf("encoded record lacks %s", key)
		}
	}
}

func TestParseTaskRecord(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 301)
	for _, tc := range []struct {
		name  string
		file  string
		patch map[string]any
		want  string
	}{
		{"fixture with unknown fields", "task.json", nil, ""},
		{"rejected fixture", "task_rejected.json", nil, ""},
		{"reason of 300 characters", "task.json", map[string]any{"reason": long[:600]}, ""},
		{"every status", "task.json", map[string]any{"status": "interrupted"}, ""},
		{"version 2", "task.json", map[string]any{"version": 2}, "version 2"},
		{"unknown status", "task.json", map[string]any{"status": "done"}, "status"},
		{"reason too long", "task.json", map[string]any{"reason": long}, "301 characters"},
		{"relative cwd", "task.json", map[string]any{"cwd": "proj"}, "cwd"},
		{"relative transcript", "task.json", map[string]any{"transcript.path": "x.jsonl"}, "transcript path"},
		{"absent transcript without why", "task.json", map[string]any{"transcript": map[string]any{"present": false}}, "why"},
		{"bad binding", "task.json", map[string]any{"binding.provider": "acme"}, "provider"},
		{"no attempt id", "task.json", map[string]any{"attemptId": nil}, "attemptId"},
		{"launched without child", "task.json", map[string]any{"childId": nil}, "childId"},
		{"worktree without disposition", "task.json", map[string]any{"worktree.disposition": ""}, "disposition"},
		{"duplicate tools", "task.json", map[string]any{"tools": []any{"read", "read"}}, "twice"},
		{"rejected but launched", "task_rejected.json", map[string]any{"launched": true, "childId": "c1"}, "rejected"},
		{"rejected with turns", "task_rejected.json", map[string]any{"turns": 1}, "rejected"},
		{"rejected with child", "task_rejected.json", map[string]any{"childId": "c1"}, "rejected"},
		{"rejected with usage", "task_rejected.json", map[string]any{"usage": map[string]any{"input": 1, "output": 1}}, "rejected"},
		{"rejected with binding", "task_rejected.json", map[string]any{"binding": map[string]any{"provider": "openai", "model": "m"}}, "rejected"},
		{"wrong type", "task.json", map[string]any{"turns": "3"}, "cannot unmarshal"},
		{"capped by budget", "task.json", map[string]any{"capped": "budget"}, ""},
		{"unknown cap", "task.json", map[string]any{"capped": "time"}, "capped"},
		{"blank health line", "task.json", map[string]any{"health": []any{" "}}, "blank"},
		{"rejected with health", "task_rejected.json", map[string]any{"health": []any{"x"}}, "rejected"},
		{"rejected and capped", "task_rejected.json", map[string]any{"capped": "turns"}, "rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseTaskRecord(patchJSON(t, tc.file, tc.patch))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if r.Version != 1 || r.Status == "" {
					t.Errorf("parsed %+v", r)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestTaskRecordEncodeOmitsAbsentFields(t *testing.T) {
	t.Parallel()
	r := TaskRecord{Version: 1, AttemptID: NewID(), TaskToolCallID: "call_1", Status: StatusRejected,
		Reason: TruncateReason(strings.Repeat("x", 500)), Transcript: &TranscriptRef{Why: "rejected"}}
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"childId", "launched", "turns", "usage", "binding", "worktree", "tools", "timeoutMs", "textPresent"} {
		if _, ok := m[absent]; ok {
			t.Errorf("rejected record has %q: %s", absent, raw)
		}
	}
	if len([]rune(m["reason"].(string))) != MaxReasonRunes {
		t.Errorf("reason not cut to %d characters", MaxReasonRunes)
	}
	back, err := ParseTaskRecord(raw)
	if err != nil || back.AttemptID != r.AttemptID {
		t.Errorf("round trip: %+v %v", back, err)
	}
	if _, err := (TaskRecord{Version: 1, AttemptID: "a", Status: StatusRejected, Turns: 2}).Encode(); err == nil {
		t.Error("Encode accepted a rejected record with turns")
	}
}

func TestSystemFingerprint(t *testing.T) {
	t.Parallel()
	base := "You are ink.\n# Environment\n- Date: 2026-11-30\n- Cwd: /p\n"
	same := []string{
		"You are ink.\n# Environment\n- Date: 2027-01-02\n- Cwd: /p\n",
	}
	crlf := "a\r\n- Date: 2026-11-30\r\nb"
	if SystemFingerprint(crlf) != SystemFingerprint("a\r\n- Date: 1999-01-01\r\nb") {
		t.Error("a date-only change with CRLF line ends altered the fingerprint")
	}
	different := []string{
		"You are ink.\n# Environment\n- Date: 2026-11-30\n- Cwd: /q\n",
		"You are ink!\n# Environment\n- Date: 2026-11-30\n- Cwd: /p\n",
		"You are ink.\n# Environment\n- Date: tomorrow\n- Cwd: /p\n",
		"You are ink.\n# Environment\n- Cwd: /p\n",
		"You are ink.\n# Environment\nsee - Date: 2026-11-30 here\n- Cwd: /p\n",
	}
	fp := SystemFingerprint(base)
	if !isHash(fp) {
		t.Fatalf("fingerprint %q is not a sha256 hex digest", fp)
	}
	for _, s := range same {
		if SystemFingerprint(s) != fp {
			t.Errorf("a date-only change altered the fingerprint: %q", s)
		}
	}
	for _, s := range different {
		if SystemFingerprint(s) == fp {
			t.Errorf("a real change kept the fingerprint: %q", s)
		}
	}
	if SystemFingerprint("x") != SHA256Hex([]byte("x")) {
		t.Error("a prompt without a date line is not hashed as is")
	}
}

func TestHashFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	os.WriteFile(path, []byte("rules"), 0o600)
	ref, err := HashFile(path)
	if err != nil || ref.Path != path || ref.SHA256 != SHA256Hex([]byte("rules")) {
		t.Errorf("HashFile = %+v, %v", ref, err)
	}
	if _, err := HashFile(path + ".missing"); err == nil {
		t.Error("missing file hashed")
	}
}

// HashFile returns a FileRef for the file at path (which should be
// absolute), hashing its content.
func HashFile(path string) (FileRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileRef{}, fmt.Errorf("hash file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return FileRef{}, fmt.Errorf("hash file %s: %w", path, err)
	}
	return FileRef{Path: path, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// TruncateReason cuts s to at most MaxReasonRunes characters, ending in "…"
// when it was cut.
func TruncateReason(s string) string {
	if utf8.RuneCountInString(s) <= MaxReasonRunes {
		return s
	}
	r := []rune(s)
	return string(r[:MaxReasonRunes-1]) + "…"
}
