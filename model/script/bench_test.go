package script_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
)

// BenchmarkLoad measures reading and checking a script file.
func BenchmarkLoad(b *testing.B) {
	path := filepath.Join("testdata", "investigate.yaml")
	for b.Loop() {
		if _, err := script.Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream measures answering one request that matches the last rule.
func BenchmarkStream(b *testing.B) {
	s, err := script.Load(filepath.Join("testdata", "investigate.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	req := model.Request{Agent: "scout", Depth: 1, Turn: 3, Messages: []model.Message{
		model.UserText("where is the login handled?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "read"}}},
		{Role: model.RoleToolResult, Results: []model.ToolResult{{ToolCallID: "c1", ToolName: "read", Content: "package auth"}}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Stream(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}
