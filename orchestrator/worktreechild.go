package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

// WorktreeChildren returns what ink worktrees ls, prune and merge ask of a
// worktree: what became of the child it was made for, read from the
// transcripts under the worktree's INK_HOME (home when the worktree does
// not say). The function reads each session's children once and is not
// safe for concurrent use: make one per command.
func WorktreeChildren(home string) func(worktree.Info) worktree.ChildStatus {
	return newChildLookup(home).status
}

// childLookup answers what became of the child a worktree was made for,
// from the transcripts under the worktree's INK_HOME. It reads each
// session's children once.
type childLookup struct {
	home     string
	children map[string][]session.ChildSummary // main transcript -> its children
	files    map[string]map[string][]string    // INK_HOME -> child id -> transcripts
	problems map[string]string                 // INK_HOME -> why its sessions are unreadable
}

func newChildLookup(home string) *childLookup {
	return &childLookup{home: home, children: map[string][]session.ChildSummary{}, files: map[string]map[string][]string{}, problems: map[string]string{}}
}

// transcripts returns the child transcripts of home by child id (file
// name), reading the directory tree once per home.
func (l *childLookup) transcripts(home string) map[string][]string {
	if m, ok := l.files[home]; ok {
		return m
	}
	m := map[string][]string{}
	sessions := filepath.Join(home, "sessions")
	if _, err := os.ReadDir(sessions); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.problems[home] = fmt.Sprintf("cannot read %s (%v), so ink cannot tell whether the child can be resumed", sessions, err)
	}
	paths, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "children", "*.jsonl"))
	for _, p := range paths {
		id := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		m[id] = append(m[id], p)
	}
	l.files[home] = m
	return m
}

// status finds the child's transcript,
// <home>/sessions/<cwd>/<session>/children/<id>.jsonl, and how its last
// attempt ended. A child can be resumed when its transcript is usable and
// its last attempt did not complete. When the sessions of the worktree's
// INK_HOME cannot be read, it says so and counts the child as resumable,
// so that nothing it may need is removed.
func (l *childLookup) status(in worktree.Info) worktree.ChildStatus {
	home := in.InkHome
	if home == "" {
		home = l.home
	}
	byID := l.transcripts(home)
	if p := l.problems[home]; p != "" {
		return worktree.ChildStatus{Resumable: true, Problem: p}
	}
	var out worktree.ChildStatus
	for _, path := range byID[in.ChildID] {
		mainPath := filepath.Dir(filepath.Dir(path)) + ".jsonl"
		kids, ok := l.children[mainPath]
		if !ok {
			kids, _ = session.ListChildren(mainPath)
			l.children[mainPath] = kids
		}
		for _, k := range kids {
			if k.Path != path {
				continue
			}
			cs := worktree.ChildStatus{Transcript: path, LastStatus: string(k.LastStatus), Problem: k.Problem}
			if k.ID != in.ChildID && k.Problem == "" {
				cs.Problem = fmt.Sprintf("its header names child %q", k.ID)
			}
			cs.Resumable = cs.Problem == "" && k.LastStatus != StatusCompleted
			if out.Transcript == "" || cs.Resumable {
				out = cs
			}
		}
	}
	return out
}
