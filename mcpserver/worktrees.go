package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/toolargs"
	"github.com/inkdev/ink/worktree"
)

// maxDiffBytes caps the patch worktree_diff returns.
const maxDiffBytes = 256 << 10

const (
	worktreesListDescription = "List the git worktrees of ink's children: child id, state (clean, work-present or unknown), " +
		"branch, commits ahead/behind the main checkout, uncommitted changes, whether a running child holds it, and its path. " +
		"Children started with worktree: true work there; review one with worktree_diff and merge it with worktree_merge."
	worktreeDiffDescription = "Show a child's changes: the git patch of its worktree against the commit it started from, " +
		"commits, uncommitted edits and untracked files included. Read-only."
	worktreeMergeDescription = "Merge a child's branch into the branch checked out in the main checkout (git merge --no-ff). " +
		"It is refused, changing nothing, when the main checkout has uncommitted changes, the worktree has uncommitted work " +
		"(pass commit: true to commit it on the child's branch first), or the merge would conflict or overwrite untracked files; " +
		"the message says which files. Once everything in it is merged, the worktree and its branch are removed, unless the " +
		"child can still be resumed. Review the changes first with worktree_diff."
)

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

// worktreeArgs are worktree_diff's arguments.
type worktreeArgs struct {
	ID string `json:"id" jsonschema:"Child session id of the worktree's child (worktrees_list shows them)."`
}

// mergeArgs are worktree_merge's arguments.
type mergeArgs struct {
	ID     string `json:"id" jsonschema:"Child session id of the worktree's child (worktrees_list shows them)."`
	Commit bool   `json:"commit,omitempty" jsonschema:"Commit the child's uncommitted work on its branch first, with a generated message."`
}

