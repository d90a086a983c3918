package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/orchestrator"
	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

const worktreesLong = `Each child that ran with a worktree has one under $INK_HOME/worktrees on
branch ink/<child id>. These commands look at every worktree of this
INK_HOME, and at the ink worktrees of the repository you are in, whatever
INK_HOME made them.

  ls [--status]             one row per worktree: repository, branch, lock, the
                            child's transcript; --status adds its state (clean,
                            work-present, merged, unknown), ahead/behind and
                            dirty, which costs a few git commands per worktree
  diff ID                   the child's changes against its baseline, untracked
                            files included
  merge ID [--commit]       merge the child's branch into your current branch;
                            --commit first commits the work it left uncommitted;
                            the worktree and branch are removed once merged
  rm ID [--force]           remove a worktree and its branch; unmerged work only
                            with --force
  prune [--include-resumable]
                            remove what nothing needs any more, and say what was
                            kept and why; a clean worktree is kept while its
                            child can still be resumed, unless --include-resumable

A worktree whose .git link or git directory is not the one ink made is
listed as unknown, with why, and ink runs no git in it: diff and merge
refuse it, prune keeps it, rm removes it only with --force. Remove ink's
worktrees with rm, not git worktree remove.

Every command takes --json.`

func newWorktreesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktrees",
		Short: "List, diff, merge and remove the worktrees of children",
		Long:  worktreesLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("unknown command %q for ink worktrees; the commands are ls, diff ID, merge ID, rm ID [--force] and prune", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newWorktreesLsCmd(g), newWorktreesDiffCmd(g), newWorktreesMergeCmd(g), newWorktreesRmCmd(g), newWorktreesPruneCmd(g))
	return uses(cmd)
}

// worktreeScope is where the worktree commands look: this INK_HOME, the
// repository of the working directory (if any), and a reader of child
// transcripts.
type worktreeScope struct {
	home  string
	repos []string
	child func(worktree.Info) worktree.ChildStatus
}

func (g *globals) worktreeScope() (worktreeScope, error) {
	home, err := inkHome()
	if err != nil {
		return worktreeScope{}, err
	}
	s := worktreeScope{home: home, child: orchestrator.WorktreeChildren(home)}
	if dir, err := g.workDir(); err == nil {
		s.repos = []string{dir}
	} else if g.cwd != "" {
		return worktreeScope{}, err
	}
	return s, nil
}

func (s worktreeScope) list(ctx context.Context, status bool) ([]worktree.Info, error) {
	return worktree.ListWith(ctx, s.home, worktree.ListOptions{Repos: s.repos, Status: status, Child: s.child})
}

// find looks up the worktree of child id.
func (s worktreeScope) find(ctx context.Context, id string) (worktree.Info, error) {
	if !session.ValidID(id) {
		return worktree.Info{}, usageErr("%q is not a child id (ids use only a-z, 0-9 and '-'); list the worktrees with `ink worktrees ls`", id)
	}
	info, err := worktree.FindWith(ctx, s.home, id, worktree.ListOptions{Repos: s.repos, Child: s.child})
	if errors.Is(err, worktree.ErrNotFound) {
		return info, usageErr("no worktree for child %q; list them with `ink worktrees ls`", id)
	}
	if err != nil {
		return info, &exitError{code: exitFailed, msg: err.Error()}
	}
	return info, nil
}

// printJSON writes v as one JSON object on a line of stdout.
func printJSON(v any) error {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("write the result: %v", err)}
	}
	return nil
}

func newWorktreesLsCmd(g *globals) *cobra.Command {
	var status bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List child worktrees: repository, branch, lock, transcript (--status: state, ahead/behind, dirty)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := g.worktreeScope()
			if err != nil {
				return err
			}
			infos, err := s.list(cmd.Context(), status)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, in := range infos {
					if err := enc.Encode(in); err != nil {
						return &exitError{code: exitFailed, msg: fmt.Sprintf("write the listing: %v", err)}
					}
				}
				return nil
			}
			if len(infos) == 0 {
				fmt.Println("no worktrees")
				return nil
			}
			return writeWorktreeTable(os.Stdout, infos, status)
		},
	}
	c.Flags().BoolVar(&status, "status", false, "also assess each worktree: state, ahead/behind, dirty (a few git commands per worktree)")
	return uses(c, lookFlags...)
}

