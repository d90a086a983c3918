package agents

import (
	"os"
	"path/filepath"
)

// ProjectRoot returns the project root for cwd: the nearest directory, cwd
// itself or an ancestor, that holds a `.git` entry (a directory, or the file
// of a linked worktree or submodule); cwd itself (made absolute) when there
// is none.
func ProjectRoot(cwd string) string {
	start, err := filepath.Abs(cwd)
	if err != nil {
		return cwd
	}
	for dir := start; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return start
		}
		dir = parent
	}
}
