package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/session"
	"github.com/inkdev/ink/worktree"
)

func newWorktreesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktrees",
		Short: "List, diff, merge and remove the worktrees of children",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("unknown command %q for ink worktrees; the commands are ls, diff ID, merge ID, rm ID [--force] and prune", args[0])
			}
			return cmd.Help()
		},
	}
	find := func(cmd *cobra.Command, id string) (worktree.Info, error) {
		if !session.ValidID(id) {
			return worktree.Info{}, usageErr("%q is not a child id (ids use only a-z, 0-9 and '-'); list the worktrees with `ink worktrees ls`", id)
		}
		home, err := inkHome()
		if err != nil {
			return worktree.Info{}, err
		}
		info, err := worktree.Find(cmd.Context(), home, id)
		if errors.Is(err, worktree.ErrNotFound) {
			return info, usageErr("no worktree for child %q; list them with `ink worktrees ls`", id)
		}
		if err != nil {
			return info, &exitError{code: exitFailed, msg: err.Error()}
		}
		return info, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List child worktrees: path, branch, child, state, ahead/behind, dirty, locked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			infos, err := worktree.List(cmd.Context(), home)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, in := range infos {
					enc.Encode(in)
				}
				return nil
			}
			if len(infos) == 0 {
				fmt.Println("no worktrees")
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CHILD\tSTATE\tBRANCH\tAHEAD/BEHIND\tDIRTY\tLOCKED\tPATH")
			for _, in := range infos {
				locked := "no"
				if in.Locked {
					locked = "yes"
					if in.LockPID > 0 && in.LockPIDAlive {
						locked = fmt.Sprintf("pid %d (live)", in.LockPID)
					} else if in.LockPID > 0 {
						locked = fmt.Sprintf("pid %d (dead)", in.LockPID)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%v\t%s\t%s\n", in.ChildID, in.Assessment.State, in.Record.Branch, in.Ahead, in.Behind, in.Dirty, locked, in.Record.Path)
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "diff ID",
		Short: "Show a child's changes against its baseline, untracked files included",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.json {
				return usageErr("ink worktrees diff prints a git patch, not JSON; drop --json")
			}
			info, err := find(cmd, args[0])
			if err != nil {
				return err
			}
			if err := worktree.Diff(cmd.Context(), info, os.Stdout); err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "merge ID",
		Short: "Merge a child's branch into the current branch of the main checkout (refuses on conflicts)",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := find(cmd, args[0])
			if err != nil {
				return err
			}
			res, err := worktree.Merge(cmd.Context(), info)
			if err != nil {
				var refused *worktree.MergeRefusedError
				if errors.As(err, &refused) {
					return &exitError{code: exitRefused, msg: err.Error()}
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			if res.AlreadyMerged {
				fmt.Printf("%s has nothing %s lacks; nothing to merge\n", res.Branch, res.Into)
				return nil
			}
			fmt.Printf("merged %s into %s (%s) as %s\n", res.Branch, res.Into, res.Shortstat, worktree.ShortSHA(res.Commit))
			return nil
		},
	})
	var force bool
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a child's worktree and branch (refuses unmerged work unless --force)",
		Args:  oneChildID,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := find(cmd, args[0])
			if err != nil {
				return err
			}
			if err := worktree.RemoveForce(cmd.Context(), info, force); err != nil {
				if errors.Is(err, worktree.ErrUnmergedWork) || errors.Is(err, worktree.ErrInUse) {
					return &exitError{code: exitRefused, msg: err.Error()}
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			// A forced removal may drop commits: name the tip so that it can
			// be recovered while git still keeps the objects.
			dropped := ""
			if force && info.Head != "" && info.Ahead > 0 {
				dropped = info.Head
			}
			if g.json {
				return json.NewEncoder(os.Stdout).Encode(map[string]any{"childId": info.ChildID, "path": info.Record.Path, "branch": info.Record.Branch, "removed": true, "droppedHead": dropped})
			}
			fmt.Printf("removed %s and branch %s\n", info.Record.Path, info.Record.Branch)
			if dropped != "" {
				fmt.Printf("its tip was %s; recover it with `git -C %s branch %s %s` before git collects it\n", dropped, info.Record.RepoRoot, info.Record.Branch, dropped)
			}
			return nil
		},
	}
	rm.Flags().BoolVar(&force, "force", false, "remove even with unmerged work")
	cmd.AddCommand(rm)
	cmd.AddCommand(&cobra.Command{
		Use:   "prune",
		Short: "Remove clean worktrees left by children that are gone",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			removed, err := worktree.Prune(cmd.Context(), home)
			if g.json {
				if removed == nil {
					removed = []string{}
				}
				json.NewEncoder(os.Stdout).Encode(map[string]any{"removed": removed})
			} else {
				for _, p := range removed {
					fmt.Println("removed " + p)
				}
			}
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if len(removed) == 0 && !g.json {
				fmt.Println("nothing to prune")
			}
			return nil
		},
	})
	return cmd
}

// oneChildID accepts exactly one argument, the child id of a worktree.
func oneChildID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErr("ink worktrees %s takes one child id, got %d arguments; list the worktrees with `ink worktrees ls`", cmd.Name(), len(args))
	}
	return nil
}
