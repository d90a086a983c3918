package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// structuredClient is an MCP client that, like Claude Code, hands its model
// only a result's structuredContent when the result has one (and its text
// otherwise), after checking it against the tool's outputSchema.
type structuredClient struct {
	s       *mcpServer
	schemas map[string]*jsonschema.Resolved
}

func newStructuredClient(t *testing.T, s *mcpServer) *structuredClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &structuredClient{s: s, schemas: map[string]*jsonschema.Resolved{}}
	for _, tool := range list.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		raw, _ := json.Marshal(tool.OutputSchema)
		var schema jsonschema.Schema
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s: outputSchema %s: %v", tool.Name, raw, err)
		}
		if schema.Type != "object" {
			t.Fatalf("%s: outputSchema is not an object: %s", tool.Name, raw)
		}
		r, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: outputSchema %s: %v", tool.Name, raw, err)
		}
		c.schemas[tool.Name] = r
	}
	return c
}

// call returns what the model sees of a call of tool, and the result.
func (c *structuredClient) call(t *testing.T, tool string, args any) (string, *mcp.CallToolResult) {
	t.Helper()
	text, res := c.s.call(t, tool, args)
	if res.StructuredContent == nil {
		return text, res
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	schema := c.schemas[tool]
	if schema == nil {
		t.Fatalf("%s returned structuredContent but declares no outputSchema", tool)
	}
	var v any
	json.Unmarshal(raw, &v)
	if err := schema.Validate(v); err != nil {
		t.Fatalf("%s: structuredContent does not match its outputSchema: %v\n%s", tool, err, raw)
	}
	return string(raw), res
}

var childIDFieldRe = regexp.MustCompile(`"childId":"([a-z0-9-]+)"`)

// TestMCPStructuredStandsAlone drives `ink mcp` with a client that shows
// its model only structuredContent: one task, a batch of three and a
// background start (collected with task_wait) each give that model the
// children's answers and ids, and how to continue them; the text content
// is still ink's task result.
func TestMCPStructuredStandsAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := e.write("s.yaml", mcpScript)
	s := e.startMCP("--model", "script:"+script)
	c := newStructuredClient(t, s)
	for _, tool := range []string{"task", "task_status", "task_wait", "task_cancel", "worktrees_list", "worktree_merge", "agents_list"} {
		if c.schemas[tool] == nil {
			t.Errorf("%s declares no outputSchema", tool)
		}
	}

	// One task.
	seen, res := c.call(t, "task", map[string]any{"prompt": "quick look"})
	text := resultText(res)
	if res.IsError || !strings.HasPrefix(text, "quick report") || !strings.Contains(text, "(child: 1 turn") {
		t.Fatalf("task text content changed:\n%s", text)
	}
	id := childIDOf(t, text)
	for _, want := range []string{`"text":"quick report"`, `"childId":"` + id + `"`, `"status":"completed"`, `"turns":1`, `"resume":"task({resume: \"` + id, `"transcript":"`} {
		if !strings.Contains(seen, want) {
			t.Errorf("the model does not see %s in the task result:\n%s", want, seen)
		}
	}

	// A batch of three.
	seen, res = c.call(t, "task", map[string]any{"tasks": []map[string]any{{"prompt": "child one"}, {"prompt": "child two"}, {"prompt": "child three"}}})
	if res.IsError {
		t.Fatalf("batch failed:\n%s", resultText(res))
	}
	var batch struct {
		Summary string `json:"summary"`
		Tasks   []struct {
			ChildID string `json:"childId"`
			Text    string `json:"text"`
			Status  string `json:"status"`
			Usage   struct {
				Input int64 `json:"input"`
			} `json:"usage"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(seen), &batch); err != nil || len(batch.Tasks) != 3 || !strings.Contains(batch.Summary, "3 tasks ran at once") {
		t.Fatalf("the model sees of the batch:\n%s", seen)
	}
	textIDs := childIDRe.FindAllStringSubmatch(resultText(res), -1)
	for i, want := range []string{"report one", "report two", "report three"} {
		got := batch.Tasks[i]
		if got.Text != want || got.Status != "completed" || got.ChildID == "" || got.ChildID != textIDs[i][1] || got.Usage.Input != int64(100*(i+1)) {
			t.Errorf("batch task %d as the model sees it: %+v (text names child %s)", i+1, got, textIDs[i][1])
		}
	}

	// A background start, then its collection.
	seen, res = c.call(t, "task", map[string]any{"prompt": "two turns please", "background": true})
	if res.IsError {
		t.Fatalf("background start failed:\n%s", resultText(res))
	}
	bgID := childIDOf(t, resultText(res))
	if m := childIDFieldRe.FindStringSubmatch(seen); m == nil || m[1] != bgID || !strings.Contains(seen, `"status":"started"`) || !strings.Contains(seen, "task_wait") {
		t.Fatalf("the model does not see the background child %s, its status and how to collect it:\n%s", bgID, seen)
	}
	seen, res = c.call(t, "task_wait", map[string]any{"ids": []string{bgID}})
	if res.IsError || !strings.Contains(seen, `"text":"done in two turns"`) || !strings.Contains(seen, `"childId":"`+bgID+`"`) || !strings.Contains(seen, `"turns":2`) {
		t.Fatalf("the model does not see the background child's answer:\n%s", seen)
	}

	// task_status and agents_list stand alone too.
	seen, _ = c.call(t, "task_status", map[string]any{})
	if !strings.Contains(seen, `"summary":"task_status: 0 of 5 children still running or queued."`) || strings.Count(seen, `"state":"ended"`) != 5 {
		t.Errorf("task_status as the model sees it:\n%s", seen)
	}
	if seen, _ = c.call(t, "agents_list", map[string]any{}); !strings.Contains(seen, `"agents":[]`) {
		t.Errorf("agents_list as the model sees it:\n%s", seen)
	}

	// An error carries no structured part, so every client shows its text.
	seen, res = c.call(t, "task_wait", map[string]any{"ids": []string{"no-such-child"}})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(seen, "no child") {
		t.Errorf("an unknown id: isError %v, structured %v, the model sees:\n%s", res.IsError, res.StructuredContent, seen)
	}
}

// structuredChild is one child's result as a model that sees only
// structuredContent reads it.
type structuredChild struct {
	ChildID  string `json:"childId"`
	Status   string `json:"status"`
	IsError  bool   `json:"isError"`
	Text     string `json:"text"`
	Notes    string `json:"notes"`
	Reason   string `json:"reason"`
	Capped   string `json:"capped"`
	Turns    int    `json:"turns"`
	Resume   string `json:"resume"`
	Worktree *struct {
		Path        string `json:"path"`
		Branch      string `json:"branch"`
		Disposition string `json:"disposition"`
	} `json:"worktree"`
}

// onlyChild decodes what the model sees of a result with one child.
func onlyChild(t *testing.T, seen string) structuredChild {
	t.Helper()
	var out struct {
		Tasks []structuredChild `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(seen), &out); err != nil || len(out.Tasks) != 1 {
		t.Fatalf("want one child in what the model sees (%v):\n%s", err, seen)
	}
	return out.Tasks[0]
}

// TestMCPStructuredOutcomes: beyond a plain answer, a client that shows
// its model only structuredContent still gives it every outcome the text
// states: what became of a worktree child's worktree (path, branch, kept
// with its work) and how to review it; a capped child's wrap-up answer,
// marked capped; a cancelled child's status, the reason it stopped and the
// call that resumes it.
func TestMCPStructuredOutcomes(t *testing.T) {
	t.Parallel()
	e := newWtRepo(t, map[string]string{"README": "hello\n"})
	dig := `rules:
  - when: {user: "Write your final answer now"}
    reply: {text: "partial findings, unfinished"}
  - when: {user: "^dig"}
    reply: {calls: [{tool: bash, args: {command: "true"}}]}
`
	script := e.wtOutside("s.yaml", dig+strings.TrimPrefix(mcpScript, "rules:\n"))
	s := e.startMCP("--model", "script:"+script, "--max-turns", "3")
	c := newStructuredClient(t, s)

	// A worktree child that committed: its worktree is kept with its work.
	seen, res := c.call(t, "task", map[string]any{"prompt": "commit something", "worktree": true})
	if res.IsError {
		t.Fatalf("worktree task:\n%s", resultText(res))
	}
	got := onlyChild(t, seen)
	if got.Text != "committed child.txt" || got.Worktree == nil || got.Worktree.Branch != "ink/"+got.ChildID ||
		!strings.HasSuffix(got.Worktree.Path, got.ChildID) || got.Worktree.Disposition != "kept-work" ||
		!strings.Contains(got.Notes, "ink worktrees merge "+got.ChildID) {
		t.Errorf("the model sees of a worktree child:\n%s", seen)
	}

	// A child stopped by --max-turns: its wrap-up answer, marked capped.
	seen, res = c.call(t, "task", map[string]any{"prompt": "dig forever"})
	got = onlyChild(t, seen)
	if res.IsError || got.Capped != "turns" || got.Text != "partial findings, unfinished" || got.Status != "completed" ||
		!strings.Contains(got.Notes, "3-turn cap") {
		t.Errorf("the model sees of a capped child (isError %v):\n%s", res.IsError, seen)
	}

	// A background child cancelled while it runs.
	text, _ := c.call(t, "task", map[string]any{"prompt": "slow work", "background": true})
	id := onlyChild(t, text).ChildID
	eventually(t, func() bool {
		st, _ := s.call(t, "task_status", map[string]any{"ids": []string{id}})
		return strings.Contains(st, "running for")
	})
	seen, _ = c.call(t, "task_cancel", map[string]any{"id": id})
	got = onlyChild(t, seen)
	if got.ChildID != id || got.Status != "aborted" || !got.IsError || !strings.Contains(got.Reason, "task_cancel") ||
		got.Resume != `task({resume: "`+id+`", prompt: "…"})` {
		t.Errorf("the model sees of a cancelled child:\n%s", seen)
	}
}
