package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/agents"
)

// loadProfiles loads the profiles of the current project once.
func loadProfiles(g *globals) (*agents.Set, error) {
	home, err := inkHome()
	if err != nil {
		return nil, err
	}
	cwd, err := g.workDir()
	if err != nil {
		return nil, err
	}
	trust, err := agents.LoadTrust(home)
	if err != nil {
		return nil, &exitError{code: exitFailed, msg: err.Error()}
	}
	userHome, _ := os.UserHomeDir()
	return agents.Load(agents.LoadOptions{Home: userHome, InkHome: home, ProjectRoot: agents.ProjectRoot(cwd), Trust: trust}), nil
}

func newAgentsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "List, show and check agent profiles"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List the agent profiles this directory sees (winners, shadowed files, problems)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := loadProfiles(g)
			if err != nil {
				return err
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, p := range set.All() {
					enc.Encode(map[string]any{"name": p.Name, "description": p.Description, "source": p.Source, "tools": p.Tools, "model": p.Model, "timeoutSeconds": p.Timeout.Seconds(), "worktree": p.Worktree, "notes": p.Notes})
				}
				for _, s := range set.Shadowed() {
					enc.Encode(map[string]any{"shadowed": s.Shadowed, "name": s.Name, "by": s.Winner})
				}
				for _, pr := range set.Problems() {
					enc.Encode(map[string]any{"problem": pr.String(), "path": pr.Path, "line": pr.Line})
				}
				if msg := set.UntrustedMessage(); msg != "" {
					enc.Encode(map[string]any{"untrusted": msg})
				}
				return nil
			}
			all := set.All()
			if len(all) == 0 {
				fmt.Println("no agent profiles loaded; searched: " + strings.Join(set.Dirs(), ", "))
			} else {
				tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tTOOLS\tMODEL\tSOURCE")
				for _, p := range all {
					tools := "(parent's)"
					if p.Tools != nil {
						tools = strings.Join(p.Tools, ",")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, tools, dash(p.Model), p.Source)
				}
				tw.Flush()
			}
			for _, s := range set.Shadowed() {
				fmt.Printf("shadowed: %s (agent %s) is hidden by %s\n", s.Shadowed, s.Name, s.Winner)
			}
			for _, pr := range set.Problems() {
				fmt.Printf("skipped: %s\n", pr)
			}
			if msg := set.UntrustedMessage(); msg != "" {
				fmt.Println(msg)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Show one profile as ink reads it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := loadProfiles(g)
			if err != nil {
				return err
			}
			p, ok := set.Get(args[0])
			if !ok {
				return usageErr("no agent %q; available: %s", args[0], strings.Join(set.Names(), ", "))
			}
			if g.json {
				return json.NewEncoder(os.Stdout).Encode(p)
			}
			fmt.Printf("name:        %s\ndescription: %s\nsource:      %s\n", p.Name, p.Description, p.Source)
			if p.Tools != nil {
				fmt.Printf("tools:       %s\n", strings.Join(p.Tools, ", "))
			}
			if p.Model != "" {
				fmt.Printf("model:       %s\n", p.Model)
			}
			if p.Timeout > 0 {
				fmt.Printf("timeout:     %s\n", p.Timeout)
			}
			if p.Worktree != nil {
				fmt.Printf("worktree:    %v\n", *p.Worktree)
			}
			if p.Thinking != "" {
				fmt.Printf("thinking:    %s\n", p.Thinking)
			}
			for _, n := range p.Notes {
				fmt.Printf("note:        %s\n", n)
			}
			fmt.Printf("\n%s\n", p.Body)
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check [DIR]",
		Short: "Report every problem in the profiles of DIR (default: every profile directory); exit 1 if any",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var problems []agents.Problem
			if len(args) == 1 {
				dir, err := filepath.Abs(args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return usageErr("%s is not a directory", args[0])
				}
				problems = agents.Check(dir)
			} else {
				set, err := loadProfiles(g)
				if err != nil {
					return err
				}
				for _, d := range set.Dirs() {
					problems = append(problems, agents.Check(d)...)
				}
			}
			for _, p := range problems {
				fmt.Println(p.String())
			}
			if len(problems) > 0 {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("%d problem(s) found", len(problems))}
			}
			fmt.Println("no problems")
			return nil
		},
	})
	return cmd
}

func newTrustCmd(g *globals) *cobra.Command {
	var list bool
	var revoke string
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a project root so its .ink/agents and .claude/agents profiles load (--list, --revoke DIR)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			t, err := agents.LoadTrust(home)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			switch {
			case list:
				for _, r := range t.List() {
					fmt.Println(r)
				}
				return nil
			case revoke != "":
				if err := t.Revoke(revoke); err != nil {
					return usageErr("%v", err)
				}
				fmt.Printf("revoked trust in %s\n", revoke)
				return nil
			}
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			} else {
				cwd, err := g.workDir()
				if err != nil {
					return err
				}
				dir = agents.ProjectRoot(cwd)
			}
			if err := t.Add(dir); err != nil {
				return usageErr("%v", err)
			}
			fmt.Printf("trusted %s: its agent profiles now load\n", dir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list trusted project roots")
	cmd.Flags().StringVar(&revoke, "revoke", "", "stop trusting DIR")
	return cmd
}
