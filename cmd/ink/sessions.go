package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/session"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "List and show transcripts, with their children"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List the main sessions of this directory, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			cwd, err := g.workDir()
			if err != nil {
				return err
			}
			list, err := session.ListSessions(home, cwd)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				for _, s := range list {
					enc.Encode(map[string]any{"id": s.ID, "path": s.Path, "createdAt": s.CreatedAt, "modifiedAt": s.ModTime, "children": s.Children, "lastStatus": s.LastStatus, "prompt": s.FirstPrompt, "problem": s.Problem})
				}
				return nil
			}
			if len(list) == 0 {
				fmt.Printf("no sessions for %s\n", cwd)
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tCHILDREN\tLAST STATUS\tPROMPT")
			for _, s := range list {
				p := s.FirstPrompt
				if s.Problem != "" {
					p = "(" + s.Problem + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.ID, s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Children, dash(s.LastStatus), clipLine(p, 60))
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show a session's messages and children",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := inkHome()
			if err != nil {
				return err
			}
			cwd, err := g.workDir()
			if err != nil {
				return err
			}
			id := args[0]
			if !session.ValidID(id) {
				return usageErr("%q is not a session id (ids use only a-z, 0-9 and '-'); list them with `ink sessions ls`", id)
			}
			path := session.MainPath(home, cwd, id)
			if _, err := os.Lstat(path); err != nil {
				matches, _ := filepath.Glob(filepath.Join(home, "sessions", "*", id+".jsonl"))
				if len(matches) != 1 {
					return usageErr("no session %s; list them with `ink sessions ls`", id)
				}
				path = matches[0]
			}
			tr, err := session.Open(path)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			children, _ := session.ListChildren(path)
			if g.json {
				return json.NewEncoder(os.Stdout).Encode(map[string]any{"header": tr.Header, "path": path, "messages": tr.Messages, "attempts": tr.Attempts(), "children": children, "torn": tr.Torn})
			}
			fmt.Printf("session %s  %s\ncwd %s\ntranscript %s\n\n", tr.Header.ID, tr.Header.CreatedAt.Local().Format(time.RFC1123), tr.Header.Cwd, path)
			for _, m := range tr.Messages {
				printMessage(m)
			}
			if tr.Torn != nil {
				fmt.Printf("(the last line is torn: %s; it is repaired when the session is continued)\n", tr.Torn.Reason)
			}
			if len(children) > 0 {
				fmt.Println("\nchildren:")
				for _, c := range children {
					p := ""
					if c.Problem != "" {
						p = "  (" + c.Problem + ")"
					}
					fmt.Printf("  %s  %-10s %d attempt(s)  %s%s\n", dash(c.ID), dash(c.LastStatus), c.Attempts, dash(c.Agent), p)
				}
			}
			return nil
		},
	})
	return cmd
}

func printMessage(m model.Message) {
	switch m.Role {
	case model.RoleUser:
		fmt.Printf("user: %s\n", clipLine(m.Text(), 200))
	case model.RoleAssistant:
		if t := strings.TrimSpace(m.Text()); t != "" {
			fmt.Printf("assistant: %s\n", clipLine(t, 200))
		}
		for _, c := range m.ToolCalls {
			fmt.Printf("  → %s %s\n", c.Name, clipLine(string(c.Args), 120))
		}
	case model.RoleToolResult:
		for _, r := range m.Results {
			tag := "ok"
			if r.IsError {
				tag = "error"
			}
			fmt.Printf("  ← %s (%s) %s\n", r.ToolName, tag, clipLine(r.Content, 120))
		}
	}
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