// writeWorktreeTable prints the ls table.
func writeWorktreeTable(w io.Writer, infos []worktree.Info, status bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if status {
		fmt.Fprintln(tw, "CHILD\tREPOSITORY\tSTATE\tBRANCH\tAHEAD/BEHIND\tDIRTY\tLOCK\tTRANSCRIPT\tPATH")
	} else {
		fmt.Fprintln(tw, "CHILD\tREPOSITORY\tSTATE\tBRANCH\tLOCK\tTRANSCRIPT\tPATH")
	}
	for _, in := range infos {
		repo := in.Record.RepoRoot
		if repo == "" {
			repo = "?"
		}
		if status {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%v\t%s\t%s\t%s\n", in.ChildID, repo, stateWord(in), in.Record.Branch, in.Ahead, in.Behind, in.Dirty, lockWord(in), transcriptWord(in), in.Record.Path)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.ChildID, repo, stateWord(in), in.Record.Branch, lockWord(in), transcriptWord(in), in.Record.Path)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range infos {
		if why := unknownWhy(in); why != "" {
			fmt.Fprintf(w, "%s is unknown: %s\n", in.ChildID, why)
		}
	}
	return nil
}

// unknownWhy says why a worktree listed as unknown is so, and what to do;
// "" for any other.
func unknownWhy(in worktree.Info) string {
	switch {
	case in.Untrusted != "":
		return fmt.Sprintf("ink runs no git in it, as %s; look at its files only (git run there would obey the directory its link names) and drop it with `ink worktrees rm --force %s`", in.Untrusted, in.ChildID)
	case in.State() == "unknown" && in.Assessment != nil && in.Assessment.Detail != "":
		return in.Assessment.Detail
	}
	return ""
}

// stateWord is the STATE column: the state when it was read, else what
// `git worktree list` alone tells ("committed" when the branch moved off
// its baseline, "?" when nothing more is known without --status).
func stateWord(in worktree.Info) string {
	if s := in.State(); s != "" {
		return s
	}
	if in.Head != "" && in.Record.Baseline != "" && in.Head != in.Record.Baseline {
		return "committed"
	}
	return "?"
}

// lockWord is the LOCK column.
func lockWord(in worktree.Info) string {
	switch {
	case !in.Locked:
		return "no"
	case in.LockPID > 0 && in.LockPIDAlive:
		return fmt.Sprintf("pid %d (live)", in.LockPID)
	case in.LockPID > 0:
		return fmt.Sprintf("pid %d (dead)", in.LockPID)
	default:
		return "yes"
	}
}

// transcriptWord is the TRANSCRIPT column: how the child's last attempt
// ended, and whether it can be resumed.
func transcriptWord(in worktree.Info) string {
	c := in.Child
	switch {
	case c == nil:
		return "?"
	case c.Problem != "" && c.Transcript == "":
		return "unreadable"
	case c.Transcript == "":
		return "none"
	}
	w := c.LastStatus
	if w == "" {
		w = "not started"
	}
	if c.Resumable {
		w += " (resumable)"
	}
	return w
}

func newWorktreesDiffCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "diff ID",
		Short: "Show a child's changes against its baseline, untracked files included",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.worktreeScope()
			if err != nil {
				return err
			}
			info, err := s.find(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				res, err := worktree.DiffFiles(cmd.Context(), info)
				if err != nil {
					return &exitError{code: exitFailed, msg: err.Error()}
				}
				return printJSON(res)
			}
			if err := worktree.Diff(cmd.Context(), info, os.Stdout); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	}
}

