package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// profileTree is what one profile directory holds: its *.md files at any
// depth, the directories they were found in (for the watcher), and
// warnings about what was not followed (symlink loops).
type profileTree struct {
	files    []string
	dirs     []string
	warnings []Problem
}

// walkProfiles lists the *.md files under dir as Claude Code finds them
// (**/*.md): in dir and every subdirectory, following symbolic links to
// directories. A directory reached twice (a symlink loop, or two links to
// one place) is read once; a loop gets a warning. Hidden files and
// directories (a leading '.', such as editor swap files or .git) are
// skipped; so are, later, a collection's README.md and such (collectionDoc). Paths are as reached from dir (through the links), sorted so
// that a directory's own files come before its subdirectories'. A missing
// dir holds nothing; an unreadable dir is a problem; an unreadable
// subdirectory is a warning and the rest is read.
func walkProfiles(dir string) (profileTree, *Problem) {
	var tree profileTree
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return tree, nil
	}
	if err == nil && !info.IsDir() {
		return tree, &Problem{Path: dir, Reason: "cannot read the agents directory: not a directory"}
	}
	if err != nil {
		return tree, &Problem{Path: dir, Reason: fmt.Sprintf("cannot read the agents directory: %v", unwrapPathError(err))}
	}
	if _, err := os.ReadDir(dir); err != nil {
		return tree, &Problem{Path: dir, Reason: fmt.Sprintf("cannot read the agents directory: %v", unwrapPathError(err))}
	}
	visited := map[string]string{} // real path -> path it was first reached by
	var walk func(path string)
	walk = func(path string) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = path
		}
		if first, seen := visited[real]; seen {
			if isAncestorOrSelf(real, path) || strings.HasPrefix(path, first+string(filepath.Separator)) {
				tree.warnings = append(tree.warnings, Problem{Path: path, Warning: true,
					Reason: fmt.Sprintf("symbolic link loop: it leads back to %s; not followed", first)})
			}
			return
		}
		visited[real] = path
		entries, err := os.ReadDir(path)
		if err != nil {
			tree.warnings = append(tree.warnings, Problem{Path: path, Warning: true,
				Reason: fmt.Sprintf("cannot read this directory: %v; its profiles are not loaded", unwrapPathError(err))})
			return
		}
		tree.dirs = append(tree.dirs, path)
		var subdirs []string
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			child := filepath.Join(path, name)
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				if fi, err := os.Stat(child); err == nil && fi.IsDir() {
					isDir = true
				}
			}
			switch {
			case isDir:
				subdirs = append(subdirs, child)
			case strings.HasSuffix(name, ".md"):
				tree.files = append(tree.files, child)
			}
		}
		sort.Strings(subdirs)
		for _, sub := range subdirs {
			walk(sub)
		}
	}
	walk(dir)
	return tree, nil
}

// isAncestorOrSelf reports whether real (a resolved directory) is path's
// own resolved location or one of its ancestors': following path led back
// into a directory it is inside of.
func isAncestorOrSelf(real, path string) bool {
	resolved, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return false
	}
	return resolved == real || strings.HasPrefix(resolved+string(filepath.Separator), real+string(filepath.Separator))
}

// errNotAProfile marks a file that is documentation shipped beside the
// agents, not an agent (see collectionDoc).
var errNotAProfile = errors.New("not an agent profile")

// collectionDocNames are the names (lower case, without .md) of the
// documents agent collections ship beside their agents.
var collectionDocNames = map[string]bool{
	"readme": true, "changelog": true, "contributing": true, "license": true,
	"code_of_conduct": true, "security": true, "claude": true, "agents": true,
}

// collectionDoc reports whether path is such a document (README.md, …)
// without frontmatter: it is not an agent, so it is neither loaded nor
// reported. With a frontmatter it is read as any profile.
func collectionDoc(path string, data []byte) bool {
	name := strings.ToLower(strings.TrimSuffix(filepath.Base(path), ".md"))
	if !collectionDocNames[name] {
		return false
	}
	_, _, reason, ok := splitFrontmatter(data)
	return !ok && reason == reasonNoFrontmatter
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
