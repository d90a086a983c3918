package tools

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Builtins returns the built-in tools of one agent working in env, in the
// order read, grep, find, ls, edit, write, bash. They share one read
// tracker, so edit and write know what this agent has read: build one set
// per agent. env is validated (Root and Cwd resolved, defaults filled); a
// bad env is an error saying which field is wrong.
//
// The set holds one open directory, the os.Root of env.Root through which
// every file tool reaches the disk. The caller owns it: Close the returned
// io.Closer once no call of these tools runs any more (when the agent's
// attempt ends); calls made after Close fail with an error. Closing twice
// is harmless, and a set dropped without Close releases the directory when
// it is garbage collected.
func Builtins(env Env) ([]Tool, io.Closer, error) {
	e, err := env.normalize()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.OpenRoot(e.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("tools env: open root: %w", err)
	}
	e.dir = dir
	if e.locks == nil {
		e.locks = &lockDirCache{}
	}
	ep := &e
	tr := newReadTracker()
	return []Tool{
		&readTool{env: ep, tracker: tr},
		&grepTool{env: ep},
		&findTool{env: ep},
		&lsTool{env: ep},
		&editTool{env: ep, tracker: tr},
		&writeTool{env: ep, tracker: tr},
		&bashTool{env: ep},
	}, dir, nil
}

// Select narrows pool to the tools named in names, in the order of names
// (a repeated name counts once). An unknown name is an error that lists
// the names available in pool.
func Select(pool []Tool, names []string) ([]Tool, error) {
	byName := make(map[string]Tool, len(pool))
	for _, t := range pool {
		byName[t.Spec().Name] = t
	}
	var out []Tool
	var unknown []string
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		t, ok := byName[n]
		switch {
		case !ok:
			unknown = append(unknown, fmt.Sprintf("%q", n))
		case !taken[n]:
			taken[n] = true
			out = append(out, t)
		}
	}
	if len(unknown) > 0 {
		word := "tool"
		if len(unknown) > 1 {
			word = "tools"
		}
		return nil, fmt.Errorf("unknown %s %s; available: %s", word, strings.Join(unknown, ", "), strings.Join(Names(pool), ", "))
	}
	return out, nil
}

// Names returns the names of the tools in pool, in pool order.
func Names(pool []Tool) []string {
	names := make([]string, len(pool))
	for i, t := range pool {
		names[i] = t.Spec().Name
	}
	return names
}
