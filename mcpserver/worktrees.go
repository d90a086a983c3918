package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
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

var idSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Child session id of the worktree's child (worktrees_list shows them)."}},"required":["id"],"additionalProperties":false}`)

var mergeSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"Child session id of the worktree's child (worktrees_list shows them)."},"commit":{"type":"boolean","description":"Commit the child's uncommitted work on its branch first, with a generated message."}},"required":["id"],"additionalProperties":false}`)

var noArgs = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)

// addWorktreeTools registers worktrees_list, worktree_diff and
// worktree_merge. They call package worktree the way `ink worktrees` does,
// through the small functions below.
func (s *Server) addWorktreeTools() {
	addTool(s, &mcp.Tool{
		Name: "worktrees_list", Title: "List child worktrees", Description: worktreesListDescription, InputSchema: noArgs,
		Annotations: &mcp.ToolAnnotations{Title: "List child worktrees", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreesList)
	s.add(&mcp.Tool{
		Name: "worktree_diff", Title: "Diff a child's worktree", Description: worktreeDiffDescription, InputSchema: idSchema,
		Annotations: &mcp.ToolAnnotations{Title: "Diff a child's worktree", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreeDiff)
	addTool(s, &mcp.Tool{
		Name: "worktree_merge", Title: "Merge a child's branch", Description: worktreeMergeDescription, InputSchema: mergeSchema,
		// A merge adds a commit and changes the checkout; a second merge
		// finds nothing to do.
		Annotations: &mcp.ToolAnnotations{Title: "Merge a child's branch", ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, s.worktreeMerge)
}

// strictArgs decodes raw into an object with only the names allowed.
func strictArgs(tool string, raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	takes := tool + " takes no arguments"
	if len(allowed) > 0 {
		takes = tool + " takes: " + strings.Join(allowed, ", ")
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, fmt.Errorf("%s: the arguments must be a JSON object; %s", tool, takes)
	}
	var unknown []string
	for k := range fields {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: unknown argument %s; %s", tool, strings.Join(unknown, ", "), takes)
	}
	return fields, nil
}

// childID reads the id argument of a worktree tool.
func childID(tool string, raw json.RawMessage) (string, error) {
	fields, err := strictArgs(tool, raw, "id")
	if err != nil {
		return "", err
	}
	v, ok := fields["id"]
	var id string
	if !ok || len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &id) != nil {
		return "", fmt.Errorf("%s: id is required: the child session id of the worktree (worktrees_list shows them)", tool)
	}
	if !session.ValidID(id) {
		return "", fmt.Errorf("%s: %q is not a child id (ids use only a-z, 0-9 and '-'); list the worktrees with worktrees_list", tool, id)
	}
	return id, nil
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
	if _, err := strictArgs("worktrees_list", req.Params.Arguments); err != nil {
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
	id, err := childID("worktree_diff", req.Params.Arguments)
	if err != nil {
		return toolError(err.Error()), nil
	}
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
	fields, err := strictArgs("worktree_merge", req.Params.Arguments, "id", "commit")
	if err != nil {
		return toolError(err.Error()), nil
	}
	commit := false
	if v, ok := fields["commit"]; ok && json.Unmarshal(v, &commit) != nil {
		return toolError("worktree_merge: commit must be true or false"), nil
	}
	delete(fields, "commit")
	rest, _ := json.Marshal(fields)
	id, err := childID("worktree_merge", rest)
	if err != nil {
		return toolError(err.Error()), nil
	}
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
