package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// ContextNames are the files in which a project keeps its instructions for
// coding agents, in the order they go into a system prompt.
var ContextNames = []string{"AGENTS.md", "CLAUDE.md"}

// ContextFile is one project instructions file: the path it was found at
// and its full content.
type ContextFile struct {
	Path string
	Data []byte
}

// ProjectContext reads the instruction files of cwd's project: AGENTS.md
// and CLAUDE.md at the project root (ProjectRoot) and, when cwd is below
// it, in cwd, in that order. A file reached twice (CLAUDE.md is often a
// link to AGENTS.md) counts once; a file that cannot be read, or is not a
// regular file, is left out.
func ProjectContext(cwd string) []ContextFile {
	dirs := []string{ProjectRoot(cwd)}
	if cwd != dirs[0] {
		dirs = append(dirs, cwd)
	}
	seen := map[string]bool{}
	var out []ContextFile
	for _, d := range dirs {
		for _, name := range ContextNames {
			p := filepath.Join(d, name)
			real, err := filepath.EvalSymlinks(p)
			if err != nil || seen[real] {
				continue
			}
			fi, err := os.Stat(real)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			data, err := os.ReadFile(real)
			if err != nil {
				continue
			}
			seen[real] = true
			out = append(out, ContextFile{Path: p, Data: data})
		}
	}
	return out
}

// ContextUnchanged reports whether the instruction file at path still
// holds what it held when it went into a prompt: sum is the hex SHA-256
// of that content (a launch record's session.FileRef). A file that is
// gone or unreadable has changed. A resume refuses a child whose files
// changed (prompt-files-drift).
func ContextUnchanged(path, sum string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]) == sum
}
