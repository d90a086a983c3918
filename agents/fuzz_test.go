package agents

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse holds Parse to its contract on any input: it never panics; a
// failure is a Problem naming the file and a line; a success has a name, a
// description and only ink tool names, each once.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/claude/*.md", "testdata/bad/*.md"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, seed := range []string{
		"", "---", "---\n", "---\n---", "---\r\n---\r\n", "\ufeff---\n---\n",
		"---\nname: a\ndescription: b\n---",
		"---\nname: &x a\ndescription: *x\n---\n",
		"---\n<<: {name: a, description: b}\n---\n",
		"---\nname: a\ndescription: b\n...\n---\n",
		"---\nname: [a, b]\ndescription: {c: d}\n---\n",
		"---\nname: a\ndescription: b\ntools: [[Read]]\ntimeout: 1e9\n---\n",
		"---\n? name\n: a\ndescription: b\n---\n",
		"---\nname: a\ndescription: b\nmodel: script:\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.md", data)
		if err != nil {
			var problem Problem
			if !errors.As(err, &problem) {
				t.Fatalf("error %v (%T) is not a Problem", err, err)
			}
			if problem.Path != "fuzz.md" || problem.Line < 1 || problem.Reason == "" {
				t.Fatalf("problem %#v lacks the path, a line or a reason", problem)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.md:") {
				t.Fatalf("error %q does not start with the path", err)
			}
			return
		}
		if strings.TrimSpace(p.Name) == "" || strings.TrimSpace(p.Description) == "" {
			t.Fatalf("parsed without a name or description: %+v", p)
		}
		if badName(p.Name) != "" {
			t.Fatalf("parsed with an unusable name %q", p.Name)
		}
		seen := map[string]bool{}
		for _, tool := range p.Tools {
			if !slices.Contains(InkTools, tool) || seen[tool] {
				t.Fatalf("tools %q: unknown or repeated %q", p.Tools, tool)
			}
			seen[tool] = true
		}
		if p.Timeout < 0 || len(p.RoleSHA256) != 64 || !filepath.IsAbs(p.Source) {
			t.Fatalf("bad profile %+v", p)
		}
		if p.Model != "" && modelSyntaxProblem(p.Model) != "" {
			t.Fatalf("model %q accepted though it can never resolve", p.Model)
		}
	})
}