// addWorktreeTools registers worktrees_list, worktree_diff and
// worktree_merge. They call package worktree the way `ink worktrees` does,
// through the small functions below.
func (s *Server) addWorktreeTools() {
	addTool(s, &mcp.Tool{
		Name: "worktrees_list", Title: "List child worktrees", Description: worktreesListDescription, InputSchema: toolargs.Schema[noArgs](),
		Annotations: &mcp.ToolAnnotations{Title: "List child worktrees", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreesList)
	s.add(&mcp.Tool{
		Name: "worktree_diff", Title: "Diff a child's worktree", Description: worktreeDiffDescription, InputSchema: toolargs.Schema[worktreeArgs](),
		Annotations: &mcp.ToolAnnotations{Title: "Diff a child's worktree", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreeDiff)
	addTool(s, &mcp.Tool{
		Name: "worktree_merge", Title: "Merge a child's branch", Description: worktreeMergeDescription, InputSchema: toolargs.Schema[mergeArgs](),
		// A merge adds a commit and changes the checkout; a second merge
		// finds nothing to do.
		Annotations: &mcp.ToolAnnotations{Title: "Merge a child's branch", ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreeMerge)
}

// checkChildID refuses an id that cannot be a child's.
func checkChildID(tool, id string) error {
	if !session.ValidID(id) {
		return fmt.Errorf("%s: %q is not a child id (ids use only a-z, 0-9 and '-'); list the worktrees with worktrees_list", tool, id)
	}
	return nil
}

// findWorktree finds a child's worktree as `ink worktrees` does.
func (s *Server) findWorktree(ctx context.Context, tool, id string) (worktree.Info, error) {
	info, err := worktree.Find(ctx, s.cfg.InkHome, id)
	if errors.Is(err, worktree.ErrNotFound) {
		return info, fmt.Errorf("%s: no worktree for child %q; list them with worktrees_list (a child has one only when it was started with worktree: true, and a clean one is removed when the child completes)", tool, id)
	}
	if err != nil {
		return info, fmt.Errorf("%s: %v", tool, err)
	}
	return info, nil
}

func (s *Server) worktreesList(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *WorktreesOutput) {
	if _, err := toolargs.Decode[noArgs]("worktrees_list", req.Params.Arguments); err != nil {
		return toolError(err.Error()), nil
	}
	infos, err := worktree.List(ctx, s.cfg.InkHome)
	if err != nil {
		return toolError("worktrees_list: " + err.Error()), nil
	}
	out := &WorktreesOutput{Worktrees: []WorktreeEntry{}}
	for _, in := range infos {
		out.Worktrees = append(out.Worktrees, worktreeEntry(in))
	}
	return textResult(worktreesText(infos), false), out
}

// worktreesText renders the list, one worktree per line.
func worktreesText(infos []worktree.Info) string {
	if len(infos) == 0 {
		return "no child worktrees"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d child %s:", len(infos), map[bool]string{true: "worktree", false: "worktrees"}[len(infos) == 1])
	for _, in := range infos {
		locked := "not locked"
		if in.Locked {
			locked = "locked"
			if in.LockPID > 0 && in.LockPIDAlive {
				locked = fmt.Sprintf("in use by pid %d", in.LockPID)
			} else if in.LockPID > 0 {
				locked = fmt.Sprintf("locked by dead pid %d", in.LockPID)
			}
		}
		dirty := "no uncommitted changes"
		if in.Dirty {
			dirty = "uncommitted changes"
		}
		fmt.Fprintf(&b, "\n- %s: %s, branch %s, %d ahead / %d behind, %s, %s, %s", in.ChildID, in.State(), in.Record.Branch, in.Ahead, in.Behind, dirty, locked, in.Record.Path)
		if in.Problem != "" {
			fmt.Fprintf(&b, " (%s)", in.Problem)
		}
	}
	return b.String()
}

func (s *Server) worktreeDiff(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := toolargs.Decode[worktreeArgs]("worktree_diff", req.Params.Arguments)
	if err == nil {
		err = checkChildID("worktree_diff", a.ID)
	}
	if err != nil {
		return toolError(err.Error()), nil
	}
	id := a.ID
	info, err := s.findWorktree(ctx, "worktree_diff", id)
	if err != nil {
		return toolError(err.Error()), nil
	}
	var buf bytes.Buffer
	if err := worktree.Diff(ctx, info, &buf); err != nil {
		return toolError("worktree_diff: " + err.Error()), nil
	}
	patch := buf.String()
	if patch == "" {
		return textResult(fmt.Sprintf("child %s has no changes against its baseline %s (branch %s)", id, worktree.ShortSHA(info.Record.Baseline), info.Record.Branch), false), nil
	}
	if len(patch) > maxDiffBytes {
		cut := maxDiffBytes
		for cut > 0 && !utf8.RuneStart(patch[cut]) {
			cut--
		}
		patch = patch[:cut] + fmt.Sprintf("\n[diff truncated: %d of %d bytes shown; see the whole patch with `ink worktrees diff %s`]", cut, buf.Len(), id)
	}
	return textResult(patch, false), nil
}

func (s *Server) worktreeMerge(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *MergeOutput) {
	a, err := toolargs.Decode[mergeArgs]("worktree_merge", req.Params.Arguments)
	if err == nil {
		err = checkChildID("worktree_merge", a.ID)
	}
	if err != nil {
		return toolError(err.Error()), nil
	}
	id, commit := a.ID, a.Commit
	info, err := s.findWorktree(ctx, "worktree_merge", id)
	if err != nil {
		return toolError(err.Error()), nil
	}
	res, err := worktree.Merge(ctx, info, worktree.MergeOptions{Commit: commit, Child: orchestrator.WorktreeChildren(s.cfg.InkHome)})
	if err != nil {
		msg := "worktree_merge: " + err.Error()
		if !commit && strings.Contains(msg, "merge --commit") {
			msg += "\nFrom here: call worktree_merge again with commit: true."
		}
		return toolError(msg), nil
	}
	var text string
	if res.AlreadyMerged {
		text = fmt.Sprintf("%s has nothing %s lacks; nothing to merge", res.Branch, res.Into)
	} else {
		text = fmt.Sprintf("merged %s into %s (%s) as %s", res.Branch, res.Into, res.Shortstat, worktree.ShortSHA(res.Commit))
	}
	switch {
	case res.Removed:
		text += fmt.Sprintf("; removed the worktree %s and branch %s, everything in them being merged", info.Record.Path, res.Branch)
	case res.Kept != "":
		text += fmt.Sprintf("; kept the worktree %s: %s", info.Record.Path, res.Kept)
	}
	return textResult(text, false), &MergeOutput{
		Summary: text, ChildID: res.ChildID, Branch: res.Branch, Into: res.Into, Path: info.Record.Path,
		Committed: res.Committed, CommittedFiles: res.CommittedFiles, Commit: res.Commit, AlreadyMerged: res.AlreadyMerged,
		Shortstat: res.Shortstat, Removed: res.Removed, Kept: res.Kept,
	}
}
