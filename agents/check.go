package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Check lists every problem of the profile files in dir, in file order: each
// file that cannot be parsed, each file whose tools: line names tools
// nobody knows (Profile.UnknownTools: a task with that agent is refused),
// and each name defined by more than one file there (the later file wins
// when loaded). A missing or unreadable dir is a
// problem too. An empty result means every file loads. Notes (dropped tools,
// ignored fields) are not problems; Load's profiles carry them.
func Check(dir string) []Problem {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	info, err := os.Stat(dir)
	if err != nil {
		return []Problem{{Path: dir, Reason: fmt.Sprintf("cannot read the agents directory: %v", unwrapPathError(err))}}
	}
	if !info.IsDir() {
		return []Problem{{Path: dir, Reason: "not a directory; give a directory of NAME.md profile files"}}
	}
	files, problem := profileFiles(dir)
	if problem != nil {
		return []Problem{*problem}
	}
	var problems []Problem
	firstSource := map[string]string{}
	for _, path := range files {
		p, err := readProfile(path)
		if err != nil {
			var pr Problem
			if !errors.As(err, &pr) {
				pr = Problem{Path: path, Reason: err.Error()}
			}
			problems = append(problems, pr)
			continue
		}
		if len(p.UnknownTools) > 0 {
			problems = append(problems, Problem{Path: path, Line: fieldLine(p, "tools:"), Reason: fmt.Sprintf("unknown tools %s (ink's tools: %s); a task with this agent is refused until the tools: line is fixed", strings.Join(p.UnknownTools, ", "), strings.Join(InkTools, ", "))})
		}
		if first, ok := firstSource[p.Name]; ok {
			problems = append(problems, Problem{Path: path, Line: fieldLine(p, "name:"), Reason: fmt.Sprintf("name %q is also used by %s; only this file is loaded, rename one of them", p.Name, first)})
			continue
		}
		firstSource[p.Name] = path
	}
	return problems
}

// fieldLine finds the file line of the frontmatter field that starts with
// prefix (such as "name:"), 0 if it is not found.
func fieldLine(p Profile, prefix string) int {
	data, err := os.ReadFile(p.Source)
	if err != nil {
		return 0
	}
	front, _, _, ok := splitFrontmatter(data)
	if !ok {
		return 0
	}
	for i, text := range strings.Split(front, "\n") {
		if strings.HasPrefix(text, prefix) {
			return i + 1 + frontmatterOpenerLine
		}
	}
	return 0
}
