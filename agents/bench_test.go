package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse measures parsing one realistic Claude Code profile.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/claude/architect.md")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("architect.md", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad measures loading 50 profiles, what ink pays at start.
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	data, err := os.ReadFile("testdata/claude/code-reviewer.md")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		text := []byte(fmt.Sprintf("---\nname: agent-%02d\n", i))
		text = append(text, data[len("---\nname: code-reviewer\n"):]...)
		if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "agents", fmt.Sprintf("a%02d.md", i)), text, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	opts := LoadOptions{InkHome: dir}
	if n := len(Load(opts).All()); n != 50 {
		b.Fatalf("loaded %d profiles, want 50", n)
	}
	for b.Loop() {
		Load(opts)
	}
}
