package anthropic_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/inkdev/ink/model"
)

// TestTextOnlyRequest checks that a text-only request keeps the tools
// described (the API refuses tool_use blocks without them) and sets
// tool_choice none, with thinking still on when asked for.
func TestTextOnlyRequest(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, reply{Body: fixture(t, "text.sse")})
	p := newProvider(f)
	req := userAsks("wrap up")
	req.Model, req.Thinking = testModel, "low"
	req.Tools = []model.ToolSpec{{Name: "read", Description: "reads a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.TextOnly = true
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests(t)
	if _, ok := reqs[0]["tool_choice"]; ok {
		t.Errorf("ordinary request sets tool_choice %v", reqs[0]["tool_choice"])
	}
	if want := map[string]any{"type": "none"}; !reflect.DeepEqual(reqs[1]["tool_choice"], want) {
		t.Errorf("text-only request: tool_choice = %v, want %v", reqs[1]["tool_choice"], want)
	}
	if tools, _ := reqs[1]["tools"].([]any); len(tools) != 1 {
		t.Errorf("text-only request dropped the tool specs: %v", reqs[1]["tools"])
	}
	if th, _ := reqs[1]["thinking"].(map[string]any); th["type"] != "enabled" {
		t.Errorf("thinking = %v, want it kept on a text-only request", reqs[1]["thinking"])
	}
}
