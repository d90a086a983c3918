package orchestrator

import (
	"fmt"
	"strings"

	"github.com/inkdev/ink/agents"
	"github.com/inkdev/ink/session"
)

// maxContextBytes caps how much of one context file goes into a prompt.
const maxContextBytes = 32 * 1024

// renderContext is the system prompt section holding the project's
// instructions (agents.ProjectContext).
func renderContext(files []agents.ContextFile) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n# Project instructions\n")
	b.WriteString("The project keeps these instructions for coding agents; follow them.\n")
	for _, f := range files {
		text := string(f.Data)
		note := ""
		if len(text) > maxContextBytes {
			cut := maxContextBytes
			for cut > 0 && !utf8RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut]
			note = fmt.Sprintf("\n(%s is longer; its first %d bytes are shown — read the rest with the read tool)", f.Path, cut)
		}
		fmt.Fprintf(&b, "\n## %s\n%s%s\n", f.Path, strings.TrimRight(text, "\n"), note)
	}
	return b.String()
}

// contextRefs are the launch record's file references for files.
func contextRefs(files []agents.ContextFile) []session.FileRef {
	refs := make([]session.FileRef, 0, len(files))
	for _, f := range files {
		refs = append(refs, session.FileRef{Path: f.Path, SHA256: sha256Hex(f.Data)})
	}
	return refs
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