func newWorktreesMergeCmd(g *globals) *cobra.Command {
	var commit bool
	c := &cobra.Command{
		Use:   "merge ID",
		Short: "Merge a child's branch into the current branch of the main checkout (refuses on conflicts)",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.worktreeScope()
			if err != nil {
				return err
			}
			info, err := s.find(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			res, err := worktree.Merge(cmd.Context(), info, worktree.MergeOptions{Commit: commit, Child: s.child})
			if err != nil {
				var refused *worktree.MergeRefusedError
				if errors.As(err, &refused) {
					return &exitError{code: exitRefused, msg: err.Error()}
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				return printJSON(res)
			}
			if res.Committed != "" {
				fmt.Printf("committed the work %s left uncommitted (%s) on %s as %s\n", res.ChildID, fmt.Sprintf("%d %s", len(res.CommittedFiles), orchestrator.Plural(len(res.CommittedFiles), "file", "files")), res.Branch, worktree.ShortSHA(res.Committed))
			}
			if res.AlreadyMerged {
				fmt.Printf("%s has nothing %s lacks; nothing to merge\n", res.Branch, res.Into)
			} else {
				fmt.Printf("merged %s into %s (%s) as %s\n", res.Branch, res.Into, res.Shortstat, worktree.ShortSHA(res.Commit))
			}
			if res.Removed {
				fmt.Printf("removed the worktree %s and branch %s: everything in them is merged\n", info.Record.Path, res.Branch)
			} else if res.Kept != "" {
				fmt.Printf("kept the worktree %s: %s\n", info.Record.Path, res.Kept)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&commit, "commit", false, "first commit the work the child left uncommitted, on its branch")
	return uses(c, lookFlags...)
}

func newWorktreesRmCmd(g *globals) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a child's worktree and branch (refuses unmerged work unless --force)",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.worktreeScope()
			if err != nil {
				return err
			}
			info, err := s.find(cmd.Context(), args[0])
			if err != nil {
				if !session.ValidID(args[0]) {
					return err
				}
				// A killed creation may have left only an empty record,
				// which no listing shows: it holds nothing, so it goes.
				if p, rerr := worktree.RemoveEmptyRecord(s.home, args[0]); rerr != nil {
					return &exitError{code: exitFailed, msg: rerr.Error()}
				} else if p != "" {
					if g.json {
						return printJSON(map[string]string{"childId": args[0], "emptyRecord": p})
					}
					fmt.Printf("deleted %s: an empty worktree record that a process killed while creating it left; no worktree was made for %s\n", p, args[0])
					return nil
				}
				return err
			}
			res, err := worktree.RemoveForce(cmd.Context(), info, force)
			if res.BrokenBranch != "" && !g.json {
				fmt.Println(brokenBranchNote(res.BrokenBranch))
			}
			if err != nil {
				if errors.Is(err, worktree.ErrUnmergedWork) || errors.Is(err, worktree.ErrInUse) {
					return &exitError{code: exitRefused, msg: err.Error()}
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				return printJSON(res)
			}
			fmt.Printf("removed %s and branch %s\n", res.Path, res.Branch)
			if len(res.Discarded) > 0 {
				fmt.Printf("discarded its uncommitted files: %s\n", strings.Join(res.Discarded, ", "))
			}
			if res.DroppedHead != "" {
				fmt.Printf("its tip was %s; recover it with `git -C %s branch %s %s` before git collects it\n", res.DroppedHead, res.RepoRoot, res.Branch, res.DroppedHead)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "remove even with unmerged work")
	return uses(c, lookFlags...)
}

func newWorktreesPruneCmd(g *globals) *cobra.Command {
	var includeResumable bool
	c := &cobra.Command{
		Use:   "prune",
		Short: "Remove worktrees nothing needs any more; say what was kept and why",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := g.worktreeScope()
			if err != nil {
				return err
			}
			res, err := worktree.Prune(cmd.Context(), s.home, worktree.PruneOptions{Repos: s.repos, Child: s.child, IncludeResumable: includeResumable})
			if g.json {
				if perr := printJSON(res); perr != nil {
					return perr
				}
			} else {
				writePruneResult(os.Stdout, res)
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&includeResumable, "include-resumable", false, "also remove the clean worktrees of children that could still be resumed (they can no longer be)")
	return uses(c, lookFlags...)
}

// writePruneResult prints one line per removed and kept worktree.
func writePruneResult(w io.Writer, res worktree.PruneResult) {
	for _, p := range res.EmptyRecords {
		fmt.Fprintf(w, "deleted %s: an empty worktree record that a process killed while creating it left, with no worktree made\n", p)
	}
	if len(res.Removed) == 0 && len(res.Kept) == 0 {
		if len(res.EmptyRecords) == 0 {
			fmt.Fprintln(w, "nothing to prune")
		}
		return
	}
	for _, e := range res.Removed {
		fmt.Fprintf(w, "removed %s: %s\n", e.Path, e.Why)
		if e.Lost != "" {
			fmt.Fprintf(w, "  lost: %s\n", e.Lost)
		}
		if e.BrokenBranch != "" {
			fmt.Fprintf(w, "  %s\n", brokenBranchNote(e.BrokenBranch))
		}
	}
	for _, e := range res.Kept {
		fmt.Fprintf(w, "kept %s: %s\n", e.Path, e.Why)
		if e.BrokenBranch != "" {
			fmt.Fprintf(w, "  %s\n", brokenBranchNote(e.BrokenBranch))
		}
	}
}

// brokenBranchNote says that a broken ink branch ref was deleted.
func brokenBranchNote(ref string) string {
	return fmt.Sprintf("deleted the broken ref %s: a crash of the machine had left it empty, so it held nothing git could read, and it made `git gc` fail", ref)
}

// oneChildID accepts exactly one argument, the child id of a worktree.
func oneChildID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErr("ink worktrees %s takes one child id, got %d arguments; list the worktrees with `ink worktrees ls`", cmd.Name(), len(args))
	}
	return nil
}
