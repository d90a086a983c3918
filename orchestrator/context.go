package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/session"
)

// contextNames are the files in which a project keeps its instructions for
// coding agents, in the order they go into the system prompt.
var contextNames = []string{"AGENTS.md", "CLAUDE.md"}

// maxContextBytes caps how much of one context file goes into a prompt.
const maxContextBytes = 32 * 1024

// contextFile is one project instructions file that went into a system
// prompt: its path, its full content (hashed into launch records) and the
// part of it the prompt shows.
type contextFile struct {
	path string
	data []byte
}

// projectContext reads the instruction files of cwd's project: AGENTS.md and
// CLAUDE.md at the project root and, when cwd is below it, in cwd. A file
// reached twice (CLAUDE.md is often a link to AGENTS.md) counts once; a file
// that cannot be read is left out.
func projectContext(cwd string) []contextFile {
	dirs := []string{agents.ProjectRoot(cwd)}
	if cwd != dirs[0] {
		dirs = append(dirs, cwd)
	}
	seen := map[string]bool{}
	var out []contextFile
	for _, d := range dirs {
		for _, name := range contextNames {
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
			out = append(out, contextFile{path: p, data: data})
		}
	}
	return out
}

// renderContext is the system prompt section holding the project's
// instructions.
func renderContext(files []contextFile) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n# Project instructions\n")
	b.WriteString("The project keeps these instructions for coding agents; follow them.\n")
	for _, f := range files {
		text := string(f.data)
		note := ""
		if len(text) > maxContextBytes {
			cut := maxContextBytes
			for cut > 0 && !utf8RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut]
			note = fmt.Sprintf("\n(%s is longer; its first %d bytes are shown — read the rest with the read tool)", f.path, cut)
		}
		fmt.Fprintf(&b, "\n## %s\n%s%s\n", f.path, strings.TrimRight(text, "\n"), note)
	}
	return b.String()
}

// contextRefs are the launch record's file references for files.
func contextRefs(files []contextFile) []session.FileRef {
	refs := make([]session.FileRef, 0, len(files))
	for _, f := range files {
		refs = append(refs, session.FileRef{Path: f.path, SHA256: sha256Hex(f.data)})
	}
	return refs
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
