package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestArrows holds every package's imports against .arrows, the table of
// which of ink's top-level packages may import which (docs/architecture.md
// explains each arrow): an import the table does not allow, or a
// top-level package it does not name, fails with what to change.
func TestArrows(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	allow := readArrows(t, filepath.Join(root, ".arrows"))
	out, err := exec.Command("go", "list", "-C", root, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	mod, err := exec.Command("go", "list", "-C", root, "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	top := func(path string) string {
		if path != module && !strings.HasPrefix(path, module+"/") {
			return ""
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if rest == "" {
			return "."
		}
		return strings.SplitN(rest, "/", 2)[0]
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		from := top(fields[0])
		if from == "bench" {
			continue // the benchmarks reach into every package
		}
		allowed, ok := allow[from]
		if !ok {
			t.Errorf("%s is a top-level package .arrows does not name: add a line for it with the packages it may import", fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			to := top(imp)
			if to == "" || to == from || allowed[to] {
				continue
			}
			t.Errorf("%s imports %s, which .arrows does not allow (%s may import: %s); change the import or, if the design changed, .arrows and docs/architecture.md", fields[0], imp, from, keys(allowed))
		}
	}
}

// readArrows reads .arrows: "pkg: allowed allowed ..." per line, '#'
// starting a comment.
func readArrows(t *testing.T, path string) map[string]map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	allow := map[string]map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		set := map[string]bool{}
		for _, p := range strings.Fields(v) {
			set[p] = true
		}
		allow[strings.TrimSpace(k)] = set
	}
	return allow
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	if len(out) == 0 {
		return "nothing in ink"
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
