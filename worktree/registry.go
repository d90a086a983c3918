package worktree

import (
	"context"
	"path/filepath"
	"strings"
)

// registered is one entry of `git worktree list --porcelain`.
type registered struct {
	path       string
	head       string
	branch     string // full ref, e.g. refs/heads/ink/x; "" when detached
	bare       bool
	detached   bool
	locked     bool
	lockReason string
	prunable   bool
}

// parseWorktreeList reads `git worktree list --porcelain` output.
func parseWorktreeList(out string) []registered {
	var all []registered
	var cur *registered
	for _, l := range strings.Split(out, "\n") {
		key, val, _ := strings.Cut(l, " ")
		switch key {
		case "worktree":
			all = append(all, registered{path: val})
			cur = &all[len(all)-1]
		case "HEAD":
			if cur != nil {
				cur.head = val
			}
		case "branch":
			if cur != nil {
				cur.branch = val
			}
		case "bare":
			if cur != nil {
				cur.bare = true
			}
		case "detached":
			if cur != nil {
				cur.detached = true
			}
		case "locked":
			if cur != nil {
				cur.locked = true
				cur.lockReason = val
			}
		case "prunable":
			if cur != nil {
				cur.prunable = true
			}
		}
	}
	return all
}

// listRegistered returns the worktrees git knows for the repository at root.
func listRegistered(ctx context.Context, root string) ([]registered, error) {
	out, err := read(ctx, root, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	return parseWorktreeList(out), nil
}

// findRegistered returns the entry for path (compared after symlink
// resolution) and whether there is one.
func findRegistered(all []registered, path string) (registered, bool) {
	clean := filepath.Clean(path)
	real, err := realpath(path)
	if err != nil {
		real = clean
	}
	for _, r := range all {
		if p := filepath.Clean(r.path); p == clean || p == real {
			return r, true
		}
	}
	for _, r := range all {
		if samePath(r.path, path) {
			return r, true
		}
	}
	return registered{}, false
}
